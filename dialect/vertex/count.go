package vertex

import (
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/gemini"
)

// Count is Vertex AI's countTokens: it takes the contents, system
// instruction and tools of a generateContent request, the model in its
// URL.
var Count = dialect.Counter{Body: countBody, Path: gemini.CountPath, Read: gemini.ReadCount, Error: Codec{}.DecodeError}

// countBody is the countTokens body of a generateContent body.
func countBody(generate []byte, _ string) ([]byte, error) {
	cb := []byte("{}")
	var err error
	for _, f := range []string{"contents", "systemInstruction", "tools"} {
		if v := gjson.GetBytes(generate, f); v.Exists() && err == nil {
			cb, err = sjson.SetRawBytes(cb, f, []byte(v.Raw))
		}
	}
	return cb, err
}
