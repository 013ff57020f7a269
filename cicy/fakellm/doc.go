// Package fakellm is a fake LLM HTTP server, for tests only: integration
// tests drive the real CLI agents (package cliagent) offline against
// it. No product code imports it (api/deps_test.go checks the cicy-agent
// binary). It serves, on one loopback port, the APIs of cicy/llmserve:
//
//   - the Anthropic Messages API: POST /v1/messages (streamed SSE and plain
//     JSON; the ?beta=true query Claude Code adds is ignored) and
//     POST /v1/messages/count_tokens;
//   - the OpenAI Chat Completions API: POST /v1/chat/completions (streamed,
//     with a usage chunk when stream_options.include_usage is set, and plain);
//   - the OpenAI Responses API: POST /v1/responses (streamed and plain);
//   - the Gemini API: POST /v1beta/models/<model>:generateContent,
//     :streamGenerateContent (?alt=sse) and :countTokens;
//   - GET /v1/models (one list that suits both OpenAI and Anthropic clients)
//     and HEAD / (a preflight some Claude Code versions send).
//
// The /v1 prefix is optional. Anything else is answered 404 with a JSON error.
// Every request is recorded (see [Server.Requests]) and, if a log writer is
// given, written to it as one JSON line. [Server.Truth] tells what the
// clients' work is at the moment: model requests in flight, tool calls
// answered whose results have not come back, a retry it asked for.
//
// The server's answers are those of an llmserve model steered by
// directives written in the prompt. They are read only from the last text
// part of the last user message, never from tool results or from system
// text:
//
//	[[delay=N]]         hold the turn N seconds (a float) after the first
//	                    stream event, before any content
//	[[reply=TEXT]]      answer TEXT instead of the default reply; \n in
//	                    TEXT is a line break, \\ a backslash
//	[[shell=CMD]]       answer a call of the shell tool the request offers
//	                    (Claude Bash, Codex exec_command or shell, opencode
//	                    bash, Qwen Code run_shell_command) that runs CMD
//	[[tool=NAME JSON]]  call tool NAME with the JSON object as its arguments;
//	                    a member of a Responses namespace tool (Codex offers
//	                    an MCP server's tools as one) is NAME
//	                    <namespace>__<tool>
//	[[cache=R/W]]       report R of the input tokens as read from the prompt
//	                    cache and W (Anthropic only; "/W" is optional) as
//	                    written to it, in each API's own usage fields
//	[[status=N]]        fail with HTTP status N (400-599) and an error body in
//	                    the API's own shape; a 401's message echoes the
//	                    x-api-key, x-goog-api-key and Authorization headers
//	                    it got, as some proxies do (to test that nothing
//	                    shows them)
//	[[retry=N]]         with [[status]]: a Retry-After of N seconds
//
// Tool calls carry only the argument keys the tool's schema declares. Once
// the conversation ends with a tool result the server answers
// "fake-llm saw the tool result: …" and ends the turn. Requests that offer
// no tools (title generators, summaries) never get delays or tool calls, and
// requests that ask for JSON-schema structured output get the smallest
// object that fits the schema. Token counts are about a token per four
// bytes of the request body.
//
// Typical use:
//
//	srv, err := fakellm.Start("127.0.0.1:0", logFile)
//	if err != nil { ... }
//	defer srv.Close()
//	// point the CLI at srv.URL (ANTHROPIC_BASE_URL=srv.URL, or srv.URL+"/v1"
//	// for OpenAI-style clients) and prompt it with "[[shell=echo hi]]".
package fakellm
