// Package cicy will hold the headless runtime of cicy panes: the LLM
// providers (Anthropic SSE, OpenAI, the scripted model), role templates,
// byte-stable prompt assembly with its cache breakpoints, the built-in
// tools, history on disk, /compact and /clear, and long-term memory
// (SPEC §1, §4, §5). It is built in the next issues; until then the
// supervisor answers `create --type cicy` with a sentence saying so.
package cicy
