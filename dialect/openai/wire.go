package openai

import (
	"sync"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/dialect"
)

// Wire is the chat completions protocol (/v1/chat/completions) as the
// pass-through engine forwards it: its streams are chunks ended by [DONE],
// their usage asked for with stream_options.include_usage.
var Wire dialect.Wire = chatWire{}

// TranscriptWire is OpenAI's audio transcription and translation API as
// the pass-through engine forwards it: its streams are
// transcript.text.delta events ended by transcript.text.done, which
// carries the usage; its bodies are read as chat completions' are.
var TranscriptWire dialect.Wire = transcriptWire{}

// chatWire is Wire.
type chatWire struct{}

// Auth implements dialect.Wire.
func (chatWire) Auth() string { return "openai" }

// Operation implements dialect.Wire.
func (chatWire) Operation() string { return "chat" }

// ErrorShape implements dialect.Wire.
func (chatWire) ErrorShape() apierror.Shape { return apierror.ShapeOpenAI }

// StreamUsage implements dialect.Wire: a chat stream reports its usage
// only when stream_options.include_usage asks for it.
func (chatWire) StreamUsage() bool { return true }

// NewTap implements dialect.Wire.
func (chatWire) NewTap(cfg dialect.TapConfig) dialect.Tap {
	t := chatTaps.Get().(*chatTap)
	t.reset(cfg)
	return t
}

// transcriptWire is TranscriptWire.
type transcriptWire struct{}

// Auth implements dialect.Wire.
func (transcriptWire) Auth() string { return "openai" }

// Operation implements dialect.Wire.
func (transcriptWire) Operation() string { return "chat" }

// ErrorShape implements dialect.Wire.
func (transcriptWire) ErrorShape() apierror.Shape { return apierror.ShapeOpenAI }

// StreamUsage implements dialect.Wire: a transcription stream always
// ends with its usage.
func (transcriptWire) StreamUsage() bool { return false }

// NewTap implements dialect.Wire.
func (transcriptWire) NewTap(cfg dialect.TapConfig) dialect.Tap {
	t := transcriptTaps.Get().(*transcriptTap)
	t.reset(cfg)
	return t
}

// The taps' pools: a tap keeps its buffers (the chunk prefix and shape)
// from one answer to the next.
var (
	chatTaps       = sync.Pool{New: func() any { return new(chatTap) }}
	transcriptTaps = sync.Pool{New: func() any { return new(transcriptTap) }}
)

// Interface guards.
var (
	_ dialect.Tap = (*chatTap)(nil)
	_ dialect.Tap = (*transcriptTap)(nil)
)
