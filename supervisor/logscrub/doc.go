// Package logscrub keeps the supervisor's secrets out of what leaves it:
// the log (Formatter wraps the log's formatter) and every answer of the
// API (Answers wraps its handler: a task's result, a screen, an event of
// a stream), whatever a pane's program or an upstream printed.
//
// Both pass their text through the supervisor's one scrubber
// (New: the credentials of its environment, the panes'
// gateway tokens, the cluster secret), a provider.Scrubber. It is a
// package of its own so that the log's setup in cmd/cicy-agent and the
// API's wrapping are read and tested apart from the daemon; it imports
// none of it.
package logscrub
