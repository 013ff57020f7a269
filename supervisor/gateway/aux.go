package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Side calls ("aux") are the requests a CLI makes besides its main loop:
// token counts, conversation titles, quota probes, compaction. They are
// recorded like any call but flagged with a kind, and they never mark a
// pane busy. The count_tokens and /responses/compact routes are aux by
// route; the rest is recognised by the fingerprints below, one small table
// per CLI, checked in order; the first match wins. A client's own
// X-Cicy-Aux header (cicy panes send it) names the kind directly.

// auxRule is one fingerprint of a side call.
type auxRule struct {
	kind  string
	match func(f *fingerprint) bool
}

// fingerprint is what the rules look at, read once per request.
type fingerprint struct {
	system    []string // system prompt parts
	lastUser  string   // the newest user text, trimmed
	maxTokens int
	codex     codexTurnMeta
}

// claudeCodeAux are Claude Code's side calls. 2.1.332 was seen to send
// none (one request per turn, no count_tokens); the rules cover the quota
// probe (max_tokens 1, prompt "quota") and the topic / title prompts older
// and newer versions send with a small model.
var claudeCodeAux = []auxRule{
	{"quota", func(f *fingerprint) bool { return f.maxTokens == 1 && f.lastUser == "quota" }},
	{"title", systemStarts("Analyze if this message indicates a new conversation topic")},
	{"title", systemStarts("Summarize this coding conversation")},
	{"title", systemStarts("Generate a concise")},
}

// codexAux are Codex's side calls: the TUI's thread-title request, marked
// in x-codex-turn-metadata (thread_source "thread_title", or a
// request_kind other than "turn"), whose prompt starts
// "Generate a concise".
var codexAux = []auxRule{
	{"title", func(f *fingerprint) bool { return f.codex.ThreadSource == "thread_title" }},
	{"title", func(f *fingerprint) bool { return strings.HasPrefix(f.lastUser, "Generate a concise") }},
	{"compact", func(f *fingerprint) bool { return f.codex.RequestKind != "" && f.codex.RequestKind != "turn" }},
}

// opencodeAux are opencode's side calls: its title agent (system prompt
// "You are a title generator…", seen with every first prompt on either
// API) and, from opencode's prompt files (not seen on the wire here), its
// compaction and summary agents.
var opencodeAux = []auxRule{
	{"title", systemStarts("You are a title generator")},
	{"compact", systemStarts("You are a helpful AI assistant tasked with summarizing conversations")},
	{"summary", systemStarts("Summarize what was done in this conversation")},
}

// auxTables are all the tables, checked in this order.
var auxTables = [][]auxRule{claudeCodeAux, codexAux, opencodeAux}

// auxKind is the aux kind of a request, "" for a main-loop call.
func auxKind(h http.Header, r *request) string {
	if k := strings.TrimSpace(h.Get("X-Cicy-Aux")); k != "" {
		return k
	}
	f := &fingerprint{system: r.systemTexts(), lastUser: strings.TrimSpace(r.lastUserText()),
		maxTokens: r.MaxTokens, codex: codexMeta(h)}
	for _, table := range auxTables {
		for _, rule := range table {
			if rule.match(f) {
				return rule.kind
			}
		}
	}
	return ""
}

// systemStarts matches a request with a system part starting with prefix.
func systemStarts(prefix string) func(*fingerprint) bool {
	return func(f *fingerprint) bool {
		for _, t := range f.system {
			if strings.HasPrefix(strings.TrimSpace(t), prefix) {
				return true
			}
		}
		return false
	}
}

// codexTurnMeta is the part of Codex's x-codex-turn-metadata header the
// gateway reads.
type codexTurnMeta struct {
	ThreadSource string `json:"thread_source"`
	RequestKind  string `json:"request_kind"`
}

// codexMeta decodes x-codex-turn-metadata; absent or odd, it is empty.
func codexMeta(h http.Header) codexTurnMeta {
	var m codexTurnMeta
	if v := h.Get("X-Codex-Turn-Metadata"); v != "" {
		_ = json.Unmarshal([]byte(v), &m) // not JSON: no fingerprint
	}
	return m
}
