package mockprovider

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"hash/fnv"
	"image"
	"image/png"
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

const (
	// maxImageSide bounds the side of a generated image: requested sizes
	// are scaled down to fit, keeping the aspect ratio.
	maxImageSide = 64
	// maxRequestedSide bounds a side in the requested size.
	maxRequestedSide = 8192
)

// imageRequest is what the mock reads from an image generation request.
type imageRequest struct {
	mockFields
	model, prompt, quality string
	size                   string
	width, height          int
	n                      int
	b64                    bool
}

// parseImages reads an image generation request; msg is not empty (and
// param names the field) when it is invalid.
func (h *Handler) parseImages(body []byte) (req imageRequest, param, msg string) {
	if msg := h.bodyError(body, "We could not parse the JSON body of your request."); msg != "" {
		return req, "", msg
	}
	req.mockFields = h.defaultMockFields()
	req.model, req.n, req.size, req.quality = "dall-e-2", 1, "1024x1024", "auto"
	format := ""
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			req.model = v.String()
		case "prompt":
			req.prompt = v.String()
		case "n":
			if v.Type != gjson.Null {
				req.n = int(v.Int())
				if v.Type != gjson.Number || req.n < 1 || req.n > 10 {
					param, msg = "n", "Invalid 'n': expected an integer from 1 to 10."
				}
			}
		case "size":
			if v.Type != gjson.Null {
				req.size = v.String()
			}
		case "quality":
			if v.Str != "" {
				req.quality = v.Str
			}
		case "response_format":
			format = v.Str
		default:
			req.readMockField(k.Str, v)
		}
		return true
	})
	if msg != "" {
		return req, param, msg
	}
	if strings.TrimSpace(req.prompt) == "" {
		return req, "prompt", "Missing required parameter: 'prompt'."
	}
	if format != "" && format != "url" && format != "b64_json" {
		return req, "response_format", "Invalid 'response_format': expected 'url' or 'b64_json'."
	}
	var ok bool
	if req.width, req.height, ok = parseSize(req.size); !ok {
		return req, "size", "Invalid 'size': expected 'auto' or WIDTHxHEIGHT, each side from 1 to " + strconv.Itoa(maxRequestedSide) + "."
	}
	req.b64 = strings.HasPrefix(req.model, "gpt-image") || format == "b64_json"
	return req, "", ""
}

// parseSize parses "WxH" ("auto" is 1024x1024).
func parseSize(s string) (w, h int, ok bool) {
	if s == "auto" {
		return 1024, 1024, true
	}
	ws, hs, found := strings.Cut(s, "x")
	if !found {
		return 0, 0, false
	}
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if err1 != nil || err2 != nil || w < 1 || h < 1 || w > maxRequestedSide || h > maxRequestedSide {
		return 0, 0, false
	}
	return w, h, true
}

// scaledSize fits w×h into maxImageSide, keeping the aspect ratio.
func scaledSize(w, h int) (int, int) {
	if w <= maxImageSide && h <= maxImageSide {
		return w, h
	}
	if w >= h {
		return maxImageSide, max(h*maxImageSide/w, 1)
	}
	return max(w*maxImageSide/h, 1), maxImageSide
}

// imageSeed derives the pixels' seed from the prompt and the image index.
func imageSeed(prompt string, i int) uint64 {
	f := fnv.New64a()
	f.Write([]byte(prompt))
	f.Write([]byte{0, byte(i)})
	return f.Sum64()
}

// renderPNG draws the deterministic w×h picture of seed as a PNG.
func renderPNG(seed uint64, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r0, g0, b0 := byte(seed), byte(seed>>8), byte(seed>>16)
	for y := range h {
		row := img.Pix[y*img.Stride:]
		for x := range w {
			p := row[x*4 : x*4+4 : x*4+4]
			p[0] = r0 + byte(x*255/max(w-1, 1))
			p[1] = g0 + byte(y*255/max(h-1, 1))
			p[2] = b0 ^ byte((x*y)>>2)
			p[3] = 0xff
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	_ = enc.Encode(&buf, img)
	return buf.Bytes()
}

// imageFileName names the file of a picture, so that it can be rendered
// again from the name alone.
func imageFileName(seed uint64, w, h int) string {
	return "img-" + strconv.FormatUint(seed, 16) + "-" + strconv.Itoa(w) + "x" + strconv.Itoa(h) + ".png"
}

// parseImageFileName is the inverse of imageFileName.
func parseImageFileName(name string) (seed uint64, w, h int, ok bool) {
	rest, found := strings.CutPrefix(name, "img-")
	if !found {
		return 0, 0, 0, false
	}
	rest, found = strings.CutSuffix(rest, ".png")
	if !found {
		return 0, 0, 0, false
	}
	hex, size, found := strings.Cut(rest, "-")
	if !found {
		return 0, 0, 0, false
	}
	seed, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return 0, 0, 0, false
	}
	w, h, ok = parseSize(size)
	if !ok || w > maxImageSide || h > maxImageSide {
		return 0, 0, 0, false
	}
	return seed, w, h, true
}

// imageItem is one entry of the data array.
type imageItem struct {
	URL           string `json:"url,omitempty"`
	B64JSON       string `json:"b64_json,omitempty"`
	RevisedPrompt string `json:"revised_prompt,omitempty"`
}

// imageUsage is the token usage of GPT image models.
type imageUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		ImageTokens int64 `json:"image_tokens"`
		TextTokens  int64 `json:"text_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// imagesResponse is the body of an image generation answer.
type imagesResponse struct {
	Created      int64       `json:"created"`
	Background   string      `json:"background,omitempty"`
	Data         []imageItem `json:"data"`
	OutputFormat string      `json:"output_format,omitempty"`
	Quality      string      `json:"quality,omitempty"`
	Size         string      `json:"size,omitempty"`
	Usage        *imageUsage `json:"usage,omitempty"`
}

// imageOutputTokens is what GPT image models bill per image at quality,
// scaled by the area relative to 1024×1024.
func imageOutputTokens(quality string, w, h int) int64 {
	base := int64(1056)
	switch quality {
	case "low":
		base = 272
	case "high":
		base = 4160
	}
	return max(base*int64(w)*int64(h)/(1024*1024), 1)
}

// images answers POST /v1/images/generations.
func (h *Handler) images(w http.ResponseWriter, r *http.Request) {
	body, status, err := readBody(w, r)
	if err != nil {
		writeOpenAIError(w, status, "invalid_request_error", "", "", err.Error())
		return
	}
	req, param, msg := h.parseImages(body)
	if refusedOpenAI(w, req.status, param, msg) {
		return
	}
	if strings.Contains(strings.ToLower(req.prompt), "forbidden") {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "content_policy_violation", "",
			"Your request was rejected as a result of our safety system. Your prompt may contain text that is not allowed by our safety system.")
		return
	}
	sw, sh := scaledSize(req.width, req.height)
	resp := imagesResponse{Created: h.clock().Unix(), Data: make([]imageItem, req.n)}
	for i := range req.n {
		seed := imageSeed(req.prompt, i)
		if req.b64 {
			resp.Data[i].B64JSON = base64.StdEncoding.EncodeToString(renderPNG(seed, sw, sh))
		} else {
			resp.Data[i].URL = fileURL(r, h.cfg.OriginalPath, imageFileName(seed, sw, sh))
		}
		if !strings.HasPrefix(req.model, "gpt-image") {
			resp.Data[i].RevisedPrompt = req.prompt
		}
	}
	if strings.HasPrefix(req.model, "gpt-image") {
		resp.Background, resp.OutputFormat, resp.Quality, resp.Size = "opaque", "png", req.quality, req.size
		if req.quality == "auto" {
			resp.Quality = "medium"
		}
		if req.usage {
			u := &imageUsage{}
			u.InputTokensDetails.TextTokens = promptTokens(len(req.prompt), 0)
			u.InputTokens = u.InputTokensDetails.TextTokens
			u.OutputTokens = int64(req.n) * imageOutputTokens(resp.Quality, req.width, req.height)
			u.TotalTokens = u.InputTokens + u.OutputTokens
			resp.Usage = u
		}
	}
	out, _ := json.Marshal(resp)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	_, _ = w.Write(out)
}

// fileURL returns the absolute URL of the file name on this handler.
func fileURL(r *http.Request, originalPath func(*http.Request) string, name string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	path := r.URL.Path
	if originalPath != nil {
		if p := originalPath(r); p != "" {
			path = p
		}
	}
	var prefix string
	if i := strings.LastIndex(path, "/v1/"); i > 0 {
		prefix = path[:i]
	} else {
		prefix = strings.TrimSuffix(r.Header.Get("X-Forwarded-Prefix"), "/")
	}
	return scheme + "://" + r.Host + prefix + "/v1/files/" + name
}

// file answers GET /v1/files/<name>.png with the picture the name encodes.
func (h *Handler) file(w http.ResponseWriter, r *http.Request, name string) {
	seed, fw, fh, ok := parseImageFileName(name)
	if !ok {
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "file_not_found", "", "No such file: "+name)
		return
	}
	data := renderPNG(seed, fw, fh)
	hd := w.Header()
	hd.Set("Content-Type", "image/png")
	hd.Set("Content-Length", strconv.Itoa(len(data)))
	hd.Set("Cache-Control", "public, max-age=3600")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(data)
	}
}
