// Package api is the wire contract between the supervisor and its
// clients: the HTTP API's request and response documents, the error
// document and its kinds, the team event stream's events, the attach
// stream's frames, the team status model that the supervisor and the
// stream's subscribers build alike, and Client, which speaks all this
// over a home's socket.
//
// It imports none of the daemon (supervisor, pane, the cicy runtime,
// the store), so the CLI's client commands and the dashboard build on
// the API alone. Documents gain fields, never rename them (see
// docs/http-api.md).
package api
