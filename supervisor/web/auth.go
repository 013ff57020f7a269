package web

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// A browser logs in with a one-time link (links) and is then known by a
// session cookie whose secret only the browser holds: the sessions file
// keeps its SHA-256, so a copy of the file logs no one in. A session's
// CSRF token is derived from the cookie's secret, so it needs no storing
// and is unknown to whoever reads the file.

// DefaultLinkTTL is how long a login link may wait to be used.
const DefaultLinkTTL = 10 * time.Minute

// SessionIdle is how long a session may go unused before it ends.
const SessionIdle = 30 * 24 * time.Hour

// seenEvery is how often a session's last-seen time is written to the
// file at most (it is kept in memory at each request).
const seenEvery = time.Minute

// Session is a browser logged in: what the API shows of it, and the hash
// of its cookie's secret.
type Session struct {
	api.WebSession
	// Hash is the hex SHA-256 of the cookie's secret.
	Hash string `json:"hash"`
}

// Sessions are the browsers logged in, kept in memory and in a file
// (0600) so that a restart keeps them.
type Sessions struct {
	path string
	now  func() time.Time

	mu     sync.Mutex
	byHash map[string]*Session
	saved  time.Time
}

// SessionsFile is where a home's sessions are kept.
func SessionsFile(home string) string { return filepath.Join(Dir(home), "sessions.json") }

// OpenSessions reads the sessions kept in path (none when it is missing).
func OpenSessions(path string, now func() time.Time) (*Sessions, error) {
	if now == nil {
		now = time.Now
	}
	s := &Sessions{path: path, now: now, byHash: map[string]*Session{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the web sessions: %w", err)
	}
	var list []*Session
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("read the web sessions in %s (remove the file to log every browser out): %w", path, err)
	}
	for _, ss := range list {
		if ss.Hash != "" && ss.ID != "" && now().Sub(ss.LastSeen) < SessionIdle {
			s.byHash[ss.Hash] = ss
		}
	}
	return s, nil
}

// New starts a session for the browser of r; secret goes in its cookie.
func (s *Sessions) New(userAgent, remoteAddr string) (secret string, ss Session, err error) {
	secret = randomText(32)
	id := randomHex(4)
	now := s.now()
	n := &Session{WebSession: api.WebSession{ID: id, Created: now, LastSeen: now, UserAgent: clip(userAgent, 200), RemoteAddr: remoteAddr}, Hash: hashHex(secret)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byHash[n.Hash] = n
	if err := s.saveLocked(); err != nil {
		delete(s.byHash, n.Hash)
		return "", Session{}, err
	}
	return secret, *n, nil
}

// Lookup is the session whose cookie holds secret, marked seen now.
func (s *Sessions) Lookup(secret, remoteAddr string) (Session, bool) {
	if secret == "" {
		return Session{}, false
	}
	h := hashHex(secret)
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.byHash[h]
	if !ok {
		return Session{}, false
	}
	now := s.now()
	if now.Sub(ss.LastSeen) >= SessionIdle {
		delete(s.byHash, h)
		_ = s.saveLocked()
		return Session{}, false
	}
	ss.LastSeen = now
	ss.RemoteAddr = remoteAddr
	if now.Sub(s.saved) >= seenEvery {
		_ = s.saveLocked() // kept in memory; written again at the next change
	}
	return *ss, true
}

// List is the sessions, oldest first, without their hashes.
func (s *Sessions) List() []Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Session, 0, len(s.byHash))
	for _, ss := range s.byHash {
		c := *ss
		c.Hash = ""
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Session) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// ErrNoSession is Revoke's error for an id no session has.
var ErrNoSession = errors.New("no such web session")

// Revoke ends the session id, or every one with "all"; it returns how
// many ended.
func (s *Sessions) Revoke(id string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for h, ss := range s.byHash {
		if id == "all" || ss.ID == id {
			delete(s.byHash, h)
			n++
		}
	}
	if n == 0 && id != "all" {
		return 0, fmt.Errorf("%w: %s (see 'cicy-agent web sessions')", ErrNoSession, id)
	}
	return n, s.saveLocked()
}

// Flush writes the sessions' last-seen times.
func (s *Sessions) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saveLocked()
}

// saveLocked writes the file whole (a temporary file renamed over it).
func (s *Sessions) saveLocked() error {
	list := make([]*Session, 0, len(s.byHash))
	for _, ss := range s.byHash {
		list = append(list, ss)
	}
	slices.SortFunc(list, func(a, b *Session) int { return strings.Compare(a.ID, b.ID) })
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	if err := writePrivate(s.path, b); err != nil {
		return fmt.Errorf("keep the web sessions: %w", err)
	}
	s.saved = s.now()
	return nil
}

// writePrivate writes b to path, readable by its owner only, through a
// temporary file renamed over it; the folder is made 0700.
func writePrivate(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Why a login link is refused.
var (
	ErrLinkUnknown = errors.New("this login link is not known here (it was made by another supervisor, or before this one restarted)")
	ErrLinkSpent   = errors.New("this login link was already used")
	ErrLinkExpired = errors.New("this login link has expired")
)

// links are the login links not yet used, by the hash of their token,
// with their expiry; spent ones are kept until theirs, to say why a second
// use is refused.
type links struct {
	now func() time.Time

	mu    sync.Mutex
	live  map[string]time.Time
	spent map[string]time.Time
}

func newLinks(now func() time.Time) *links {
	return &links{now: now, live: map[string]time.Time{}, spent: map[string]time.Time{}}
}

// mint makes a link's token, valid for ttl.
func (l *links) mint(ttl time.Duration) (string, time.Time) {
	tok := randomText(32)
	now := l.now()
	exp := now.Add(ttl)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruneLocked(now)
	l.live[hashHex(tok)] = exp
	return tok, exp
}

// spend uses the link's token once.
func (l *links) spend(tok string) error {
	h := hashHex(tok)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.spent[h]; ok {
		return ErrLinkSpent
	}
	exp, ok := l.live[h]
	if !ok {
		return ErrLinkUnknown
	}
	if !now.Before(exp) {
		return ErrLinkExpired
	}
	delete(l.live, h)
	l.spent[h] = exp
	return nil
}

// pruneLocked forgets links an hour past their expiry.
func (l *links) pruneLocked(now time.Time) {
	for _, m := range []map[string]time.Time{l.live, l.spent} {
		for h, exp := range m {
			if now.Sub(exp) > time.Hour {
				delete(m, h)
			}
		}
	}
}

// csrfOf is the CSRF token of the session whose cookie holds secret.
func csrfOf(secret string) string {
	sum := sha256.Sum256([]byte("cicy-csrf\x00" + secret))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// randomText is n random bytes as base64url text (crypto/rand.Read
// never fails: it crashes the program instead).
func randomText(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
