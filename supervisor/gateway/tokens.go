package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sync"
)

// TokenPrefix starts every pane token: the prefix and 48 hex digits (192
// random bits). Its shape lets logs and results be scrubbed of it.
const TokenPrefix = "cicy-pane-"

// TokenPattern matches a whole pane token, for scrubbing it from text.
var TokenPattern = regexp.MustCompile(TokenPrefix + `[0-9a-f]{48}`)

// NewToken makes a new secret token for a pane, and the hash it is kept
// as (HashToken): the token itself is kept nowhere but in the pane's
// environment.
func NewToken() (tok, hash string, err error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("make a gateway token: %w", err)
	}
	tok = TokenPrefix + hex.EncodeToString(b)
	return tok, HashToken(tok), nil
}

// HashToken is how a token is kept: its SHA-256, in hex.
func HashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// Tokens maps token hashes to panes, one token a pane: what the
// supervisor answers the gateway's Panes.Pane with. It is safe for
// concurrent use.
type Tokens struct {
	mu     sync.RWMutex
	byHash map[string]string
}

// NewTokens is the registry of the stored tokens, pane by hash (taken
// over: the caller keeps no hold of it).
func NewTokens(byHash map[string]string) *Tokens {
	if byHash == nil {
		byHash = map[string]string{}
	}
	return &Tokens{byHash: byHash}
}

// Pane is the pane whose token tok is.
func (t *Tokens) Pane(tok string) (string, bool) {
	h := HashToken(tok)
	t.mu.RLock()
	defer t.mu.RUnlock()
	id, ok := t.byHash[h]
	return id, ok
}

// Set makes h the pane's one token hash.
func (t *Tokens) Set(id, h string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetLocked(id)
	t.byHash[h] = id
}

// Forget drops the pane's token (the pane is gone).
func (t *Tokens) Forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetLocked(id)
}

func (t *Tokens) forgetLocked(id string) {
	for h, p := range t.byHash {
		if p == id {
			delete(t.byHash, h)
		}
	}
}
