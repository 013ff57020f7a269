// Package outbox moves tasks from masters to workers and tells masters
// when they end. A pure decision step (Decide) turns the open tasks, the
// panes' views and what is in flight into actions; one goroutine executes
// them through the Pane seam, woken by events, with one timer for the slow
// cases.
package outbox
