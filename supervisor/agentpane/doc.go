// Package agentpane holds what a CLI agent pane's program is to the
// supervisor besides its signals (package signals): where the real
// program is (PATH, else CICY_CLI_DIR, where `make clis` installs the
// pinned versions), how it is started from a pane's config (its seeded
// configuration, gateway token, team MCP server and guidance file), and
// how its dialogs are answered (Answer: approve, deny or option N typed as
// the keys package cliagent gives, a text reply, a restart, its screen).
//
// What answering needs of the supervisor's registry — the pane, its lock,
// a restart — it asks through the small interfaces it declares (Registry,
// Pane, Program, Record); the supervisor keeps the thin wiring.
package agentpane
