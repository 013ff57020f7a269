// Package provider holds the LLM providers of cicy panes behind one
// streaming call: anthropic (Messages API over SSE), openai (Chat
// Completions over SSE, translated at the edge) and script (the scripted
// model of docs/scripted-model.md, in process). Each takes a wire.Request and returns the
// assembled wire.Response, calling onEvent as text streams in.
//
// Transient failures (network, 408, 409, 429, 5xx, overloaded_error, a
// stream cut before its end) are retried with backoff that honours
// retry-after; 400/401/403/404 are not. Keys never appear in errors.
package provider
