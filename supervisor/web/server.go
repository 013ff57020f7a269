// Package web serves the team's page to browsers: a one-time login link
// becomes a session cookie, every request is checked against its session
// (and, when it changes something, against the session's CSRF token and
// the page's own origin), and the supervisor's API is passed through to
// the page's script, less the routes a browser has no business with.
// The page itself (templates, styles, script) comes from Config.Pages.
package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// CSRFHeader carries the session's CSRF token on every request that
// changes something; the page finds the token in its
// <meta name="cicy-csrf" content="…">.
const CSRFHeader = "X-Cicy-CSRF"

// SessionHeader tells the API which browser session a request of the
// page came from (its id, as 'cicy-agent web sessions' lists it): the
// server sets it on every request it passes on, after removing whatever a
// browser sent under any X-Cicy- name.
const SessionHeader = "X-Cicy-Web-Session"

// CSP is the Content-Security-Policy of every answer: nothing but the
// page's own origin, no inline script or style, no framing.
const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'"

// Config is what a Server is made of.
type Config struct {
	// API is the supervisor's API handler, in process.
	API http.Handler
	// Pages serves the page (/, /pane/{id}, /tasks, /static/…), given the
	// API as a browser may reach it and the CSRF token of a request's
	// session.
	Pages func(api http.Handler, csrf func(*http.Request) string) http.Handler
	// Home is the cicy home: the sessions (and the certificate the
	// supervisor makes) are kept in its web/ folder.
	Home string
	Log  *logrus.Entry
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxStreams bounds the live views (event streams, screen previews)
	// open at once from every browser, MaxSessionStreams from one
	// (defaults DefaultMaxStreams, DefaultMaxSessionStreams).
	MaxStreams, MaxSessionStreams int
}

// The live views browsers may hold open: each is a goroutine and a
// subscription in the supervisor, so a thousand tabs are refused (503)
// rather than let in.
const (
	DefaultMaxStreams        = 64
	DefaultMaxSessionStreams = 8
)

// Server is the web page's HTTP side.
type Server struct {
	cfg      Config
	sessions *Sessions
	links    *links
	cookie   string
	api      http.Handler
	pages    http.Handler
	streams  streams
}

// streams counts the live views open, in all and per session.
type streams struct {
	mu        sync.Mutex
	all       int
	bySession map[string]int
}

// acquire takes a stream for session id, or reports there is no room.
func (st *streams) acquire(id string, max, perSession int) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.all >= max || st.bySession[id] >= perSession {
		return false
	}
	if st.bySession == nil {
		st.bySession = map[string]int{}
	}
	st.all++
	st.bySession[id]++
	return true
}

func (st *streams) release(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.all--
	if st.bySession[id]--; st.bySession[id] <= 0 {
		delete(st.bySession, id)
	}
}

// isStream reports whether r opens a live view: the team's events, a
// pane's events or its screen's preview.
func isStream(r *http.Request) bool {
	p := r.URL.Path
	return r.Method == http.MethodGet && (p == "/api/events" || strings.HasPrefix(p, "/api/panes/") && (strings.HasSuffix(p, "/events") || strings.HasSuffix(p, "/preview")))
}

// Dir is the home's folder of the web page's files.
func Dir(home string) string { return filepath.Join(home, "web") }

// New makes a server, reading the sessions kept in the home.
func New(cfg Config) (*Server, error) {
	if cfg.API == nil || cfg.Pages == nil || cfg.Home == "" {
		return nil, errors.New("web: API, Pages and Home are needed")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.MaxSessionStreams <= 0 {
		cfg.MaxSessionStreams = DefaultMaxSessionStreams
	}
	if cfg.Log == nil {
		l := logrus.New()
		l.SetOutput(discard{})
		cfg.Log = logrus.NewEntry(l)
	}
	ss, err := OpenSessions(SessionsFile(cfg.Home), cfg.Now)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, sessions: ss, links: newLinks(cfg.Now), cookie: cookieName(cfg.Home)}
	s.api = reachable(cfg.API)
	s.pages = cfg.Pages(s.api, s.CSRF)
	return s, nil
}

// cookieName is the session cookie's name, one per home: cookies do not
// tell ports apart, and two homes' pages on one host must not overwrite
// each other's.
func cookieName(home string) string {
	return "cicy_session_" + hashHex(filepath.Clean(home))[:8]
}

// NewLink mints a one-time login token, valid for ttl (DefaultLinkTTL
// when 0); the link is /login?t=TOKEN on the page's address.
func (s *Server) NewLink(ttl time.Duration) string {
	tok, _ := s.NewLinkUntil(ttl)
	return tok
}

// NewLinkUntil is NewLink, with the time the link expires.
func (s *Server) NewLinkUntil(ttl time.Duration) (token string, expires time.Time) {
	if ttl <= 0 {
		ttl = DefaultLinkTTL
	}
	return s.links.mint(ttl)
}

// Sessions are the browsers logged in.
func (s *Server) Sessions() *Sessions { return s.sessions }

// Close writes the sessions' last-seen times.
func (s *Server) Close() error { return s.sessions.Flush() }

// CSRF is the CSRF token of r's session ("" without one).
func (s *Server) CSRF(r *http.Request) string {
	c, err := r.Cookie(s.cookie)
	if err != nil {
		return ""
	}
	if _, ok := s.sessions.Lookup(c.Value, r.RemoteAddr); !ok {
		return ""
	}
	return csrfOf(c.Value)
}

// Handler serves the page and the API to browsers.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		if r.URL.Path == "/login" {
			s.login(w, r)
			return
		}
		c, err := r.Cookie(s.cookie)
		var ss Session
		ok := err == nil
		if ok {
			ss, ok = s.sessions.Lookup(c.Value, r.RemoteAddr)
		}
		if !ok {
			page(w, http.StatusUnauthorized, "Not logged in",
				"This browser is not logged in to the team's page. Open the link 'cicy-agent web --url' prints (it works once, for 10 minutes).")
			return
		}
		if why := s.foreign(r); why != "" {
			page(w, http.StatusForbidden, "Refused", why)
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			s.pages.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(csrfOf(c.Value))) != 1 {
				page(w, http.StatusForbidden, "Refused", "This request has no valid CSRF token ("+CSRFHeader+"): reload the page.")
				return
			}
			s.cfg.Log.WithFields(logrus.Fields{"session": ss.ID, "method": r.Method, "path": r.URL.Path, "remote": r.RemoteAddr}).Info("Web action")
		}
		for k := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "x-cicy-") {
				r.Header.Del(k)
			}
		}
		r.Header.Set(SessionHeader, ss.ID)
		if isStream(r) {
			if !s.streams.acquire(ss.ID, s.cfg.MaxStreams, s.cfg.MaxSessionStreams) {
				page(w, http.StatusServiceUnavailable, "Too many live views",
					"Too many live views of the team are open (close some tabs, or 'cicy-agent web revoke' the browsers you no longer use).")
				return
			}
			defer s.streams.release(ss.ID)
		}
		s.api.ServeHTTP(w, r)
	})
}

// login spends the link's token and starts a session. The answer is a
// page that moves on to / by itself: a SameSite=Strict cookie is not
// sent with a redirect that a link on another site began.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		page(w, http.StatusMethodNotAllowed, "Refused", "Open the login link in the browser.")
		return
	}
	if err := s.links.spend(r.URL.Query().Get("t")); err != nil {
		s.cfg.Log.WithField("remote", r.RemoteAddr).WithError(err).Warn("Web login refused")
		page(w, http.StatusForbidden, "Login refused", capitalize(err.Error())+": run 'cicy-agent web --url' for a new one.")
		return
	}
	secret, ss, err := s.sessions.New(r.UserAgent(), r.RemoteAddr)
	if err != nil {
		s.cfg.Log.WithError(err).Error("Web login failed")
		page(w, http.StatusInternalServerError, "Login failed", capitalize(err.Error())+".")
		return
	}
	s.cfg.Log.WithFields(logrus.Fields{"session": ss.ID, "remote": r.RemoteAddr, "user_agent": ss.UserAgent}).Info("Web login")
	http.SetCookie(w, &http.Cookie{
		Name: s.cookie, Value: secret, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int((400 * 24 * time.Hour).Seconds()),
	})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Refresh", "0; url=/")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">`+
		`<meta http-equiv="refresh" content="0; url=/"><title>Logged in</title></head><body><p>Logged in. <a href="/">Open the team</a>.</p></body></html>`)
}

// foreign says why r did not come from the page itself: an Origin or
// Referer naming another host (or scheme), or "" when it did or names
// none.
func (s *Server) foreign(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	for _, name := range []string{"Origin", "Referer"} {
		v := r.Header.Get(name)
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || !strings.EqualFold(u.Host, r.Host) || u.Scheme != scheme {
			return "This request came from another site (" + name + ": " + v + ")."
		}
	}
	return ""
}

// reachable is the API less the routes a browser may not reach: the
// supervisor's shutdown, a pane's raw terminal and its agent's hooks, the
// cluster's own routes and the web page's management (login links,
// sessions). They answer 404, as if they were not there. So do paths
// with escaped slashes or dot segments.
func reachable(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Reachable(r) {
			http.NotFound(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// Reachable reports whether a browser may send r to the API.
func Reachable(r *http.Request) bool {
	p := r.URL.Path
	if r.URL.RawPath != "" || strings.Contains(p, "//") || strings.Contains(p, "/./") || strings.Contains(p, "/../") ||
		strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..") {
		return false
	}
	if p == "/api/shutdown" || p == "/api/web" || strings.HasPrefix(p, "/api/web/") {
		return false
	}
	if p == "/api/events" && r.URL.Query().Has("local") { // a peer node's view
		return false
	}
	if rest, ok := strings.CutPrefix(p, "/api/panes/"); ok {
		if _, tail, ok := strings.Cut(rest, "/"); ok {
			tail = strings.TrimSuffix(tail, "/")
			if tail == "attach" || tail == "hook" {
				return false
			}
		}
	}
	return true
}

// page answers a short HTML page (no script, no style).
func page(w http.ResponseWriter, code int, title, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>%s</title></head><body><h1>%s</h1><p>%s</p></body></html>`,
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
