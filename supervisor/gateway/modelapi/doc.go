// Package modelapi is the model side of the model wire APIs: it serves
// them — Anthropic Messages, OpenAI Chat Completions, OpenAI Responses,
// Gemini generateContent, streamed and not — with a [Model]'s answers,
// parsing each request and encoding each answer as the real APIs do. It is
// no part of the cicy runtime (the cicy panes are clients of these APIs,
// not servers of them): it lives beside the gateway, whose scripted model
// it serves (supervisor/gateway's NewScriptTransport) and whose error
// bodies it writes; the test fake cicy/fakellm is served by it too. Its
// name says what it holds: the model APIs, as a model answers them. It
// imports nothing of the module but cicy/wire (the conversation types).
// A [Handler] answers:
//
//   - the Anthropic Messages API: POST /v1/messages (streamed SSE and plain
//     JSON; the ?beta=true query Claude Code adds is ignored) and
//     POST /v1/messages/count_tokens;
//   - the OpenAI Chat Completions API: POST /v1/chat/completions (streamed,
//     with a usage chunk when stream_options.include_usage is set, and plain);
//   - the OpenAI Responses API: POST /v1/responses (streamed and plain);
//   - the Gemini API: POST /v1beta/models/<model>:generateContent, its
//     :streamGenerateContent (an event stream of whole responses, data
//     only; ?alt=sse and ?key= are ignored) and :countTokens;
//   - GET /v1/models (one list that suits both OpenAI and Anthropic clients)
//     and HEAD / (a preflight some Claude Code versions send).
//
// The /v1 prefix and a trailing slash are optional ([Route]). Anything else
// is answered 404, in the error shape of the route's API (Anthropic's for
// an unknown route); a body that cannot be read or is not JSON 400, one too
// large 413, one in a Content-Encoding other than gzip or deflate 415.
//
// A model sees each request as a [Query]: the request in the Messages
// API's shape, whatever API it came in, with its headers and raw body, and
// readings of it the wire formats make hard to get at — the newest prompt,
// the tool result the conversation ends with, the structured-output schema
// it asks for, the tools it offers, and the arguments of a call of one of
// them, the shell tool's in that tool's own shape ([Query.ShellCall]). The
// model answers text and any number of tool calls, with a stop reason and
// usage (a *wire.Response), or an error; the handler encodes the answer in
// the client's API, streamed or not, with fresh ids, and an error, a
// *wire.APIError with its own status and type, in the API's error shape.
// A model may hold its answer back ([Query.Hold]), and one that is also an
// [Observer] is told when each request begins and ends, which tool calls
// reached the client under which ids, and which errors asked for a retry.
// The handler records nothing itself.
//
// [WriteError] is the one table of error bodies: the error type (and
// OpenAI code, or Google status) the real APIs give each HTTP status, in
// each API's shape.
// The handler's own errors and the gateway's use it.
package modelapi
