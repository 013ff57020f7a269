package cicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/atomicfile"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// HistoryDir is where a pane keeps its conversation (see docs/requests-and-caching.md).
func HistoryDir(workspace string) string { return filepath.Join(workspace, ".cicy", "history") }

// Current is current.json: the full display history, no injected blocks.
type Current struct {
	AgentID        string        `json:"agent_id"`
	ConversationID string        `json:"conversation_id"`
	UpdatedAt      time.Time     `json:"updated_at"`
	Model          string        `json:"model"`
	Messages       []HistMessage `json:"messages"`
}

// HistMessage is a history message with its display id (1…N).
type HistMessage struct {
	ID      int          `json:"id"`
	Role    string       `json:"role"`
	Content []wire.Block `json:"content"`
}

// ToolCall is one tool call of a turn as reply.json shows it.
type ToolCall struct {
	Name   string          `json:"name"`
	Input  json.RawMessage `json:"input"`
	Result string          `json:"result"`
}

// Turn statuses in reply.json.
const (
	TurnWorking   = "working"
	TurnCompleted = "completed"
	TurnFailed    = "failed"
	TurnCancelled = "cancelled"
)

// Reply is reply.json: the current (or last) turn.
type Reply struct {
	TurnID         string     `json:"turn_id"`
	ConversationID string     `json:"conversation_id"`
	Status         string     `json:"status"`
	StartedAt      time.Time  `json:"started_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	Answer         string     `json:"answer"`
	ToolCalls      []ToolCall `json:"tool_calls"`
	Usage          wire.Usage `json:"usage"`
	// CallsRecorded: the turn records each tool call's start in the
	// journal before running it (toolRecord), so a call of its last
	// message with no record never started. Absent in a reply.json of an
	// older version, whose calls may all have started.
	CallsRecorded bool `json:"calls_recorded,omitempty"`
}

// UnmarshalJSON accepts content as a string or a list of blocks, as the
// Messages API does, so a hand-edited history in either form loads.
func (m *HistMessage) UnmarshalJSON(b []byte) error {
	var id struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(b, &id); err != nil {
		return err
	}
	var wm wire.Message
	if err := json.Unmarshal(b, &wm); err != nil {
		return err
	}
	*m = HistMessage{ID: id.ID, Role: wm.Role, Content: wm.Content}
	return nil
}

// fromHist strips display ids and cache marks, and drops empty messages.
func fromHist(h []HistMessage) []wire.Message {
	out := make([]wire.Message, 0, len(h))
	for _, m := range h {
		if len(m.Content) == 0 || (m.Role != wire.RoleUser && m.Role != wire.RoleAssistant) {
			continue
		}
		blocks := make([]wire.Block, len(m.Content))
		for i, b := range m.Content {
			b.CacheControl = nil
			blocks[i] = b
		}
		out = append(out, wire.Message{Role: m.Role, Content: blocks})
	}
	return out
}

// writeScrubbed is writeJSONAtomic with the secrets scrub knows taken
// out of the JSON.
func writeScrubbed(path string, v any, scrub func([]byte) []byte) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	if scrub != nil {
		b = scrub(b)
	}
	return atomicfile.WritePrivate(path, append(b, '\n'))
}

// writeJSONAtomic writes v as indented JSON: a temp file in the same
// folder, fsync, rename, so a crash leaves the old file or the new one.
func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return atomicfile.WritePrivate(path, append(b, '\n'))
}

func readJSON(path string, v any) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s is not valid JSON: %w", path, err)
	}
	return true, nil
}

// archive copies current.json to current.<unix-ts>.json (only current.json:
// reply.json, the last turn, is not archived); a second archive within the
// same second gets a suffix, and no current.json is nothing to archive.
func archive(dir string, now time.Time) error {
	src := filepath.Join(dir, "current.json")
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	dst := filepath.Join(dir, "current."+ts+".json")
	for i := 1; ; i++ {
		if _, err := os.Stat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dst = filepath.Join(dir, fmt.Sprintf("current.%s-%d.json", ts, i))
	}
	return copyFile(src, dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("archive %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("archive to %s: %w", dst, err)
	}
	_, cerr := io.Copy(out, in)
	serr := out.Sync()
	if err := errors.Join(cerr, serr, out.Close()); err != nil {
		return fmt.Errorf("archive to %s: %w", dst, err)
	}
	return nil
}

// interruptedResult fills a tool_use whose result never arrived.
const interruptedResult = "(tool result unavailable: the turn was interrupted before the result arrived)"

// balance gives every tool_use a tool_result in the message right after
// it, inserting synthetic error results where one is missing (a crash or a
// cut turn), so the history is always a valid request.
func balance(h []wire.Message) []wire.Message {
	out := make([]wire.Message, 0, len(h)+1)
	for i := 0; i < len(h); i++ {
		out = append(out, h[i])
		uses := h[i].ToolUses()
		if h[i].Role != wire.RoleAssistant || len(uses) == 0 {
			continue
		}
		have := map[string]bool{}
		next := i + 1
		if next < len(h) && h[next].Role == wire.RoleUser {
			for _, b := range h[next].Content {
				if b.Type == wire.TypeToolResult {
					have[b.ToolUseID] = true
				}
			}
		}
		var missing []wire.Block
		for _, u := range uses {
			if !have[u.ID] {
				missing = append(missing, wire.ToolResult(u.ID, interruptedResult, true))
			}
		}
		if len(missing) == 0 {
			continue
		}
		if next < len(h) && h[next].Role == wire.RoleUser {
			merged := wire.Message{Role: wire.RoleUser, Content: append(missing, h[next].Content...)}
			out = append(out, merged)
			i++
		} else {
			out = append(out, wire.Message{Role: wire.RoleUser, Content: missing})
		}
	}
	return out
}

// journalName is the file a turn appends its rounds' messages to between
// two full writes of current.json: a round then writes (and fsyncs) a few
// kilobytes instead of the whole history. The turn's end writes
// current.json in full and removes the journal; a restore after a crash
// applies what the journal holds.
const journalName = "current.journal"

// historyWriter writes current.json for one turn. History messages are
// never changed once appended (within a turn), so each is encoded once and
// its bytes reused: a round costs the encoding of what it added, not of
// the whole history.
type historyWriter struct {
	dir, agentID, convID, model string
	enc                         [][]byte // JSON of hist[i] as a wire.Message (no display id)
	written                     int      // messages on disk (current.json + journal)
	// recs are the tool records (toolRecord) of the calls of the last
	// message on disk, in order: a full write puts them back in the new
	// journal. The turn drops them once the calls' results are in the
	// history.
	recs [][]byte
	// fault, if set, fails a write before it is made (tests: a full disk).
	fault func(path string) error
	// scrub, if set, takes the secrets out of a message's JSON.
	scrub func([]byte) []byte
}

// check is the fault hook's error for a write of path (nil without one).
func (w *historyWriter) check(path string) error { return faultAt(w.fault, path) }

func (w *historyWriter) encode(hist []wire.Message) error {
	if len(w.enc) > len(hist) {
		w.enc = w.enc[:0]
	}
	for i := len(w.enc); i < len(hist); i++ {
		b, err := json.Marshal(hist[i])
		if err != nil {
			return fmt.Errorf("encode message %d: %w", i+1, err)
		}
		if w.scrub != nil {
			b = w.scrub(b)
		}
		w.enc = append(w.enc, b)
	}
	return nil
}

// appendRound puts the messages added since the last write on disk: in the
// journal when current.json already holds the rest, else in full.
func (w *historyWriter) appendRound(hist []wire.Message, now time.Time) error {
	if w.written == 0 || len(hist) < w.written {
		return w.save(hist, now)
	}
	if err := w.encode(hist); err != nil {
		return err
	}
	var buf []byte
	for i := w.written; i < len(w.enc); i++ {
		buf = append(appendWithID(buf, i+1, w.enc[i]), '\n')
	}
	if err := w.appendJournal(buf); err != nil {
		return err
	}
	w.written = len(hist)
	return nil
}

// appendJournal appends buf (whole lines) to the journal and syncs it.
func (w *historyWriter) appendJournal(buf []byte) error {
	path := filepath.Join(w.dir, journalName)
	if err := w.check(path); err != nil {
		return fmt.Errorf("write the history journal: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open the history journal: %w", err)
	}
	_, werr := f.Write(buf)
	serr := f.Sync()
	if err := errors.Join(werr, serr, f.Close()); err != nil {
		// The journal may end in a torn line now: the next write is a
		// full one, which removes it.
		w.written = 0
		return fmt.Errorf("write the history journal: %w", err)
	}
	return nil
}

// record puts tool records on disk (synced) after hist, which is written
// first when it is not all on disk: once record returns nil, a restore
// after a crash knows them.
func (w *historyWriter) record(hist []wire.Message, now time.Time, recs ...[]byte) error {
	w.recs = append(w.recs, recs...)
	if w.written == 0 || w.written != len(hist) {
		return w.save(hist, now) // writes every record again
	}
	var buf []byte
	for _, r := range recs {
		buf = append(append(buf, r...), '\n')
	}
	return w.appendJournal(buf)
}

// save writes current.json in full and drops the journal it now covers.
func (w *historyWriter) save(hist []wire.Message, now time.Time) error {
	if err := w.encode(hist); err != nil {
		return err
	}
	head, err := json.Marshal(Current{AgentID: w.agentID, ConversationID: w.convID, UpdatedAt: now, Model: w.model})
	if err != nil {
		return fmt.Errorf("encode current.json: %w", err)
	}
	// head ends with "messages":null}; splice the encoded messages in.
	head = bytes.TrimSuffix(head, []byte("null}"))
	size := len(head) + 3
	for _, b := range w.enc {
		size += len(b) + 16
	}
	buf := make([]byte, 0, size)
	buf = append(append(buf, head...), '[')
	for i, b := range w.enc {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendWithID(buf, i+1, b)
	}
	buf = append(buf, "]}\n"...)
	path := filepath.Join(w.dir, "current.json")
	if err := w.check(path); err != nil {
		return err
	}
	if err := atomicfile.WritePrivate(path, buf); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(w.dir, journalName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the history journal: %w", err)
	}
	w.written = len(hist)
	if len(w.recs) > 0 {
		var buf []byte
		for _, r := range w.recs {
			buf = append(append(buf, r...), '\n')
		}
		if err := w.appendJournal(buf); err != nil {
			return err
		}
	}
	return nil
}

// appendWithID appends a message's JSON ({"role":…}) as current.json holds
// it, with its display id first ({"id":N,"role":…}).
func appendWithID(buf []byte, id int, msg []byte) []byte {
	buf = append(buf, `{"id":`...)
	buf = strconv.AppendInt(buf, int64(id), 10)
	buf = append(buf, ',')
	return append(buf, msg[1:]...)
}

// toolRecord is a journal line about a call of the history's last
// message, written (and synced) before the call runs (Started) and once
// its result is known, while its round's other calls run (Result): a
// restore after a crash then runs no call that had started, and gives
// each one that had started but has no result a result saying so. A
// record has no "id", so an older reader of the journal skips it.
type toolRecord struct {
	Started string      `json:"tool_started,omitempty"` // the tool_use id
	Result  *wire.Block `json:"tool_result,omitempty"`  // its tool_result block
}

func startedRecord(id string) []byte {
	b, _ := json.Marshal(toolRecord{Started: id})
	return b
}

func resultRecord(res wire.Block) ([]byte, error) {
	b, err := json.Marshal(toolRecord{Result: &res})
	if err != nil {
		return nil, fmt.Errorf("encode the result of tool call %s: %w", res.ToolUseID, err)
	}
	return b, nil
}

// toolRecords are the calls of the history's last message that the
// journal says started, and the results it holds.
type toolRecords struct {
	started map[string]bool
	results map[string]wire.Block
	lines   [][]byte // the records as written, in order
}

// applyJournal adds the journal's messages that continue msgs (ids in
// sequence); a line torn by a crash ends it. It reports whether any was
// added, and the tool records that follow the last message.
func applyJournal(dir string, msgs []HistMessage) ([]HistMessage, bool, toolRecords) {
	recs := toolRecords{started: map[string]bool{}, results: map[string]wire.Block{}}
	b, err := os.ReadFile(filepath.Join(dir, journalName))
	if err != nil {
		return msgs, false, recs
	}
	added := false
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(line) == 0 {
			break
		}
		var r toolRecord
		if json.Unmarshal(line, &r) == nil && (r.Started != "" || r.Result != nil) {
			if r.Started != "" {
				recs.started[r.Started] = true
			}
			if r.Result != nil {
				recs.results[r.Result.ToolUseID] = *r.Result
			}
			recs.lines = append(recs.lines, line)
			continue
		}
		var m HistMessage
		if json.Unmarshal(line, &m) != nil {
			break
		}
		if m.ID == len(msgs)+1 {
			msgs = append(msgs, m)
			added = true
			// Records are about the calls of the last message.
			recs = toolRecords{started: map[string]bool{}, results: map[string]wire.Block{}}
		}
	}
	return msgs, added, recs
}
