// Package teamtools holds the team tools a master leads its workers with:
// dispatch, workers, task_status, diff and merge — a cicy master's tool
// group, run in process by its runtime (cicy.TeamTools) — and wait
// besides for a CLI master, which reaches them all through the API and
// `cicy-agent mcp`. Each tool answers with a text and whether it is a
// refusal, the same for both kinds of master.
//
// It knows the supervisor only through the small interfaces it declares:
// Team (the panes and the tasks), Outbox (the wait's hold on the 🔔
// lines) and Work (the workers' git work), and never imports it.
package teamtools
