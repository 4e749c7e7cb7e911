package tasks

import (
	"unsafe"

	"github.com/tidwall/gjson"
)

// ImagesReply is an OpenAI Images answer to pass to the client of
// /v1/images/generations as the provider sent it, but for the images:
// Body is the answer with the values of its data[].url and
// data[].b64_json cut out, and Slots say where each goes back, replaced
// by the task's re-hosted media. Every other member (created,
// revised_prompt, usage, size, quality, output_format, background, …)
// passes byte for byte.
type ImagesReply struct {
	// Body is the answer without the values of Slots.
	Body []byte
	// Slots are the cut values, in order.
	Slots []ReplySlot
}

// ReplySlot is a value cut out of an ImagesReply's Body.
type ReplySlot struct {
	// At is where the value goes in Body.
	At int
	// Media is the index of the task's image that replaces it: its
	// re-hosted URL, or its base64 when B64 is set.
	Media int
	// B64 is set for a data[].b64_json value, clear for a data[].url one.
	B64 bool
}

// imagesReply cuts the images out of an OpenAI Images answer, in the order
// openAIImages takes them: an element's b64_json when not empty, else its
// url when not empty. The answer was read by openAIImages, which found at
// least one image.
func imagesReply(data []byte) *ImagesReply {
	type cut struct {
		at, end int
		b64     bool
	}
	var cuts []cut
	// data is not modified while the view lives.
	root := gjson.Parse(unsafe.String(unsafe.SliceData(data), len(data)))
	for _, d := range root.Get("data").Array() {
		for _, k := range []string{"b64_json", "url"} {
			v := d.Get(k)
			if v.Type != gjson.String || v.Str == "" || v.Index <= 0 || v.Index+len(v.Raw) > len(data) {
				continue
			}
			cuts = append(cuts, cut{v.Index, v.Index + len(v.Raw), k == "b64_json"})
			break
		}
	}
	size := len(data)
	for _, c := range cuts {
		size -= c.end - c.at
	}
	rep := &ImagesReply{Body: make([]byte, 0, size), Slots: make([]ReplySlot, len(cuts))}
	prev := 0
	for i, c := range cuts {
		rep.Body = append(rep.Body, data[prev:c.at]...)
		rep.Slots[i] = ReplySlot{At: len(rep.Body), Media: i, B64: c.b64}
		prev = c.end
	}
	rep.Body = append(rep.Body, data[prev:]...)
	return rep
}
