package notifytest

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Telegram is a fake Telegram Bot API for one bot (its token): URL is the
// API's base. sendMessage is recorded and answered with increasing
// message ids; getUpdates long-polls the updates Press and Reply queue,
// honouring offset and timeout; answerCallbackQuery is recorded. Any
// other token is answered 401 Unauthorized, as the real API does.
type Telegram struct {
	URL   string
	Token string

	srv    *httptest.Server
	closed chan struct{}

	mu       sync.Mutex
	changed  chan struct{}
	updates  []map[string]any // queued, each with its update_id
	nextUpd  int64
	nextMsg  int
	sent     []Message
	answers  []Answer
	offsets  []int64
	badToken int
}

// Message is one sendMessage the fake received.
type Message struct {
	ID          int // the message_id it answered
	Chat        string
	Text        string
	ParseMode   string
	ReplyMarkup string   // the reply_markup JSON as sent
	Buttons     []Button // its inline keyboard, row after row
	ReplyTo     int      // reply_parameters.message_id
}

// Button is one inline keyboard button.
type Button struct {
	Text string `json:"text"`
	Data string `json:"callback_data"`
}

// Answer is one answerCallbackQuery the fake received.
type Answer struct {
	CallbackID string
	Text       string
}

// NewTelegram starts a fake Bot API for the bot with this token.
func NewTelegram(t testing.TB, token string) *Telegram {
	g := &Telegram{Token: token, closed: make(chan struct{}), changed: make(chan struct{}), nextUpd: 100, nextMsg: 1}
	g.srv = newServer(t, http.HandlerFunc(g.serve), g.closed)
	g.URL = g.srv.URL
	return g
}

func (g *Telegram) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		tgReply(w, http.StatusNotFound, map[string]any{"ok": false, "error_code": 404, "description": "Not Found"})
		return
	}
	if token != g.Token {
		g.mu.Lock()
		g.badToken++
		g.mu.Unlock()
		tgReply(w, http.StatusUnauthorized, map[string]any{"ok": false, "error_code": 401, "description": "Unauthorized"})
		return
	}
	p, err := params(r)
	if err != nil {
		tgReply(w, http.StatusBadRequest, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: " + err.Error()})
		return
	}
	switch method {
	case "sendMessage":
		g.sendMessage(w, p)
	case "getUpdates":
		g.getUpdates(w, r, p)
	case "answerCallbackQuery":
		g.mu.Lock()
		g.answers = append(g.answers, Answer{CallbackID: p["callback_query_id"], Text: p["text"]})
		g.signal()
		g.mu.Unlock()
		tgReply(w, http.StatusOK, map[string]any{"ok": true, "result": true})
	default:
		tgReply(w, http.StatusNotFound, map[string]any{"ok": false, "error_code": 404, "description": "Not Found: method not found"})
	}
}

// params reads a Bot API call's parameters: multipart or urlencoded
// form, or a JSON object (values other than strings kept as JSON).
func params(r *http.Request) (map[string]string, error) {
	p := map[string]string{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var m map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			return nil, err
		}
		for k, v := range m {
			var s string
			if json.Unmarshal(v, &s) == nil {
				p[k] = s
			} else {
				p[k] = string(v)
			}
		}
		return p, nil
	case "multipart/form-data":
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			return nil, err
		}
	default:
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
	}
	for k, v := range r.Form {
		if len(v) > 0 {
			p[k] = v[0]
		}
	}
	return p, nil
}

func tgReply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// signal wakes whoever waits on a change (g.mu held).
func (g *Telegram) signal() {
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *Telegram) sendMessage(w http.ResponseWriter, p map[string]string) {
	chat, err := strconv.ParseInt(p["chat_id"], 10, 64)
	if err != nil || p["text"] == "" {
		tgReply(w, http.StatusBadRequest, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: chat_id and text are required"})
		return
	}
	m := Message{Chat: p["chat_id"], Text: p["text"], ParseMode: p["parse_mode"], ReplyMarkup: p["reply_markup"]}
	if m.ReplyMarkup != "" {
		var kb struct {
			InlineKeyboard [][]Button `json:"inline_keyboard"`
		}
		if err := json.Unmarshal([]byte(m.ReplyMarkup), &kb); err != nil {
			tgReply(w, http.StatusBadRequest, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: can't parse reply keyboard markup JSON object"})
			return
		}
		for _, row := range kb.InlineKeyboard {
			m.Buttons = append(m.Buttons, row...)
		}
	}
	if rp := p["reply_parameters"]; rp != "" {
		var v struct {
			MessageID int `json:"message_id"`
		}
		_ = json.Unmarshal([]byte(rp), &v)
		m.ReplyTo = v.MessageID
	}
	g.mu.Lock()
	m.ID = g.nextMsg
	g.nextMsg++
	g.sent = append(g.sent, m)
	g.signal()
	g.mu.Unlock()
	tgReply(w, http.StatusOK, map[string]any{"ok": true, "result": map[string]any{
		"message_id": m.ID, "date": time.Now().Unix(), "text": m.Text,
		"chat": map[string]any{"id": chat, "type": "private"},
	}})
}

// getUpdates answers the queued updates from offset on (forgetting those
// before it, as the API does), waiting up to timeout seconds for one.
func (g *Telegram) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]string) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	wait, _ := strconv.Atoi(p["timeout"])
	deadline := time.NewTimer(time.Duration(wait) * time.Second)
	defer deadline.Stop()
	g.mu.Lock()
	g.offsets = append(g.offsets, offset)
	g.mu.Unlock()
	for {
		g.mu.Lock()
		kept := g.updates[:0]
		for _, u := range g.updates {
			if u["update_id"].(int64) >= offset {
				kept = append(kept, u)
			}
		}
		g.updates = kept
		out, changed := append([]map[string]any{}, kept...), g.changed
		g.mu.Unlock()
		if len(out) > 0 {
			tgReply(w, http.StatusOK, map[string]any{"ok": true, "result": out})
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			tgReply(w, http.StatusOK, map[string]any{"ok": true, "result": out})
			return
		case <-r.Context().Done():
			return
		case <-g.closed:
			return
		}
	}
}

// queue adds an update (its id given here) and wakes a waiting poll.
func (g *Telegram) queue(kind string, v map[string]any) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := g.nextUpd
	g.nextUpd++
	g.updates = append(g.updates, map[string]any{"update_id": id, kind: v})
	g.signal()
	return id
}

func user(from string) map[string]any {
	id := int64(4242)
	if n, err := strconv.ParseInt(from, 10, 64); err == nil {
		return map[string]any{"id": n, "is_bot": false, "first_name": "Fake"}
	}
	return map[string]any{"id": id, "is_bot": false, "first_name": "Fake", "username": from}
}

// sentText is the text of the message sent with this id ("" if none).
func (g *Telegram) sentText(id int) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, m := range g.sent {
		if m.ID == id {
			return m.Text
		}
	}
	return ""
}

// Press queues a button press in chat by from (a username, or a user id
// in digits) on message messageID carrying data; it returns the press's
// callback id (which answerCallbackQuery names).
func (g *Telegram) Press(chat int64, from, data string, messageID int) string {
	cb := fmt.Sprintf("cb%d", time.Now().UnixNano())
	g.queue("callback_query", map[string]any{
		"id": cb, "from": user(from), "chat_instance": "1", "data": data,
		"message": map[string]any{"message_id": messageID, "date": time.Now().Unix(), "text": g.sentText(messageID),
			"chat": map[string]any{"id": chat, "type": "private"}},
	})
	return cb
}

// Reply queues a text message in chat by from; when replyToText is not
// "", it replies to a message with that text (as a reply to a
// notification carries the notification).
func (g *Telegram) Reply(chat int64, from, text, replyToText string) {
	g.mu.Lock()
	id := g.nextMsg
	g.nextMsg++
	g.mu.Unlock()
	m := map[string]any{"message_id": id, "date": time.Now().Unix(), "text": text, "from": user(from),
		"chat": map[string]any{"id": chat, "type": "private"}}
	if replyToText != "" {
		m["reply_to_message"] = map[string]any{"message_id": id - 1, "date": time.Now().Unix(), "text": replyToText,
			"chat": map[string]any{"id": chat, "type": "private"}}
	}
	g.queue("message", m)
}

// Sent are the messages sent so far, in order.
func (g *Telegram) Sent() []Message {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Message(nil), g.sent...)
}

// Answers are the presses answered so far, in order.
func (g *Telegram) Answers() []Answer {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Answer(nil), g.answers...)
}

// Offsets are the offsets getUpdates was called with, in order.
func (g *Telegram) Offsets() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int64(nil), g.offsets...)
}

// Unauthorized is how many calls named another token.
func (g *Telegram) Unauthorized() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.badToken
}

// WaitSent returns the first message sent whose text matches re, failing
// the test if none is within timeout.
func (g *Telegram) WaitSent(t testing.TB, re string, timeout time.Duration) Message {
	t.Helper()
	rx := regexp.MustCompile(re)
	var found *Message
	g.waitFor(t, timeout, "a message matching "+re, func() bool {
		for _, m := range g.sent {
			if rx.MatchString(m.Text) {
				found = &m
				return true
			}
		}
		return false
	})
	return *found
}

// WaitAnswers returns the answers once there are at least n, failing the
// test if they do not come within timeout.
func (g *Telegram) WaitAnswers(t testing.TB, n int, timeout time.Duration) []Answer {
	t.Helper()
	g.waitFor(t, timeout, fmt.Sprintf("%d answered presses", n), func() bool { return len(g.answers) >= n })
	return g.Answers()
}

// waitFor waits until ok (called with g.mu held) or fails the test.
func (g *Telegram) waitFor(t testing.TB, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		g.mu.Lock()
		done, changed := ok(), g.changed
		g.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no %s within %s", what, timeout)
		}
	}
}
