package responses

import (
	"encoding/json"
	"errors"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect"
)

// decodeTools reads tools: function tools; a built-in tool (web_search,
// file_search, code_interpreter…), which only OpenAI runs, is recorded
// as unsupported under "tools.<type>".
func decodeTools(r *dialect.Request, v gjson.Result) error {
	if !v.IsArray() {
		return errors.New("tools: must be an array")
	}
	var err error
	v.ForEach(func(_, t gjson.Result) bool {
		typ := t.Get("type").Str
		if typ != "function" {
			r.Unsupport("tools." + typ)
			return true
		}
		name := t.Get("name").Str
		if name == "" {
			err = errors.New("tools: a function tool needs a name")
			return false
		}
		schema := json.RawMessage(t.Get("parameters").Raw)
		if len(schema) == 0 || t.Get("parameters").Type == gjson.Null {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		r.Tools = append(r.Tools, dialect.Tool{Name: name, Description: t.Get("description").Str, Schema: schema})
		return true
	})
	return err
}

// decodeToolChoice reads tool_choice: auto, none, required or a function.
func decodeToolChoice(r *dialect.Request, v gjson.Result) error {
	tc := r.ToolChoice
	if tc == nil {
		tc = &dialect.ToolChoice{}
		r.ToolChoice = tc
	}
	switch v.Str {
	case "auto":
		tc.Mode = dialect.ToolAuto
	case "none":
		tc.Mode = dialect.ToolNone
	case "required":
		tc.Mode = dialect.ToolAny
	default:
		if v.Get("type").Str != "function" {
			tc.Mode = dialect.ToolAuto
			r.Unsupport("tool_choice")
			return nil
		}
		name := v.Get("name").Str
		if name == "" {
			return errors.New("tool_choice: a function choice needs a name")
		}
		tc.Mode, tc.Name = dialect.ToolNamed, name
	}
	return nil
}
