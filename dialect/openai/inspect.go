package openai

import (
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/internal/reqscan"
)

// InspectChat validates an OpenAI chat completions request body and returns
// what the gateway needs from it, reading the body once (see package
// dialect/internal/reqscan). Only the documented constraints are enforced;
// unknown fields pass. A member the gateway reads (model, messages, stream,
// stream_options and its include_usage, max_tokens…, and in a message its
// content and tool calls) that is repeated in its object is rejected: the
// gateway and the upstream could otherwise read different values (e.g. bill
// one model and run another, or bill without the usage the client switched
// off). A body nested deeper than maxDepth levels is rejected, whatever
// else it holds; zero means jsonlimit.DefaultMaxDepth.
func InspectChat(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	return reqscan.InspectChat(body, maxDepth)
}

// InspectEmbeddings validates an OpenAI embeddings request body: a JSON
// object, nested at most maxDepth levels (zero means
// jsonlimit.DefaultMaxDepth), with one non-empty string model and an
// input. The size of input estimates the prompt; nothing else is read, so
// encoding_format and the other fields pass untouched.
func InspectEmbeddings(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	return reqscan.InspectEmbeddings(body, maxDepth)
}

// InspectModerations validates an OpenAI moderations request body as
// InspectEmbeddings does: a model and an input (a string, an array of
// strings, or an array of text and image parts), whose size estimates the
// prompt.
func InspectModerations(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	return reqscan.InspectModerations(body, maxDepth)
}

// InspectSpeech validates an OpenAI speech request body (POST
// /v1/audio/speech): a JSON object, nested at most maxDepth levels, with
// one non-empty string model, one non-empty string input and, optionally,
// one string response_format. Its characters (runes) bill a character
// price and its bytes estimate the prompt tokens. stream_format "sse" is
// refused: the gateway forwards audio bytes, not speech events. Other
// fields (voice, speed, instructions) pass untouched; each member read
// may appear once.
func InspectSpeech(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	return reqscan.InspectSpeech(body, maxDepth)
}

// InspectTranscription validates an OpenAI transcription or translation
// request (POST /v1/audio/transcriptions, /v1/audio/translations): a
// multipart/form-data body, of the boundary contentType names, with one
// file part (with a file name) and one non-empty model field. It reads
// response_format (default json) and stream, and the file's duration when
// it is WAV or MP3 (dialect.Inspected.AudioMillis), which bills a request whose
// answer reports no usage. Each part it reads may appear once, so that
// the gateway and the provider read the same request; other fields
// (language, prompt, temperature, timestamp_granularities[]…) pass
// untouched. The parts are split at the RFC 2046 delimiters, as every
// multipart reader splits them.
func InspectTranscription(contentType string, body []byte) (dialect.Inspected, *apierror.Error) {
	return reqscan.InspectTranscription(contentType, body)
}

// PrepareMultipart returns body with its model field's value replaced by
// model (the body itself when model is "" or the same).
func PrepareMultipart(body []byte, in dialect.Inspected, model string) []byte {
	return reqscan.PrepareMultipart(body, in, model)
}
