package api

import (
	"context"
	"net/http"
	"time"
)

// The web page's management, on the control socket only (a browser never
// reaches these routes): start or stop serving, mint a login link, list
// and end the browsers' sessions.

// WebStartRequest asks the supervisor to serve the page (GET /api/web is
// what it serves now). Empty fields keep what it serves, or the defaults:
// 127.0.0.1 on a port kept for the home.
type WebStartRequest struct {
	Listen  string `json:"listen,omitempty"`
	TLSCert string `json:"tls_cert,omitempty"`
	TLSKey  string `json:"tls_key,omitempty"`
	// TLS serves with the certificate the supervisor makes and keeps.
	TLS bool `json:"tls,omitempty"`
}

// WebStatus is whether and where the page is served.
type WebStatus struct {
	Running bool   `json:"running"`
	URL     string `json:"url,omitempty"`
	Listen  string `json:"listen,omitempty"`
	TLS     bool   `json:"tls"`
	// Fingerprint is the SHA-256 of the TLS certificate, AB:CD:….
	Fingerprint string `json:"fingerprint,omitempty"`
	Sessions    int    `json:"sessions"`
}

// WebLinkRequest asks for a one-time login link valid for TTLSeconds
// (default 10 minutes).
type WebLinkRequest struct {
	TTLSeconds int `json:"ttl_seconds,omitempty"`
}

// WebLink is a one-time login link.
type WebLink struct {
	URL         string    `json:"url"`
	Fingerprint string    `json:"fingerprint,omitempty"`
	Expires     time.Time `json:"expires"`
}

// WebSession is a browser logged in to the page.
type WebSession struct {
	ID         string    `json:"id"`
	Created    time.Time `json:"created"`
	LastSeen   time.Time `json:"last_seen"`
	UserAgent  string    `json:"user_agent"`
	RemoteAddr string    `json:"remote_addr"`
}

// WebRevokeResult is how many sessions a revoke ended.
type WebRevokeResult struct {
	Revoked int `json:"revoked"`
}

// WebStatus is whether and where the page is served.
func (c *Client) WebStatus(ctx context.Context) (WebStatus, error) {
	return call[WebStatus](ctx, c, http.MethodGet, "/api/web", nil)
}

// WebStart serves the page (again, elsewhere, if req says so).
func (c *Client) WebStart(ctx context.Context, req WebStartRequest) (WebStatus, error) {
	return call[WebStatus](ctx, c, http.MethodPost, "/api/web/start", req)
}

// WebStop stops serving the page; the sessions stay.
func (c *Client) WebStop(ctx context.Context) (WebStatus, error) {
	return call[WebStatus](ctx, c, http.MethodPost, "/api/web/stop", nil)
}

// WebLink mints a one-time login link.
func (c *Client) WebLink(ctx context.Context, req WebLinkRequest) (WebLink, error) {
	return call[WebLink](ctx, c, http.MethodPost, "/api/web/links", req)
}

// WebSessions lists the browsers logged in.
func (c *Client) WebSessions(ctx context.Context) ([]WebSession, error) {
	return call[[]WebSession](ctx, c, http.MethodGet, "/api/web/sessions", nil)
}

// WebRevoke ends a browser's session, or every one with "all".
func (c *Client) WebRevoke(ctx context.Context, id string) (WebRevokeResult, error) {
	return call[WebRevokeResult](ctx, c, http.MethodDelete, "/api/web/sessions/"+seg(id), nil)
}
