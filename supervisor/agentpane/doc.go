// Package agentpane holds what a CLI agent pane's program is to the
// supervisor besides its signals (package signals): where the real
// program is (PATH, else CICY_CLI_DIR, where `make clis` installs the
// pinned versions), how it is started from a pane's config (its seeded
// configuration, gateway token, team MCP server and guidance file), and
// how its dialogs are answered (Answer: approve, deny or option N typed as
// the keys package cliagent gives, a text reply, a restart, its screen).
//
// It holds too the environment a terminal pane's program gets (Env: a
// CLI agent's or a shell's, without the provider credentials and the
// upstream URLs), and what becomes of text typed into a CLI agent (Agent):
// a task typed at its idle prompt (Prompt, Deliver) and followed until its
// turn ends (Delivery: taken up by its prompt-submit hook, a model request
// or a busy screen; Enter sent again while its composer still holds the
// text, the task typed once more when the agent dropped the keys; its
// result from package signals' Verdict, else its transcript), and text a
// person sends resubmitted the same way (Resubmit). Of the pane's
// terminal it needs only a Term (its status, its screen, its keyboard).
//
// What answering needs of the supervisor's registry — the pane, its lock,
// a restart — it asks through the small interfaces it declares (Registry,
// Pane, Program, Record); the supervisor keeps the thin wiring.
package agentpane
