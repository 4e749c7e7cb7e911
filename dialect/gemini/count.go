package gemini

import (
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/caddy-air/caddy-air/dialect"
)

// Count is Google AI Studio's countTokens: it takes the whole
// generateContentRequest, its model named.
var Count = dialect.Counter{Body: countBody, Path: CountPath, Read: ReadCount, Error: Codec{}.DecodeError}

// countBody is the countTokens body of a generateContent body for model.
func countBody(generate []byte, model string) ([]byte, error) {
	gb, err := sjson.SetBytes(generate, "model", "models/"+model)
	if err != nil {
		return nil, err
	}
	return sjson.SetRawBytes([]byte("{}"), "generateContentRequest", gb)
}

// CountPath is the countTokens path of a model's generateContent path.
func CountPath(path string) (string, bool) {
	p, ok := strings.CutSuffix(path, ":generateContent")
	return p + ":countTokens", ok
}

// ReadCount reads a countTokens answer's totalTokens.
func ReadCount(answer []byte) (int64, bool) {
	n := gjson.GetBytes(answer, "totalTokens")
	return n.Int(), n.Type == gjson.Number && n.Int() >= 0
}
