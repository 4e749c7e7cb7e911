package tasks

import (
	"encoding/json"
	"testing"
)

// TestImagesReply: the images of an OpenAI Images answer are cut out where
// openAIImages takes them, every other byte kept, and putting values back
// in the slots gives the answer with only those values replaced.
func TestImagesReply(t *testing.T) {
	answer := `{"created":7, "background":"opaque","data":[{"b64_json":"QUJD","revised_prompt":"a \"fox\""},` +
		`{"url":"https://up/x.png","b64_json":""},{"revised_prompt":"none"},{"url":"https://up/y.png"}],` +
		`"output_format":"png","quality":"high","size":"1024x1536","usage":{"input_tokens":10,"output_tokens":4160}}`
	out, err := openAIImages([]byte(answer), &charge{}, 200)
	if err != nil {
		t.Fatal(err)
	}
	rep := imagesReply([]byte(answer))
	if len(rep.Slots) != len(out.images) {
		t.Fatalf("%d slots for %d images", len(rep.Slots), len(out.images))
	}
	for i, s := range rep.Slots {
		if s.Media != i || s.B64 != (out.images[i].data != nil) {
			t.Errorf("slot %d: %+v, image %+v", i, s, out.images[i])
		}
	}
	fill := []string{`"REPL0"`, `"REPL1"`, `"REPL2"`}
	var got []byte
	prev := 0
	for i, s := range rep.Slots {
		got = append(got, rep.Body[prev:s.At]...)
		got = append(got, fill[i]...)
		prev = s.At
	}
	got = append(got, rep.Body[prev:]...)
	want := `{"created":7, "background":"opaque","data":[{"b64_json":"REPL0","revised_prompt":"a \"fox\""},` +
		`{"url":"REPL1","b64_json":""},{"revised_prompt":"none"},{"url":"REPL2"}],` +
		`"output_format":"png","quality":"high","size":"1024x1536","usage":{"input_tokens":10,"output_tokens":4160}}`
	if string(got) != want || !json.Valid(got) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
