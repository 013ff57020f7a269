// Package front is the supervisor's side of the web page (package web):
// serving it when asked for — serve --web, or 'cicy-agent web' through
// POST /api/web/start — and from then on at every start of the
// supervisor, until 'cicy-agent web stop'; moving it to another address;
// minting one-time login links; listing and revoking the browsers'
// sessions, which outlive a stop. What was asked for is kept in the store
// (Config.Key), with the port chosen for 127.0.0.1:0, so that bookmarks
// and logged-in browsers find it again. The management routes (/api/web…)
// are the control socket's: the cluster API refuses them (SocketOnly) and
// a browser never reaches them (web.Reachable).
//
// It is a package of its own under web, not a part of it: web is the page
// as browsers meet it (sessions, links, the API passed through, the
// templates) and knows nothing of a supervisor's start, store or control
// socket; front is the daemon's handle on it. It imports web and the API's
// documents only, and knows the supervisor through Config (its home, a
// settings Store) and SetAPI (the API handler, made after the front as it
// serves the front's routes), so that neither package imports anything
// of the daemon.
package front
