// Package gateway is the local AI gateway: an HTTP server on 127.0.0.1
// that the CLI agents (Claude Code, Codex, opencode, Qwen Code, pi, Gemini
// CLI) use as
// their model API.
// It serves
//
//   - Anthropic Messages: POST /v1/messages (Claude Code adds ?beta=true)
//     and POST /v1/messages/count_tokens;
//   - OpenAI Chat Completions: POST /v1/chat/completions;
//   - OpenAI Responses: POST /v1/responses (and /v1/responses/compact);
//   - Gemini: POST /v1beta/models/<model>:generateContent,
//     :streamGenerateContent and :countTokens, forwarded on the client's
//     own path (less any ?key=) to GOOGLE_GEMINI_BASE_URL with the real
//     GEMINI_API_KEY (or GOOGLE_API_KEY) as x-goog-api-key;
//
// streaming and not; the /v1 prefix is optional. Each request must carry a
// pane's token as its key (x-api-key, Authorization: Bearer, or Gemini's
// x-goog-api-key or ?key=); the
// gateway maps it to the pane ([Panes]), drops it, and forwards the request
// to the configured upstream with the real credential and an X-Cicy-Pane
// header. A request without a known token is refused 401 in the API's own
// error shape.
//
// The pane tokens are made here too (NewToken: 192 random bits after
// TokenPrefix) and kept only as their hash (HashToken); Tokens is the
// registry of those hashes, one a pane, that the supervisor answers
// [Panes] from.
//
// Responses pass through unchanged: headers (less hop-by-hop ones) and body
// bytes as the upstream sent them, an event stream flushed event by event.
// The one change: a streaming Chat Completions request that did not ask for
// usage gets stream_options.include_usage added upstream, and the
// usage-only chunk this adds is dropped before it reaches the client.
//
// Usage is read from what the upstream reports (Anthropic message_start and
// message_delta, the Chat Completions usage chunk, the Responses
// response.completed event, Gemini's usageMetadata, or a plain body's
// usage) and handed to
// [Recorder] as one [Call] per request, in Anthropic's additive shape:
// input tokens exclude cache reads. Side calls of the CLIs (token counting,
// title generation, quota probes) are flagged with an aux kind; see aux.go
// for the fingerprints. The gateway retries nothing: an upstream error goes
// to the client as the upstream sent it, or as a 502 when there is no
// upstream response at all.
//
// With the scripted model (CICY_PROVIDER=script) the upstream is
// [NewScriptTransport]: the script rules answer in every API, offline,
// encoded by its subpackage modelapi. The gateway's own errors take their
// bodies from modelapi's one table ([modelapi.WriteError]).
//
// The gateway knows no CLI agent by name: of supervisor/cliagent it uses
// only lookups over every registered agent (cliagent.AuxKind, which side
// call a request is by each agent's fingerprints) and cliagent.ShellQuote.
// What is one agent's stays in that agent's file of cliagent. The
// gateway depends on neither the daemon, the store nor the cicy runtime
// (api/deps_test.go checks it).
package gateway
