package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/web"
)

// handler is the HTTP API of the control socket.
type handler struct {
	sup Daemon
	cfg Config
}

// New is the API's handler on d: its routes, the rooms' routes (cfg.Rooms)
// and a 404 that names any other, behind cfg.Forward; a path with an
// empty, "." or ".." part is refused and a request's body bounded by
// cfg.BodyTimeout (10s when unset).
func New(d Daemon, cfg Config) http.Handler {
	a := &handler{sup: d, cfg: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/health", a.health)
	mux.HandleFunc("POST /api/shutdown", a.shutdownHandler)
	mux.HandleFunc("GET /api/panes", a.list)
	mux.HandleFunc("POST /api/panes", a.create)
	mux.HandleFunc("DELETE /api/panes/{id}", a.kill)
	mux.HandleFunc("POST /api/panes/{id}/send", a.send)
	mux.HandleFunc("GET /api/panes/{id}/screen", a.screen)
	mux.HandleFunc("POST /api/panes/{id}/restart", a.restart)
	mux.HandleFunc("POST /api/panes/{id}/answer", a.answer)
	mux.HandleFunc("GET /api/panes/{id}/attach", a.attach)
	mux.HandleFunc("POST /api/panes/{id}/cancel", a.cancel)
	mux.HandleFunc("GET /api/panes/{id}/events", a.events)
	mux.HandleFunc("POST /api/panes/{id}/hook", a.hook)
	mux.HandleFunc("POST /api/panes/{id}/team/{tool}", a.teamTool)
	mux.HandleFunc("GET /api/status", a.status)
	mux.HandleFunc("GET /api/events", a.teamEvents)
	mux.HandleFunc("GET /api/panes/{id}/preview", a.preview)
	mux.HandleFunc("GET /api/usage", a.usage)
	mux.HandleFunc("GET /api/nodes", func(w http.ResponseWriter, r *http.Request) {
		ns, err := a.sup.Nodes(r.Context())
		Respond(w, ns, err)
	})
	a.memoryRoutes(mux)
	a.budgetRoutes(mux)
	for _, mount := range cfg.Rooms {
		mount(mux, Decode, Respond)
	}
	a.taskRoutes(mux)
	a.worktreeRoutes(mux)
	mux.HandleFunc("POST /api/panes/{id}/compact", a.command("/compact"))
	mux.HandleFunc("POST /api/panes/{id}/clear", a.command("/clear"))
	// Routes that answer what the daemon says of the {id} in their path.
	mux.HandleFunc("GET /api/panes/{id}", paneRoute(d.Get))
	mux.HandleFunc("GET /api/panes/{id}/explain", paneRoute(func(id string) (api.Explanation, error) { return a.cfg.Views.Explain(id) }))
	mux.HandleFunc("GET /api/memory/templates/agent/{id}", paneRoute(func(id string) (api.GuidanceDoc, error) { return a.cfg.Cicy.Guidance(id) }))
	mux.HandleFunc("PUT /api/memory/templates/agent/{id}", a.putGuidance)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteErr(w, &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("no such API endpoint: %s %s", r.Method, r.URL.Path)})
	})
	timeout := cfg.BodyTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var h http.Handler = mux
	if cfg.Forward != nil {
		h = cfg.Forward(h)
	}
	return boundBody(refuseUncleanPaths(h), timeout)
}

// budgetRoutes are the budgets' (package spend).
func (a *handler) budgetRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/budgets", func(w http.ResponseWriter, r *http.Request) {
		Respond(w, a.cfg.Spend.Budgets(), nil)
	})
	mux.HandleFunc("GET /api/budgets/{ref}", func(w http.ResponseWriter, r *http.Request) {
		b, err := a.cfg.Spend.Budget(r.PathValue("ref"))
		Respond(w, b, err)
	})
	mux.HandleFunc("PUT /api/budgets/{ref}", func(w http.ResponseWriter, r *http.Request) {
		req, ok := decodeOr[api.BudgetRequest](w, r)
		if !ok {
			return
		}
		b, err := a.cfg.Spend.SetBudget(r.Context(), r.PathValue("ref"), req)
		Respond(w, b, err)
	})
}

// usage is the usage report (package spend).
func (a *handler) usage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	rep, err := a.cfg.Spend.Usage(r.Context(), api.UsageQuery{Pane: q.Get("pane"), Since: q.Get("since"), By: q.Get("by")})
	Respond(w, rep, err)
}

// boundBody gives a request's body timeout to arrive once its header has
// (ReadHeaderTimeout bounds the header), and says so in a sentence when it
// does not. net/http lifts the read deadline itself once the body has been
// read to its end (it then watches the connection for the client going
// away), so a long-poll or a stream answering the request is not cut.
// After a deadline the server discards the rest of the body under the same
// deadline and hangs up.
func boundBody(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 &&
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout)) == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, timeout: timeout}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody turns the body's read deadline into a sentence.
type deadlineBody struct {
	io.ReadCloser
	timeout time.Duration
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("the request body did not arrive within %s", b.timeout)
	}
	return n, err
}

// refuseUncleanPaths answers 400 to a path with an empty, "." or ".."
// segment (raw or escaped) instead of letting the mux redirect it to the
// cleaned path: "memory rm w-1 .." must not become "kill w-1".
func refuseUncleanPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seg, ok := uncleanSegment(r.URL); ok {
			WriteErr(w, api.Usagef("%q is not a valid name here (a part of an API path may not be empty, \".\" or \"..\")", seg))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// uncleanSegment returns the first segment of u's path (unescaped) that is
// empty (but for a trailing slash), "." or "..", escaped or not, or holds
// an escaped "/.." or "../".
func uncleanSegment(u *url.URL) (string, bool) {
	segs := strings.Split(u.EscapedPath(), "/")
	for i, raw := range segs {
		if i == 0 || (raw == "" && i == len(segs)-1) {
			continue
		}
		s, err := url.PathUnescape(raw)
		if err != nil {
			s = raw
		}
		if raw == "" || s == "." || s == ".." || strings.HasPrefix(s, "../") || strings.HasSuffix(s, "/..") || strings.Contains(s, "/../") {
			return s, true
		}
	}
	return "", false
}

// WriteJSON answers v as JSON with the status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteErr answers err as an *api.Error with its kind's status.
func WriteErr(w http.ResponseWriter, err error) {
	e := asAPIError(err)
	WriteJSON(w, e.Status(), e)
}

// Decode reads the request's body, one JSON value and nothing after it,
// into v; a bad body is a usage error.
func Decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 4<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return api.Usagef("bad request body: %v", err)
	}
	// One JSON value and nothing after it (reading to the end also lifts
	// the body's read deadline).
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("more data after the JSON value")
		}
		return api.Usagef("bad request body: %v", err)
	}
	return nil
}

// decodeOr reads the request's body into a T (see Decode); a bad body is
// answered as the error, and ok is false.
func decodeOr[T any](w http.ResponseWriter, r *http.Request) (req T, ok bool) {
	if err := Decode(r, &req); err != nil {
		WriteErr(w, err)
		return req, false
	}
	return req, true
}

// Respond answers v, or the error.
func Respond(w http.ResponseWriter, v any, err error) {
	if err != nil {
		WriteErr(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, v)
}

func (a *handler) health(w http.ResponseWriter, _ *http.Request) {
	h := a.sup.Health()
	h.PID, h.Version, h.Home, h.Cluster = os.Getpid(), a.cfg.Version, a.cfg.Home, a.cfg.Cluster
	WriteJSON(w, http.StatusOK, h)
}

func (a *handler) shutdownHandler(w http.ResponseWriter, _ *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]int{"pid": os.Getpid()})
	a.cfg.Shutdown()
}

func (a *handler) list(w http.ResponseWriter, r *http.Request) {
	f := api.FilterOf(r.URL.Query())
	if len(f.Query()) == 0 {
		writeList(w, a.sup.Panes(r.Context()))
		return
	}
	out, err := a.sup.ListFiltered(r.Context(), f)
	if err != nil {
		WriteErr(w, err)
		return
	}
	writeList(w, slices.Values(out))
}

// writeList answers a JSON array of panes written as it is encoded (and,
// from the daemon's Panes, as each is described), a few hundred at a time,
// so a client shows the first of 100,000 panes while the rest are still
// on their way (api.Client.ListEach).
func writeList(w http.ResponseWriter, panes iter.Seq[api.PaneInfo]) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	flusher, _ := w.(http.Flusher)
	_ = bw.WriteByte('[')
	i := -1
	for p := range panes {
		if i++; i > 0 {
			_ = bw.WriteByte(',')
		}
		if enc.Encode(p) != nil {
			return // a client gone away
		}
		if i%256 == 255 && flusher != nil {
			if bw.Flush() != nil {
				return
			}
			flusher.Flush()
		}
	}
	_, _ = bw.WriteString("]\n")
	_ = bw.Flush()
}

func (a *handler) create(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeOr[api.CreateRequest](w, r)
	if !ok {
		return
	}
	resp, err := a.sup.Create(r.Context(), req)
	if err != nil {
		WriteErr(w, err)
		return
	}
	WriteJSON(w, http.StatusCreated, resp)
}

// paneRoute answers what f says of the pane the path's {id} names.
func paneRoute[T any](f func(id string) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := f(r.PathValue("id"))
		Respond(w, v, err)
	}
}

func (a *handler) kill(w http.ResponseWriter, r *http.Request) {
	res, err := a.sup.KillPane(r.Context(), r.PathValue("id"))
	Respond(w, res, err)
}

func (a *handler) send(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeOr[api.SendRequest](w, r)
	if !ok {
		return
	}
	res, err := a.sup.Send(r.Context(), r.PathValue("id"), req)
	if err != nil {
		WriteErr(w, err)
		return
	}
	if res == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	WriteJSON(w, http.StatusOK, res)
}

func (a *handler) hook(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeOr[api.HookRequest](w, r)
	if !ok {
		return
	}
	res, err := a.sup.Hook(r.Context(), r.PathValue("id"), req)
	Respond(w, res, err)
}

func (a *handler) cancel(w http.ResponseWriter, r *http.Request) {
	was, err := a.cfg.Cicy.Cancel(r.PathValue("id"))
	Respond(w, map[string]bool{"cancelled": was}, err)
}

// command runs /compact or /clear and answers when it is done.
func (a *handler) command(cmd string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		res, err := a.cfg.Cicy.Command(r.Context(), r.PathValue("id"), cmd)
		Respond(w, res, err)
	}
}

// events streams a cicy pane's events as JSON lines until the client goes.
func (a *handler) events(w http.ResponseWriter, r *http.Request) {
	ch, stop, err := a.cfg.Cicy.Events(r.PathValue("id"))
	if err != nil {
		WriteErr(w, err)
		return
	}
	defer stop()
	send := ndjson(w)
	for {
		select {
		case ev, ok := <-ch:
			if !ok || send(ev) != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// ndjson starts a stream of JSON lines; send writes values and flushes.
func ndjson(w http.ResponseWriter) (send func(vs ...any) error) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	enc := json.NewEncoder(w)
	return func(vs ...any) error {
		for _, v := range vs {
			if err := enc.Encode(v); err != nil {
				return err
			}
		}
		if fl != nil {
			fl.Flush()
		}
		return nil
	}
}

// teamEvents streams the team's events (the daemon's Stream).
func (a *handler) teamEvents(w http.ResponseWriter, r *http.Request) {
	var send func(vs ...any) error
	local := r.URL.Query().Get("local") == "1"
	err := a.sup.Stream(r.Context(), local, func(evs []api.Event) error {
		if send == nil {
			send = ndjson(w)
		}
		vs := make([]any, len(evs))
		for i := range evs {
			vs[i] = evs[i]
		}
		return send(vs...)
	})
	if err != nil && send == nil {
		WriteErr(w, err)
	}
}

// preview streams a pane's screen each time it changes.
func (a *handler) preview(w http.ResponseWriter, r *http.Request) {
	lines, err := linesParam(r)
	if err != nil {
		WriteErr(w, err)
		return
	}
	var send func(vs ...any) error
	err = a.cfg.Views.Preview(r.Context(), r.PathValue("id"), lines, func(sc api.ScreenResponse) error {
		if send == nil {
			send = ndjson(w)
		}
		return send(sc)
	})
	if err != nil && send == nil {
		WriteErr(w, err)
	}
}

func linesParam(r *http.Request) (int, error) {
	v := r.URL.Query().Get("lines")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, api.Usagef("--lines must be a whole number of lines, not %q", v)
	}
	return n, nil
}

func (a *handler) screen(w http.ResponseWriter, r *http.Request) {
	lines, err := linesParam(r)
	if err != nil {
		WriteErr(w, err)
		return
	}
	screen := a.sup.Screen
	if r.URL.Query().Get("styled") == "1" {
		screen = a.cfg.Views.StyledScreen
	}
	sc, err := screen(r.PathValue("id"), lines)
	Respond(w, sc, err)
}

func (a *handler) restart(w http.ResponseWriter, r *http.Request) {
	if err := a.sup.RestartPane(r.Context(), r.PathValue("id"), r.URL.Query().Get("new") == "1"); err != nil {
		WriteErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *handler) answer(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeOr[api.AnswerRequest](w, r)
	if !ok {
		return
	}
	if id := r.Header.Get(web.SessionHeader); id != "" {
		// From the web page: its browser session answers, whatever the
		// page's body said.
		req.Via, req.By = api.ViaWeb, "browser "+id
	}
	res, err := a.sup.Answer(r.Context(), r.PathValue("id"), req)
	Respond(w, res, err)
}

func (a *handler) status(w http.ResponseWriter, r *http.Request) {
	st, err := a.sup.Status(r.Context())
	Respond(w, st, err)
}

func (a *handler) putGuidance(w http.ResponseWriter, r *http.Request) {
	content, err := guidanceBody(r)
	if err != nil {
		WriteErr(w, err)
		return
	}
	doc, err := a.cfg.Cicy.SetGuidance(r.PathValue("id"), content)
	Respond(w, doc, err)
}

// maxGuidance bounds a guidance file sent to the API.
const maxGuidance = 4 << 20

// guidanceBody reads a PUT of a guidance file: {"content": "…"} or the
// Markdown itself. A Content-Type of application/json means the object
// form, text/* means Markdown; without either, a body whose first
// non-space byte is "{" and that parses as a JSON object must be the
// object form (a typo like {"contents": …} is refused, not stored), and
// anything else is Markdown.
func guidanceBody(r *http.Request) (string, error) {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxGuidance))
	if err != nil {
		return "", api.Usagef("bad request body: %v", err)
	}
	asJSON := false
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case mt == "application/json":
		asJSON = true
	case strings.HasPrefix(mt, "text/"):
	default:
		var obj map[string]json.RawMessage
		t := bytes.TrimLeft(b, " \t\r\n")
		asJSON = len(t) > 0 && t[0] == '{' && json.Unmarshal(b, &obj) == nil
	}
	if !asJSON {
		if !utf8.Valid(b) {
			return "", api.Usagef("the guidance file is not valid UTF-8 text")
		}
		return string(b), nil
	}
	var body struct {
		Content *string `json:"content"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err = dec.Decode(&body)
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			err = errors.New("more data after the JSON value")
		}
	}
	if err == nil && body.Content == nil {
		err = errors.New("it has no content field")
	}
	if err != nil {
		return "", api.Usagef("a JSON body must be {\"content\": \"…\"} (%v); send Markdown as it is with Content-Type text/markdown", err)
	}
	return *body.Content, nil
}

func (a *handler) worktreeRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/diff", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res, err := a.sup.Diff(r.Context(), q.Get("target"), q.Get("stat") == "true")
		Respond(w, res, err)
	})
	mux.HandleFunc("POST /api/merge", func(w http.ResponseWriter, r *http.Request) {
		req, ok := decodeOr[api.MergeRequest](w, r)
		if !ok {
			return
		}
		res, err := a.sup.Merge(r.Context(), req)
		Respond(w, res, err)
	})
	mux.HandleFunc("GET /api/worktrees", func(w http.ResponseWriter, r *http.Request) {
		Respond(w, a.sup.Worktrees(r.Context(), false), nil)
	})
	mux.HandleFunc("POST /api/worktrees", func(w http.ResponseWriter, r *http.Request) {
		Respond(w, a.sup.Worktrees(r.Context(), true), nil)
	})
}
