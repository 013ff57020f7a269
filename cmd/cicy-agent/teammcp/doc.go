// Package teammcp is the MCP server (Model Context Protocol) that
// cicy-agent mcp runs for a CLI agent's master pane: the team tools a
// cicy master has (dispatch, workers, task_status, wait), each call sent
// to the supervisor, which answers as it would a cicy master. It is
// served over stdio by Transport, one JSON-RPC message a line, which
// answers a garbled or too long line with a parse error and reads on.
//
// It is a package of its own because it is a protocol server with its
// own wire rules, not the command line: cicy-agent mcp finds the pane
// and the home, this package serves them through the API it declares.
package teammcp
