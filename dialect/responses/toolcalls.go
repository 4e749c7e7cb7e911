package responses

import (
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect/internal/usagejson"
	"strconv"
	"unsafe"

	"github.com/tidwall/gjson"
)

// ToolCalls counts the priced tool calls of an OpenAI Responses answer
// from its output items, which a stream shows twice (each
// response.output_item.done event, then the output of its final
// response): an item is counted once by its id, or by its position when
// it has none. web_search_call items are WebSearches, file_search_call
// items FileSearches, image_generation_call items ImageCalls, and the
// distinct containers (container_id) of code_interpreter_call items
// CodeSessions, an item without one counting as its own. The zero value
// is ready to use and allocates nothing until a tool call is seen.
type ToolCalls struct {
	// seen holds the keys of the items counted, and "c:"+container of the
	// containers.
	seen  map[string]struct{}
	calls billing.Usage
}

// Item counts the output item at position index of a response, item
// being its raw JSON. Items other than tool calls are ignored.
func (c *ToolCalls) Item(index int64, item []byte) {
	c.item(index, gjson.Parse(unsafe.String(unsafe.SliceData(item), len(item))))
}

// Output counts the items of a response's output array, raw JSON.
func (c *ToolCalls) Output(output []byte) {
	r := gjson.Parse(unsafe.String(unsafe.SliceData(output), len(output)))
	if !r.IsArray() {
		return
	}
	var i int64
	r.ForEach(func(_, item gjson.Result) bool {
		c.item(i, item)
		i++
		return true
	})
}

// item counts one output item.
func (c *ToolCalls) item(index int64, item gjson.Result) {
	if !item.IsObject() {
		return
	}
	var m [3]gjson.Result
	usagejson.Members(item, []string{"type", "id", "container_id"}, m[:])
	c.count(m[0].Str, index, m[1].Str, m[2].Str)
}

// Completed counts the tool call that a stream's
// response.<kind>.completed event ends (kind is web_search_call,
// file_search_call, image_generation_call or code_interpreter_call), by
// the event's item_id and output_index: an image's call is counted even
// when its output_item.done event, which carries the image, is too large
// to read.
func (c *ToolCalls) Completed(kind string, index int64, itemID string) {
	c.count(kind, index, itemID, "")
}

// count counts an item of type typ at index with id and container, once.
func (c *ToolCalls) count(typ string, index int64, id, container string) {
	var n *int64
	switch typ {
	case "web_search_call":
		n = &c.calls.WebSearches
	case "file_search_call":
		n = &c.calls.FileSearches
	case "image_generation_call":
		n = &c.calls.ImageCalls
	case "code_interpreter_call":
		n = &c.calls.CodeSessions
	default:
		return
	}
	key := "#" + strconv.FormatInt(index, 10)
	if id != "" {
		key = "i:" + id
	}
	if !c.mark(key) {
		return
	}
	if n == &c.calls.CodeSessions && container != "" && !c.mark("c:"+container) {
		return // a container already counted
	}
	*n++
}

// maxToolKeys bounds the keys a ToolCalls remembers: past it, an
// upstream's endless stream of tool items costs no more memory, and its
// further items are counted without being remembered.
const maxToolKeys = 1 << 16

// mark records key and reports whether it is new.
func (c *ToolCalls) mark(key string) bool {
	if _, ok := c.seen[key]; ok {
		return false
	}
	if len(c.seen) >= maxToolKeys {
		return true
	}
	if c.seen == nil {
		c.seen = map[string]struct{}{}
	}
	c.seen[key] = struct{}{}
	return true
}

// Apply returns u with its Responses tool call counts set to those
// counted, each bounded like a token count.
func (c *ToolCalls) Apply(u billing.Usage) billing.Usage {
	u.WebSearches = min(c.calls.WebSearches, billing.MaxTokenCount)
	u.FileSearches = min(c.calls.FileSearches, billing.MaxTokenCount)
	u.ImageCalls = min(c.calls.ImageCalls, billing.MaxTokenCount)
	u.CodeSessions = min(c.calls.CodeSessions, billing.MaxTokenCount)
	return u
}
