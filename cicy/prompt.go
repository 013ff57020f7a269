package cicy

import (
	"encoding/json"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// Prompt is everything one request is built from.
type Prompt struct {
	Model     string
	MaxTokens int
	PaneID    string
	TurnID    string
	System    string // the template's system.md
	Skills    string // installed-skills listing; "" when none
	Tools     []wire.Tool
	Role      string // AGENTS.md body; "" when none
	Memories  string // MEMORY.md; "" when none
	History   []wire.Message
	// Encoded, when set, holds the JSON of History[i] (see historyWriter);
	// the request then reuses those bytes for every message it does not
	// change, instead of encoding the history again.
	Encoded [][]byte
	// Final marks the last allowed round: tool_choice none and a note.
	Final bool
	// headMemories puts the memories in the system prompt instead of the
	// tail: the layout the tail injection is measured against (benchmark
	// only; every memory change then invalidates the whole cached prefix).
	headMemories bool
}

// Limits of the history window (see docs/requests-and-caching.md).
const (
	CompactThreshold = 300 // more messages than this: compactable
	CompactKeep      = 160 // messages /compact keeps verbatim
	HardCap          = 600 // a request carries at most this many
)

// finalNote tells the model on the last round that its tool budget is spent.
const finalNote = "Your tool budget for this turn is spent: do not call any tool. Answer now with the most complete answer you can give, or say how far you got."

// Assemble builds the request of one round (docs/requests-and-caching.md): system blocks
// with a breakpoint on the last; tools in the given order with a breakpoint
// on the last (absent when none); the history window with the <role> block
// first in the first user message, a breakpoint on the last block of the
// last history message, and the <memories> block (and on the final round
// the budget note) after it in the last user message. Nothing of what it
// adds is written back to the history, which it does not modify.
func Assemble(p Prompt) *wire.Request {
	req := &wire.Request{Model: p.Model, MaxTokens: p.MaxTokens, PaneID: p.PaneID, TurnID: p.TurnID}
	req.System = []wire.Block{wire.Text(p.System)}
	if p.headMemories && p.Memories != "" {
		req.System[0].Text += "\n\n<memories>\n" + p.Memories + "\n</memories>"
	}
	if p.Skills != "" {
		req.System = append(req.System, wire.Text(p.Skills))
	}
	req.System[len(req.System)-1].CacheControl = wire.Ephemeral()
	if len(p.Tools) > 0 {
		req.Tools = append([]wire.Tool(nil), p.Tools...)
		req.Tools[len(req.Tools)-1].CacheControl = wire.Ephemeral()
		if p.Final {
			req.ToolChoice = &wire.ToolChoice{Type: "none"}
		}
	}
	start, msgs, cut := window(p.History)
	if len(msgs) == 0 {
		return req
	}
	// The messages are shared with the history; those that change get
	// their own content slices.
	msgs = append([]wire.Message(nil), msgs...)
	changed := map[int]bool{}
	for _, i := range cut {
		changed[i] = true
	}
	if p.Role != "" {
		if i := firstUser(msgs); i >= 0 {
			role := wire.Text("<role>\n" + p.Role + "\n</role>")
			msgs[i].Content = append([]wire.Block{role}, msgs[i].Content...)
			changed[i] = true
		}
	}
	n := len(msgs) - 1
	last := append([]wire.Block(nil), msgs[n].Content...)
	last[len(last)-1].CacheControl = wire.Ephemeral()
	if msgs[n].Role == wire.RoleUser {
		if p.Memories != "" && !p.headMemories {
			last = append(last, wire.Text("<memories>\n"+p.Memories+"\n</memories>"))
		}
		if p.Final {
			last = append(last, wire.Text(finalNote))
		}
	}
	msgs[n].Content = last
	changed[n] = true
	req.Messages = msgs
	if start >= 0 && len(p.Encoded) > 0 {
		req.RawMessages = rawMessages(msgs, start, p.Encoded, changed)
	}
	return req
}

// rawMessages gives each request message its encoding: the cached bytes of
// a history message the request does not change, a fresh encoding
// otherwise.
func rawMessages(msgs []wire.Message, start int, enc [][]byte, changed map[int]bool) [][]byte {
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		if h := start + i; !changed[i] && h < len(enc) {
			out[i] = enc[h]
			continue
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil
		}
		out[i] = b
	}
	return out
}

// windowStep is how far the window's start moves at a time once the
// history is above HardCap: the start stays put for windowStep/2 rounds of
// a tool loop, so the cached prefix of the request is rewritten once per
// step instead of on every round. A window holds more than
// HardCap-windowStep messages.
const windowStep = 100

// cutResultsMarker stands for the tool results at the start of a window
// whose calls were cut off with the older messages.
const cutResultsMarker = "[results of tool calls from before the start of this window]"

// Window is the part of the history a request carries: empty messages
// dropped, and above HardCap only the most recent messages (see window).
func Window(h []wire.Message) []wire.Message {
	_, w, _ := window(h)
	return w
}

// window is Window, the index in h where it starts (-1 when empty messages
// were dropped: the indices then no longer line up) and the indices in the
// window of the messages it changed. Above HardCap the window starts at a
// multiple of windowStep (counted from the oldest message), the first one
// that leaves at most HardCap messages, moved forward to the next user
// message; tool results in it whose call was cut off are replaced by a
// short marker, so no result loses its call. It never holds fewer than
// HardCap-windowStep-1 messages when the history has more.
func window(h []wire.Message) (int, []wire.Message, []int) {
	start, out := 0, h
	for _, m := range h {
		if len(m.Content) == 0 {
			start, out = -1, nil
			for _, m := range h {
				if len(m.Content) > 0 {
					out = append(out, m)
				}
			}
			break
		}
	}
	if len(out) <= HardCap {
		return start, out, nil
	}
	least := len(out) - HardCap
	cut := nextUser(out, (least+windowStep-1)/windowStep*windowStep)
	if cut < 0 {
		cut = nextUser(out, least)
	}
	if cut < 0 {
		cut = least
	}
	if start >= 0 {
		start += cut
	}
	w, changed := dropOrphanResults(out[cut:])
	return start, w, changed
}

// nextUser is the index of the first user message of msgs at or after i,
// or -1.
func nextUser(msgs []wire.Message, i int) int {
	for ; i < len(msgs); i++ {
		if msgs[i].Role == wire.RoleUser {
			return i
		}
	}
	return -1
}

// dropOrphanResults replaces the tool results of msgs whose tool_use is not
// in an earlier message of msgs by cutResultsMarker (once per message). The
// messages it changes are copies; msgs itself is not modified.
func dropOrphanResults(msgs []wire.Message) ([]wire.Message, []int) {
	calls := map[string]bool{}
	var changed []int
	for i, m := range msgs {
		orphan := false
		for _, b := range m.Content {
			if b.Type == wire.TypeToolResult && !calls[b.ToolUseID] {
				orphan = true
			}
		}
		if orphan {
			if changed == nil {
				msgs = append([]wire.Message(nil), msgs...)
			}
			var content []wire.Block
			marked := false
			for _, b := range m.Content {
				if b.Type != wire.TypeToolResult || calls[b.ToolUseID] {
					content = append(content, b)
				} else if !marked {
					content = append(content, wire.Text(cutResultsMarker))
					marked = true
				}
			}
			msgs[i].Content = content
			changed = append(changed, i)
		}
		for _, b := range m.Content {
			if b.Type == wire.TypeToolUse {
				calls[b.ID] = true
			}
		}
	}
	return msgs, changed
}

func hasToolResult(m wire.Message) bool {
	for _, b := range m.Content {
		if b.Type == wire.TypeToolResult {
			return true
		}
	}
	return false
}

func firstUser(msgs []wire.Message) int {
	for i, m := range msgs {
		if m.Role == wire.RoleUser {
			return i
		}
	}
	return -1
}
