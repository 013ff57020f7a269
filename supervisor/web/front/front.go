package front

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/web"
)

// Web is where the page is served; an empty Addr serves it only if a
// previous start did (see Config.Key).
type Web struct {
	Addr              string
	CertFile, KeyFile string
	// TLS serves with the certificate the supervisor makes and keeps.
	TLS bool
}

// PagesFunc makes the page's handler (package web's Pages).
type PagesFunc func(api http.Handler, csrf func(*http.Request) string) http.Handler

// Store keeps the page's last Web between starts of the supervisor.
type Store interface {
	Setting(ctx context.Context, key string) (string, bool, error)
	SetSetting(ctx context.Context, key, value string) error
}

// Config is what a Front is made of.
type Config struct {
	// Home is the cicy home: the page's sessions and certificate are in
	// its web/ folder.
	Home string
	// Store keeps the page's last Web (JSON, empty when stopped) under Key.
	Store Store
	Key   string
	// Pages makes the page's handler; nil: this build has no page.
	Pages PagesFunc
	Log   *logrus.Entry
}

// Front owns the page's server and listener.
type Front struct {
	home  string
	log   *logrus.Entry
	store Store
	key   string
	pages PagesFunc

	mu   sync.Mutex
	api  http.Handler    // the supervisor's API, nil until SetAPI
	base context.Context // the supervisor's: the page's requests end with it
	srv  *web.Server     // made at the first start; its sessions outlive a stop
	ln   *web.Listener
	hs   *http.Server
	done chan struct{}
	on   Web
}

// New makes the front; it serves nothing until SetAPI, then Boot or
// Start.
func New(cfg Config) *Front {
	return &Front{home: cfg.Home, log: cfg.Log, store: cfg.Store, key: cfg.Key, pages: cfg.Pages}
}

// SetAPI gives the front the supervisor's API handler, which is made
// after the front (the API serves the front's routes); until then Start
// refuses.
func (f *Front) SetAPI(h http.Handler) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.api = h
}

// Boot serves the page at the supervisor's start as w asks, or as the
// previous start did (a failure of which is logged, not fatal).
func (f *Front) Boot(ctx context.Context, w Web) error {
	f.mu.Lock()
	f.base = ctx
	f.mu.Unlock()
	if w.Addr != "" {
		_, err := f.Start(ctx, w)
		return err
	}
	v, ok, err := f.store.Setting(ctx, f.key)
	if err != nil || !ok || v == "" {
		return err
	}
	var kept Web
	if err := json.Unmarshal([]byte(v), &kept); err != nil {
		f.log.WithError(err).Warn("The web page's kept settings are unreadable: not served")
		return nil
	}
	f.mu.Lock()
	f.on = kept // a kept port another program took gives way (listen)
	f.mu.Unlock()
	if _, err := f.Start(ctx, kept); err != nil {
		f.log.WithError(err).Warn("The web page could not be served as before (run 'cicy-agent web' to serve it)")
	}
	return nil
}

// Start serves the page as w asks (on 127.0.0.1 by default, on the port
// kept from before); a page already served elsewhere moves.
func (f *Front) Start(ctx context.Context, w Web) (api.WebStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pages == nil {
		return api.WebStatus{}, api.Failedf("this build of cicy-agent has no web page")
	}
	h := f.api
	if h == nil {
		return api.WebStatus{}, api.Failedf("the supervisor is still starting: try again")
	}
	if f.ln != nil && (w == Web{} || w == f.on) {
		return f.statusLocked(), nil
	}
	if w.Addr == "" {
		w.Addr = "127.0.0.1:0"
		if f.on.Addr != "" && !w.TLS && w.CertFile == "" {
			w = f.on // moved back from nowhere: same place
		}
	}
	if f.srv == nil {
		srv, err := web.New(web.Config{API: h, Pages: f.pages, Home: f.home, Log: f.log})
		if err != nil {
			return api.WebStatus{}, err
		}
		f.srv = srv
	}
	// The page moves: the new place is opened first (a refused one leaves
	// the page where it was), unless it is the same port.
	ln, err := f.listen(ctx, w)
	if err != nil && f.hs != nil && errors.Is(err, syscall.EADDRINUSE) {
		f.stopLocked()
		ln, err = f.listen(ctx, w)
	}
	if err != nil {
		return api.WebStatus{}, err
	}
	f.stopLocked()
	base := f.base
	if base == nil {
		base = context.Background()
	}
	f.ln = ln
	f.hs = &http.Server{Handler: f.srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return base }}
	f.done = make(chan struct{})
	go func(hs *http.Server, ln net.Listener, done chan struct{}) {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			f.log.WithError(err).Error("The web page stopped")
		}
	}(f.hs, ln, f.done)
	// What a later start serves: the port chosen now for 127.0.0.1:0.
	kept := w
	host, _, _ := net.SplitHostPort(w.Addr)
	_, bound, _ := net.SplitHostPort(ln.Addr().String())
	kept.Addr = net.JoinHostPort(host, bound)
	f.on = kept
	b, _ := json.Marshal(kept)
	if err := f.store.SetSetting(ctx, f.key, string(b)); err != nil {
		f.log.WithError(err).Warn("The web page's settings could not be kept")
	}
	f.log.WithFields(logrus.Fields{"url": ln.URL, "fingerprint": ln.Fingerprint}).Info("Web page listening")
	return f.statusLocked(), nil
}

// listen opens w's listener; a port kept from before that another program
// took gives way to a new one.
func (f *Front) listen(ctx context.Context, w Web) (*web.Listener, error) {
	l := web.Listen{Addr: w.Addr, CertFile: w.CertFile, KeyFile: w.KeyFile, TLS: w.TLS}
	ln, err := web.Open(f.home, l)
	if err != nil && f.on.Addr == w.Addr && errors.Is(err, syscall.EADDRINUSE) {
		host, _, _ := net.SplitHostPort(w.Addr)
		l.Addr = net.JoinHostPort(host, "0")
		f.log.WithField("addr", w.Addr).Warn("The web page's kept port is taken: another one is chosen")
		ln, err = web.Open(f.home, l)
	}
	if errors.Is(err, web.ErrNeedsTLS) {
		return nil, api.Usagef("%s", err.Error())
	}
	return ln, err
}

// Stop stops serving the page (its sessions stay) and forgets to serve it
// at the next start.
func (f *Front) Stop(ctx context.Context) (api.WebStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopLocked()
	if err := f.store.SetSetting(ctx, f.key, ""); err != nil {
		return api.WebStatus{}, err
	}
	return f.statusLocked(), nil
}

// Close stops serving at the supervisor's end (the page is served again
// at the next start).
func (f *Front) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopLocked()
	if f.srv != nil {
		_ = f.srv.Close()
	}
}

func (f *Front) stopLocked() {
	if f.hs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if f.hs.Shutdown(ctx) != nil {
		_ = f.hs.Close()
	}
	<-f.done
	f.hs, f.ln, f.done = nil, nil, nil
}

func (f *Front) Status() api.WebStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.statusLocked()
}

func (f *Front) statusLocked() api.WebStatus {
	st := api.WebStatus{}
	if f.srv != nil {
		st.Sessions = len(f.srv.Sessions().List())
	}
	if f.ln == nil {
		return st
	}
	st.Running, st.URL, st.Listen = true, f.ln.URL, f.ln.Addr().String()
	st.TLS, st.Fingerprint = f.ln.Fingerprint != "", f.ln.Fingerprint
	return st
}

// Link mints a one-time login link on the page's address.
func (f *Front) Link(ttl time.Duration) (api.WebLink, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln == nil {
		return api.WebLink{}, api.Failedf("the web page is not served: run 'cicy-agent web'")
	}
	tok, exp := f.srv.NewLinkUntil(ttl)
	return api.WebLink{URL: f.ln.URL + "/login?t=" + url.QueryEscape(tok), Fingerprint: f.ln.Fingerprint, Expires: exp}, nil
}

func (f *Front) Sessions() ([]api.WebSession, error) {
	ss, err := f.sessionsOf()
	if err != nil {
		return nil, err
	}
	out := []api.WebSession{}
	for _, s := range ss.List() {
		out = append(out, s.WebSession)
	}
	return out, nil
}

func (f *Front) Revoke(id string) (api.WebRevokeResult, error) {
	ss, err := f.sessionsOf()
	if err != nil {
		return api.WebRevokeResult{}, err
	}
	n, err := ss.Revoke(id)
	if errors.Is(err, web.ErrNoSession) {
		return api.WebRevokeResult{}, &api.Error{Kind: api.KindNotFound, Message: err.Error()}
	}
	if n > 0 {
		f.log.WithFields(logrus.Fields{"session": id, "ended": n}).Info("Web sessions revoked")
	}
	return api.WebRevokeResult{Revoked: n}, err
}

// sessionsOf is the page's sessions: its server's, or while it was never
// served in this run, the ones kept in the home.
func (f *Front) sessionsOf() (*web.Sessions, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv != nil {
		return f.srv.Sessions(), nil
	}
	return web.OpenSessions(web.SessionsFile(f.home), nil)
}

// Routes are the page's management routes (/api/web…), for the control
// socket only (SocketOnly); decode reads a request's JSON body, respond
// writes an answer or an error.
func (f *Front) Routes(mux *http.ServeMux, decode func(*http.Request, any) error, respond func(http.ResponseWriter, any, error)) {
	mux.HandleFunc("GET /api/web", func(w http.ResponseWriter, r *http.Request) {
		respond(w, f.Status(), nil)
	})
	mux.HandleFunc("POST /api/web/start", func(w http.ResponseWriter, r *http.Request) {
		var req api.WebStartRequest
		if err := decode(r, &req); err != nil {
			respond(w, nil, err)
			return
		}
		if (req.TLSCert == "") != (req.TLSKey == "") {
			respond(w, nil, api.Usagef("--tls-cert and --tls-key go together"))
			return
		}
		out, err := f.Start(r.Context(), Web{Addr: req.Listen, CertFile: req.TLSCert, KeyFile: req.TLSKey, TLS: req.TLS})
		respond(w, out, err)
	})
	mux.HandleFunc("POST /api/web/stop", func(w http.ResponseWriter, r *http.Request) {
		out, err := f.Stop(r.Context())
		respond(w, out, err)
	})
	mux.HandleFunc("POST /api/web/links", func(w http.ResponseWriter, r *http.Request) {
		var req api.WebLinkRequest
		if r.ContentLength != 0 {
			if err := decode(r, &req); err != nil {
				respond(w, nil, err)
				return
			}
		}
		out, err := f.Link(time.Duration(req.TTLSeconds) * time.Second)
		respond(w, out, err)
	})
	mux.HandleFunc("GET /api/web/sessions", func(w http.ResponseWriter, r *http.Request) {
		out, err := f.Sessions()
		respond(w, out, err)
	})
	mux.HandleFunc("DELETE /api/web/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		out, err := f.Revoke(r.PathValue("id"))
		respond(w, out, err)
	})
}

// SocketOnly keeps the web page's management (/api/web…) on the control
// socket: the cluster API answers 404 for it (written by writeErr), as the
// page itself does.
func SocketOnly(next http.Handler, writeErr func(http.ResponseWriter, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/web" || strings.HasPrefix(r.URL.Path, "/api/web/") {
			writeErr(w, &api.Error{Kind: api.KindNotFound, Message: "the web page is managed on the control socket only ('cicy-agent web' on its machine)"})
			return
		}
		next.ServeHTTP(w, r)
	})
}
