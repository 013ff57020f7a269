package gateway

import (
	"net/http"
	"strings"

	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
)

// Side calls ("aux") are the requests a CLI makes besides its main loop:
// token counts, conversation titles, quota probes, compaction. They are
// recorded like any call but flagged with a kind, and they never mark a
// pane busy. The count_tokens and /responses/compact routes are aux by
// route; the rest is recognised by each CLI agent's fingerprints, in its
// file of package cliagent. A client's own X-Cicy-Aux header (cicy panes
// send it) names the kind directly.

// auxKind is the aux kind of a request, "" for a main-loop call.
func auxKind(h http.Header, r *request) string {
	if k := strings.TrimSpace(h.Get("X-Cicy-Aux")); k != "" {
		return k
	}
	return cliagent.AuxKind(&cliagent.Fingerprint{System: r.systemTexts(), LastUser: strings.TrimSpace(r.lastUserText()),
		MaxTokens: int(r.MaxTokens), Header: h})
}
