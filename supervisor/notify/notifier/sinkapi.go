package notifier

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/notify"
	"github.com/cicy-ai/cicy-agent/topology"
)

// The notification API: the sinks (add, list, remove, test) and the
// mutes. A sink's secret comes in the request (read by the client from a
// file) and is kept in the home, 0600, or is the name of a variable of
// the supervisor's environment; it never leaves in an answer.

// Routes mounts the notification API on mux; decode reads a request's
// body and respond answers (the core's, so these routes answer as every
// other does). On a nil *Notifier they refuse: notifications are not
// available with the store.
func (n *Notifier) Routes(mux *http.ServeMux, decode func(*http.Request, any) error, respond func(http.ResponseWriter, any, error)) {
	mux.HandleFunc("GET /api/notify/sinks", func(w http.ResponseWriter, r *http.Request) {
		out, err := n.Sinks(r.Context())
		respond(w, out, err)
	})
	mux.HandleFunc("POST /api/notify/sinks", posted(decode, respond, n.AddSink))
	mux.HandleFunc("DELETE /api/notify/sinks/{name}", removed(respond, "name", n.RemoveSink))
	mux.HandleFunc("POST /api/notify/sinks/{name}/test", func(w http.ResponseWriter, r *http.Request) {
		out, err := n.TestSink(r.Context(), r.PathValue("name"))
		respond(w, out, err)
	})
	mux.HandleFunc("GET /api/notify/mutes", func(w http.ResponseWriter, r *http.Request) {
		out, err := n.Mutes(r.Context())
		respond(w, out, err)
	})
	mux.HandleFunc("POST /api/notify/mutes", posted(decode, respond, n.Mute))
	mux.HandleFunc("DELETE /api/notify/mutes/{target}", removed(respond, "target", n.Unmute))
}

// posted is a route that reads a Req from the request's body and answers
// what do returns for it.
func posted[Req, Out any](decode func(*http.Request, any) error, respond func(http.ResponseWriter, any, error), do func(context.Context, Req) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := decode(r, &req); err != nil {
			respond(w, nil, err)
			return
		}
		out, err := do(r.Context(), req)
		respond(w, out, err)
	}
}

// removed is a route that removes what the path's param names and answers
// 204 No Content.
func removed(respond func(http.ResponseWriter, any, error), param string, do func(context.Context, string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := do(r.Context(), r.PathValue(param)); err != nil {
			respond(w, nil, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// ready refuses the API of a home without notifications.
func (n *Notifier) ready() error {
	if n == nil {
		return api.Failedf("%v", errNoNotify)
	}
	return nil
}

// Sinks lists the sinks, their secrets masked, with what they did.
func (n *Notifier) Sinks(ctx context.Context) ([]api.NotifySink, error) {
	if err := n.ready(); err != nil {
		return nil, err
	}
	rows, err := n.store.NotifySinks(ctx)
	if err != nil {
		return nil, err
	}
	states := n.States(ctx)
	out := make([]api.NotifySink, 0, len(rows))
	for _, r := range rows {
		out = append(out, n.sinkInfo(r, states))
	}
	return out, nil
}

// sinkInfo is a sink as the API shows it.
func (n *Notifier) sinkInfo(r schema.NotifySink, states []topology.SinkState) api.NotifySink {
	info := api.NotifySink{SinkState: topology.SinkState{Name: r.Name, Type: r.Type}, URL: r.URL, Chat: r.Chat, Team: r.Team}
	if r.Events != "" {
		info.Events = strings.Split(r.Events, ",")
	}
	n.mu.Lock()
	run := n.runs[r.Name]
	n.mu.Unlock()
	secret := ""
	if run != nil {
		secret = run.sink.Secret
		info.URL = run.sink.MaskedURL()
	}
	switch {
	case r.SecretRef == "home":
		info.Secret = "stored " + notify.Mask(secret)
	case strings.HasPrefix(r.SecretRef, "env:"):
		info.Secret = "env " + strings.TrimPrefix(r.SecretRef, "env:") + " " + notify.Mask(secret)
	}
	info.Secret = strings.TrimSpace(info.Secret)
	for _, st := range states {
		if st.Name == r.Name {
			info.SinkState = st
		}
	}
	return info
}

// AddSink checks and adds a sink (a team's replaces its own of that
// name), its secret kept 0600 in the home.
func (n *Notifier) AddSink(ctx context.Context, req api.NotifyAddRequest) (api.NotifySink, error) {
	if err := n.ready(); err != nil {
		return api.NotifySink{}, err
	}
	sink, err := n.sinkOf(req)
	if err != nil {
		return api.NotifySink{}, err
	}
	row := schema.NotifySink{Name: sink.Name, Type: sink.Type, URL: req.URL, Chat: sink.Chat, Events: strings.Join(sink.Events, ","), Team: req.Team, CreatedAt: schema.Now()}
	if sink.Type == notify.TypeTelegram {
		row.URL = sink.WithDefaults().URL
	}
	switch {
	case req.SecretEnv != "":
		row.SecretRef = "env:" + req.SecretEnv
	case sink.Secret != "":
		row.SecretRef = "home"
		if err := writeSecret(n.secretFile(sink.Name), sink.Secret); err != nil {
			return api.NotifySink{}, err
		}
	}
	if req.Team != "" {
		err = n.store.PutNotifySink(ctx, row)
	} else {
		err = n.store.AddNotifySink(ctx, row)
	}
	if errors.Is(err, schema.ErrExists) {
		return api.NotifySink{}, api.Usagef("there is a sink named %s already ('cicy-agent notify rm %s' removes it)", sink.Name, sink.Name)
	}
	if err != nil {
		return api.NotifySink{}, err
	}
	if sink.Type == notify.TypeTelegram {
		// This node listens to the chat's answers (one listener per bot).
		_ = n.store.SetSetting(ctx, pollerKey(sink.Name), n.node)
		_ = n.store.SetSetting(ctx, offsetKey(sink.Name), "0")
	}
	if err := n.reload(ctx); err != nil {
		return api.NotifySink{}, err
	}
	n.scanNow() // what needs you now is told to it too
	n.hub.HomeChanged()
	return n.sinkInfo(row, n.States(ctx)), nil
}

// sinkOf is the sink a request adds, its secret read and all checked.
func (n *Notifier) sinkOf(req api.NotifyAddRequest) (notify.Sink, error) {
	if req.Secret != "" && req.SecretEnv != "" {
		return notify.Sink{}, api.Usagef("give the secret in a file or a variable, not both")
	}
	sink := notify.Sink{Name: req.Name, Type: req.Type, URL: req.URL, Chat: req.Chat, Events: req.Events, Secret: strings.TrimSpace(req.Secret)}
	if req.SecretEnv != "" {
		if !validEnvName(req.SecretEnv) {
			return sink, api.Usagef("%q is not a variable name", req.SecretEnv)
		}
		sink.Secret = strings.TrimSpace(n.cfg.Getenv(req.SecretEnv))
		if sink.Secret == "" {
			return sink, api.Usagef("the variable %s is not set in the supervisor's environment (set it where the supervisor starts, e.g. the service's service.env)", req.SecretEnv)
		}
	}
	if sink.Type == notify.TypeSlack {
		if sink.URL != "" {
			return sink, api.Usagef("a Slack webhook's URL is its secret: put it in a file (--secret-file) or a variable (--secret-env), not --url")
		}
		sink.URL = sink.Secret
	}
	if topology.SinkNeedsSecret(sink.Type) && sink.Secret == "" {
		return sink, api.Usagef("a %s sink needs a secret: --secret-file FILE (readable by you only) or --secret-env NAME (a variable of the supervisor's environment)", sink.Type)
	}
	if err := sink.Validate(); err != nil {
		return sink, api.Usagef("%v", err)
	}
	return sink, nil
}

// validEnvName reports whether name can be an environment variable's.
func validEnvName(name string) bool {
	for i, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return name != ""
}

// writeSecret keeps a secret in a file only its owner reads.
func writeSecret(path, secret string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("keep the sink's secret: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("keep the sink's secret: %w", err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("keep the sink's secret: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("keep the sink's secret: %w", err)
	}
	return nil
}

// RemoveSink removes a sink, its secret and its unsent messages.
func (n *Notifier) RemoveSink(ctx context.Context, name string) error {
	if err := n.ready(); err != nil {
		return err
	}
	if err := n.store.DeleteNotifySink(ctx, name); errors.Is(err, schema.ErrNotFound) {
		return &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("no sink %s (see 'cicy-agent notify ls')", name)}
	} else if err != nil {
		return err
	}
	_ = os.Remove(n.secretFile(name))
	if err := n.reload(ctx); err != nil {
		return err
	}
	n.hub.HomeChanged()
	return nil
}

// TestSink sends a sample to a sink, now, and returns its answer.
func (n *Notifier) TestSink(ctx context.Context, name string) (api.NotifyTestResult, error) {
	if err := n.ready(); err != nil {
		return api.NotifyTestResult{}, err
	}
	n.mu.Lock()
	r, ok := n.runs[name]
	n.mu.Unlock()
	if !ok {
		return api.NotifyTestResult{}, &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("no sink %s (see 'cicy-agent notify ls')", name)}
	}
	if r.missing != "" {
		return api.NotifyTestResult{}, api.Failedf("sink %s cannot send from here: %s", name, r.missing)
	}
	ev := notify.Event{ID: newEventID(), Event: notify.EventTest, Kind: notify.EventTest, Text: "a test from cicy-agent: this sink works", Resolve: "cicy-agent notify ls", At: time.Now()}
	res, err := n.send.Send(ctx, r.sink, ev)
	out := api.NotifyTestResult{Sink: name, Status: res.Status, Answer: n.scrub(res.Body)}
	if err != nil {
		out.Error = n.scrub(err.Error())
	}
	return out, nil
}

// Mutes lists the mutes in force.
func (n *Notifier) Mutes(ctx context.Context) ([]api.NotifyMute, error) {
	if err := n.ready(); err != nil {
		return nil, err
	}
	m, err := n.store.NotifyMutes(ctx)
	if err != nil {
		return nil, err
	}
	out := []api.NotifyMute{}
	now := time.Now()
	for target, until := range m {
		mu := api.NotifyMute{Target: target}
		if until != "" {
			t := schema.ParseTime(until)
			if !t.After(now) {
				continue
			}
			mu.Until = &t
		}
		out = append(out, mu)
	}
	slices.SortFunc(out, func(a, b api.NotifyMute) int { return strings.Compare(a.Target, b.Target) })
	return out, nil
}

// Mute mutes a pane (by id or title), a team (team:<name>) or
// everything (all).
func (n *Notifier) Mute(ctx context.Context, req api.NotifyMuteRequest) (api.NotifyMute, error) {
	if err := n.ready(); err != nil {
		return api.NotifyMute{}, err
	}
	target := req.Target
	switch {
	case target == "all":
	case strings.HasPrefix(target, api.TeamRef):
		if err := api.CheckTeamName(strings.TrimPrefix(target, api.TeamRef)); err != nil {
			return api.NotifyMute{}, api.Usagef("%v", err)
		}
	default:
		id, err := n.team.PaneID(target)
		if err != nil {
			return api.NotifyMute{}, err
		}
		target = id
	}
	if req.For < 0 {
		return api.NotifyMute{}, api.Usagef("--for must be positive")
	}
	out := api.NotifyMute{Target: target}
	until := ""
	if req.For > 0 {
		t := time.Now().Add(req.For)
		out.Until, until = &t, schema.FormatTime(t)
	}
	if err := n.store.SetNotifyMute(ctx, target, until); err != nil {
		return api.NotifyMute{}, err
	}
	return out, nil
}

// Unmute lifts a mute.
func (n *Notifier) Unmute(ctx context.Context, target string) error {
	if err := n.ready(); err != nil {
		return err
	}
	if id, err := n.team.PaneID(target); err == nil {
		target = id
	}
	if err := n.store.DeleteNotifyMute(ctx, target); errors.Is(err, schema.ErrNotFound) {
		return &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("%s is not muted (see 'cicy-agent notify mutes')", target)}
	} else if err != nil {
		return err
	}
	return nil
}

// Settings keys of a telegram sink: the node that listens to its chat,
// and the last update it handled.
func pollerKey(sink string) string { return "notify_poller/" + sink }
func offsetKey(sink string) string { return "notify_telegram_offset/" + sink }

// polls reports whether this node listens to a telegram sink's chat (the
// node that added it; the first to look when none did).
func (n *Notifier) polls(ctx context.Context, sink string) bool {
	v, ok, err := n.store.Setting(ctx, pollerKey(sink))
	if err != nil {
		return false
	}
	if !ok || v == "" {
		_ = n.store.SetSetting(ctx, pollerKey(sink), n.node)
		return true
	}
	return v == n.node
}

// listen long-polls a telegram sink's chat for answers until ctx ends.
func (n *Notifier) listen(ctx context.Context, s notify.Sink) {
	for ctx.Err() == nil {
		off := int64(0)
		if v, ok, err := n.store.Setting(ctx, offsetKey(s.Name)); err == nil && ok {
			off, _ = strconv.ParseInt(v, 10, 64)
		}
		err := n.send.Listen(ctx, s, off, func(ctx context.Context, u notify.Update) string {
			reply := n.press(ctx, s, u)
			if err := n.store.SetSetting(ctx, offsetKey(s.Name), strconv.FormatInt(u.ID, 10)); err != nil {
				n.log.WithError(err).Warn("Could not record the last Telegram update handled")
			}
			return reply
		}, func(err error) {
			n.log.WithField("sink", s.Name).Debug("Telegram: " + n.scrub(err.Error()))
		})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			n.log.WithField("sink", s.Name).Warn("Listening to Telegram: " + n.scrub(err.Error()))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(notifyRescan):
		}
	}
}

// press carries out a person's answer from a messenger, and says what
// happened (the reply the person sees).
func (n *Notifier) press(ctx context.Context, s notify.Sink, u notify.Update) string {
	log := n.log.WithFields(map[string]any{"sink": s.Name, "chat": u.Chat, "from": u.From})
	if u.Chat != s.Chat {
		if !n.refuseOnce(s.Name + "/" + u.Chat) {
			return "" // told within the minute: a flood is not answered
		}
		log.Warn("Telegram answer refused: not the sink's chat")
		return "refused: this chat is not the one this bot answers, nothing was done"
	}
	event, action := u.EventID, u.Action
	if u.CallbackID == "" && u.Text != "" {
		event, action = u.ReplyTo, "text"
		if event == "" {
			return "to answer, reply to the message of the question (nothing was done)"
		}
	}
	if action == "" || event == "" {
		log.Warn("Telegram answer refused: not a button of cicy-agent")
		return "refused: that is not a cicy-agent button, nothing was done"
	}
	need, err := n.store.OpenNeedByEvent(ctx, event)
	if errors.Is(err, schema.ErrNotFound) {
		return "refused: that question is no longer open (the pane moved on), nothing was done"
	}
	if err != nil {
		return "could not read the question: " + n.scrub(err.Error())
	}
	req := api.AnswerRequest{Action: action, By: "telegram:" + u.From, Via: "telegram", Event: event}
	if action == "text" {
		req.Text = u.Text
	}
	res, err := n.team.Answer(ctx, need.Pane, req)
	if err != nil {
		return "refused: " + n.scrub(err.Error())
	}
	if action == "screen" {
		return clipTail(res.Screen, 3500)
	}
	return fmt.Sprintf("done: %s %s (%s)", need.Pane, action, res.State)
}

// refuseWindow is how often one stranger's chat is told it is refused.
const refuseWindow = time.Minute

// refuseOnce reports whether a refusal to who is to be said now: once a
// minute each, so a flood of messages from a chat that is not the sink's
// costs no flood of replies. (A press is always answered by Telegram's
// callback answer, which stops its spinner; its text is this.)
func (n *Notifier) refuseOnce(who string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	if last, ok := n.refused[who]; ok && now.Sub(last) < refuseWindow {
		return false
	}
	if len(n.refused) > 1000 {
		clear(n.refused)
	}
	n.refused[who] = now
	return true
}

// clipTail keeps the last max bytes of text, at a line.
func clipTail(text string, max int) string {
	text = strings.TrimRight(text, "\n ")
	if len(text) <= max {
		return text
	}
	text = text[len(text)-max:]
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[i+1:]
	}
	return text
}

// EpisodeOf is the event of a pane's open need that an answer resolves
// ("" when none is open).
func (n *Notifier) EpisodeOf(pane string) string {
	if n == nil {
		return ""
	}
	n.scanMu.Lock()
	defer n.scanMu.Unlock()
	for key, id := range n.open {
		if strings.HasPrefix(key, n.node+"|"+pane+"/") {
			return id
		}
	}
	return ""
}
