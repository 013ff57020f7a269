package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"

	"github.com/cicy-ai/cicy-agent/api"
)

// The page is server-side rendered HTML (html/template: every text is
// escaped) with one small script that follows the event stream and swaps
// in the page's live part, rendered again by the same templates. All of it
// is embedded: no CDN, no build step.
//
//go:embed assets
var assets embed.FS

// staticDir is what /static/ serves: the stylesheet, the script, the icon.
const staticDir = "assets/static"

// assetVersion changes with the assets' bytes: the page links them with
// it, and it is their ETag, so a browser revalidates cheaply and never
// keeps an old script after an upgrade.
var assetVersion = hashDir(assets, staticDir)

// Pages serves the page: / the team, /pane/{id} a pane, /tasks the task
// list (?pane= keeps one pane's), /static/ the embedded assets. It reads
// everything from api, called in process as the browser would call it
// (with the browser's cookies), and never from the supervisor itself.
// csrf gives the token a page carries in its cicy-csrf meta; the script
// sends it back as X-Cicy-CSRF on every changing request.
//
// A page asked with ?part=live is only its live part (what the script
// swaps in when an event comes); /tasks?part=diff&target=T is the
// highlighted diff of a task or a worktree worker.
func Pages(apiHandler http.Handler, csrf func(*http.Request) string) http.Handler {
	tmpl, err := parsePages()
	if err != nil {
		// The templates are embedded: only a build mistake reaches here,
		// and the page says so rather than take the supervisor down.
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "the page's templates are broken: "+err.Error(), http.StatusInternalServerError)
		})
	}
	p := &pages{api: apiCaller{h: apiHandler}, csrf: csrf, tmpl: tmpl}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", p.team)
	mux.HandleFunc("GET /pane/{id}", p.pane)
	mux.HandleFunc("GET /tasks", p.tasks)
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticHandler()))
	return mux
}

type pages struct {
	api  apiCaller
	csrf func(*http.Request) string
	tmpl map[string]*template.Template
}

// base is what every page's layout needs.
type base struct {
	Page    string // team, pane or tasks: the body's data-page
	Title   string
	CSRF    string
	Version string
	PaneID  string // the pane page's pane
	Err     string // what could not be read, shown at the top
}

// render writes page (or, with ?part=live, only its live part).
func (p *pages) render(w http.ResponseWriter, r *http.Request, page string, status int, data any) {
	name := "layout"
	switch r.URL.Query().Get("part") {
	case "live":
		name = "live"
	case "diff":
		name = "diff"
	}
	var buf bytes.Buffer
	if err := p.tmpl[page].ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, "the page could not be rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// A page carries the session's CSRF token: never kept by a cache.
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (p *pages) base(r *http.Request, page, title string) base {
	return base{Page: page, Title: title, CSRF: p.csrf(r), Version: assetVersion}
}

// staticHandler serves the embedded assets with their content type (by
// extension), nosniff, and the assets' version as ETag.
func staticHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Path
		if !fs.ValidPath(name) || name == "." || strings.Contains(name, "/") {
			http.NotFound(w, r) // one flat folder, no listings
			return
		}
		if _, err := fs.Stat(assets, staticDir+"/"+name); err != nil {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("ETag", `"`+assetVersion+`"`)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		http.ServeFileFS(w, r, assets, staticDir+"/"+name)
	})
}

// apiCaller calls the API in process, as the browser would: a GET with the
// browser's cookies, its answer decoded into the api package's documents.
type apiCaller struct{ h http.Handler }

// get decodes the answer to GET path into out; an error answer is an
// *api.Error with its kind and sentence.
func (c apiCaller) get(ctx context.Context, r *http.Request, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	if err != nil {
		return fmt.Errorf("asking %s: %w", path, err)
	}
	for _, ck := range r.Cookies() {
		req.AddCookie(ck)
	}
	req.RemoteAddr, req.Host = r.RemoteAddr, r.Host
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	c.h.ServeHTTP(rec, req)
	if rec.status >= 300 {
		var e api.Error
		if json.Unmarshal(rec.body.Bytes(), &e) != nil || e.Message == "" {
			e = api.Error{Kind: api.KindFailed, Message: fmt.Sprintf("%s answered %d", path, rec.status)}
		}
		if rec.status == http.StatusNotFound {
			e.Kind = api.KindNotFound
		}
		return &e
	}
	if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// notFound reports whether err is the API's not_found.
func notFound(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Kind == api.KindNotFound
}

// recorder is the in-process ResponseWriter the API writes its answer to.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}

// Flush lets the API's streamed arrays be written to a recorder too.
func (r *recorder) Flush() {}

func esc(s string) string { return url.PathEscape(s) }

func hashDir(f fs.FS, dir string) string {
	h := sha256.New()
	_ = fs.WalkDir(f, dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(f, path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}
