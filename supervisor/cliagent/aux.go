package cliagent

import (
	"net/http"
	"strings"
)

// Side calls ("aux") are the requests a CLI makes besides its main loop:
// token counts, conversation titles, quota probes, compaction. The
// gateway records them like any call but flags them with a kind, and they
// never mark a pane busy. Each agent's file lists its own fingerprints;
// the gateway checks every agent's, in the registry's order, and the first
// match wins.

// Fingerprint is what a side call is recognised by, read once per request.
type Fingerprint struct {
	System    []string    // the system prompt's parts
	LastUser  string      // the newest user text, trimmed
	MaxTokens int         // the request's max_tokens
	Header    http.Header // the request's headers
}

// AuxRule is one fingerprint of a side call: the kind it gets, and the
// test.
type AuxRule struct {
	Kind  string
	Match func(f *Fingerprint) bool
}

// AuxKind is the side-call kind f has by the registered agents'
// fingerprints; "" for a main-loop call.
func AuxKind(f *Fingerprint) string {
	for _, name := range Names() {
		for _, rule := range kinds[name].aux {
			if rule.Match(f) {
				return rule.Kind
			}
		}
	}
	return ""
}

// systemStarts matches a request with a system part starting with prefix.
func systemStarts(prefix string) func(*Fingerprint) bool {
	return func(f *Fingerprint) bool {
		for _, t := range f.System {
			if strings.HasPrefix(strings.TrimSpace(t), prefix) {
				return true
			}
		}
		return false
	}
}
