// Package cicy is the headless runtime of cicy panes: the turn loop, role
// templates, byte-stable prompt assembly with its cache breakpoints
// (docs/requests-and-caching.md), history on disk, /compact and /clear, and
// the memory loop. Each pane is one cicy.Agent running inside the
// supervisor.
//
// Its subpackages: wire (the Anthropic-shaped conversation types), provider
// (anthropic, openai and the scripted model), tools (shell and skill),
// memory (the long-term memory store), atomicfile (the one way a file is
// replaced), clip (shortening text on a rune boundary), liteconfig (the
// reading of lite-config.json that the runtime, the CLI agents and the
// supervisor share; it imports nothing of the runtime), and for tests only
// apitest and fakellm (a fake LLM server on supervisor/gateway/modelapi,
// which serves the model APIs and is no part of this runtime).
package cicy
