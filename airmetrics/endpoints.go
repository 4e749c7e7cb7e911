package airmetrics

import "strings"

// Endpoints, the values of air_requests_total's endpoint label: the API
// a client called. They tell apart what one operation covers (a chat on
// Chat Completions, Messages or Responses).
const (
	EndpointChatCompletions = "chat_completions"
	EndpointMessages        = "messages"
	EndpointResponses       = "responses"
	EndpointEmbeddings      = "embeddings"
	EndpointSpeech          = "speech"
	EndpointRerank          = "rerank"
	EndpointTranscriptions  = "transcriptions"
	EndpointTranslations    = "translations"
	EndpointPassthrough     = "passthrough"
	EndpointCountTokens     = "count_tokens"
	EndpointImages          = "images"
	EndpointTasks           = "tasks"
	EndpointModels          = "models"
	EndpointOther           = "other"
)

// Operations, the values of gen_ai_operation_name (and of
// air_requests_total's operation label), as the OpenTelemetry GenAI
// semantic conventions name them; count_tokens, list_models and other
// are the gateway's own, for what the conventions do not name.
const (
	OperationChat            = "chat"
	OperationEmbeddings      = "embeddings"
	OperationGenerateContent = "generate_content"
	OperationCountTokens     = "count_tokens"
	OperationListModels      = "list_models"
	OperationOther           = "other"
)

// Endpoint returns the endpoint label of name: a ledger endpoint name
// (chat, messages, responses, embeddings, count_tokens, tasks, images) or
// a request path (/v1/chat/completions, /v1/tasks/{id}…). Anything else
// is EndpointOther, so the label's values stay a fixed set.
func Endpoint(name string) string {
	switch name {
	case "chat", EndpointChatCompletions:
		return EndpointChatCompletions
	case EndpointMessages, EndpointResponses, EndpointEmbeddings, EndpointCountTokens, EndpointImages, EndpointTasks, EndpointModels,
		EndpointSpeech, EndpointRerank, EndpointTranscriptions, EndpointTranslations,
		EndpointPassthrough:
		return name
	}
	if _, ok := registered.names[name]; ok {
		return name
	}
	p, ok := strings.CutPrefix(name, "/v1/")
	if !ok {
		return EndpointOther
	}
	p = strings.TrimSuffix(p, "/")
	if label, ok := registered.paths[p]; ok {
		return label
	}
	switch {
	case p == "chat/completions":
		return EndpointChatCompletions
	case p == "messages":
		return EndpointMessages
	case p == "messages/count_tokens":
		return EndpointCountTokens
	case p == "responses" || strings.HasPrefix(p, "responses/"):
		return EndpointResponses
	case p == "embeddings":
		return EndpointEmbeddings
	case p == "audio/speech":
		return EndpointSpeech
	case p == "rerank":
		return EndpointRerank
	case p == "audio/transcriptions":
		return EndpointTranscriptions
	case p == "audio/translations":
		return EndpointTranslations
	case p == "images/generations":
		return EndpointImages
	case p == "tasks" || strings.HasPrefix(p, "tasks/"):
		return EndpointTasks
	case p == "models" || strings.HasPrefix(p, "models/"):
		return EndpointModels
	}
	return EndpointOther
}

// registered are the endpoints RegisterEndpoint added: written only by
// init functions, read after.
var registered = struct {
	names map[string]struct{}
	paths map[string]string // path below /v1/ → label
}{map[string]struct{}{}, map[string]string{}}

// RegisterEndpoint adds the endpoint label name, which is also its ledger
// endpoint name, for requests to /v1/<path>, and makes it the endpoint
// whose series the routes of models of kind resolve in advance ("" for
// none). It is called by the init function of the module that serves the
// endpoint, so that the label's values stay a fixed set, and panics on a
// label or path known already.
func RegisterEndpoint(name, path, kind string) {
	if Endpoint(name) != EndpointOther || Endpoint("/v1/"+path) != EndpointOther {
		panic("airmetrics: endpoint " + name + " registered twice")
	}
	registered.names[name] = struct{}{}
	registered.paths[path] = name
	if kind != "" {
		kindEndpoints[kind] = name
	}
}

// Operation returns the GenAI operation of an endpoint label.
func Operation(endpoint string) string {
	switch endpoint {
	case EndpointChatCompletions, EndpointMessages, EndpointResponses:
		return OperationChat
	case EndpointEmbeddings:
		return OperationEmbeddings
	case EndpointImages, EndpointTasks:
		return OperationGenerateContent
	case EndpointCountTokens:
		return OperationCountTokens
	case EndpointModels:
		return OperationListModels
	}
	return OperationOther
}

// kindOperation returns the GenAI operation of a model kind (chat,
// messages, embedding, image, video): what its streams are counted
// under.
func kindOperation(kind string) string {
	switch kind {
	case "chat", "messages":
		return OperationChat
	case "embedding", "embeddings":
		return OperationEmbeddings
	case "image", "video":
		return OperationGenerateContent
	}
	return OperationOther
}
