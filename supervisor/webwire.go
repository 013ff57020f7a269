package supervisor

import (
	"net/http"

	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/httpapi"
	"github.com/cicy-ai/cicy-agent/supervisor/web/front"
)

// The web page's serving lives in supervisor/web/front; this is its
// wiring: where its settings are kept, the API it passes through, its
// routes on the control socket.

// Web is where the page is served (front.Web).
type Web = front.Web

// PagesFunc makes the page's handler (package web's Pages).
type PagesFunc = front.PagesFunc

// webSetting keeps the page's last Web (JSON); empty when stopped.
const webSetting = "web"

// newWebFront makes the page's front; serve gives it the API it serves
// once made (SetAPI).
func newWebFront(s *Supervisor, pages PagesFunc) *front.Front {
	key := webSetting
	if s.store.Dialect() == schema.Postgres {
		key += ":" + s.cfg.Node
	}
	return front.New(front.Config{Home: s.cfg.Home.Root, Store: s.store, Key: key, Pages: pages,
		Log: s.log.WithField("part", "web")})
}

// socketOnly keeps the page's management on the control socket
// (front.SocketOnly).
func socketOnly(next http.Handler) http.Handler { return front.SocketOnly(next, httpapi.WriteErr) }
