package gateway

import (
	"net/http"
	"net/textproto"
	"strings"
)

// hopByHop are the headers that concern one connection only (RFC 9110
// §7.6.1) and are never forwarded.
var hopByHop = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// copyEndToEnd copies src's headers into dst, less the hop-by-hop ones
// and those src's Connection header names.
func copyEndToEnd(dst, src http.Header) {
	skip := map[string]bool{}
	for _, h := range hopByHop {
		skip[h] = true
	}
	for _, v := range src.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				skip[textproto.CanonicalMIMEHeaderKey(name)] = true
			}
		}
	}
	for k, vs := range src {
		if !skip[k] {
			dst[k] = append(dst[k][:0:0], vs...)
		}
	}
}

// upstreamHeader fills h, the upstream request's headers: the client's
// end-to-end headers without its key (x-api-key, x-goog-api-key or
// Authorization), its X-Cicy-* headers or its
// Accept-Encoding, then the real credential, X-Cicy-Pane and
// Accept-Encoding: identity (the gateway reads the bytes it relays).
func (x *exchange) upstreamHeader(h http.Header) {
	copyEndToEnd(h, x.r.Header)
	for k := range h {
		if strings.HasPrefix(k, "X-Cicy-") {
			delete(h, k)
		}
	}
	h.Del("X-Api-Key")
	h.Del("X-Goog-Api-Key")
	h.Del("Authorization")
	h.Del("Content-Length")
	h.Set("Accept-Encoding", "identity")
	h.Set("X-Cicy-Pane", x.call.Pane)
	cred := x.g.cfg.Credential
	switch x.route.api {
	case Anthropic:
		if k := cred("ANTHROPIC_API_KEY"); k != "" {
			h.Set("X-Api-Key", k)
		} else if t := cred("ANTHROPIC_AUTH_TOKEN"); t != "" {
			h.Set("Authorization", "Bearer "+t)
		}
	case Gemini:
		if k := firstSet(cred("GEMINI_API_KEY"), cred("GOOGLE_API_KEY")); k != "" {
			h.Set("X-Goog-Api-Key", k)
		}
	default:
		if k := cred("OPENAI_API_KEY"); k != "" {
			h.Set("Authorization", "Bearer "+k)
		}
	}
}

// firstSet is the first of vs that is not empty, or "".
func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
