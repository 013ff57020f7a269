package provider

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// Prompt-cache rules of the Anthropic Messages API that the simulator
// follows (see docs/scripted-model.md).
const (
	// cacheTTL is the lifetime of an ephemeral entry, refreshed on read.
	cacheTTL = 5 * time.Minute
	// cacheLookback is how many block boundaries before a breakpoint are
	// also checked for a hit.
	cacheLookback = 20
)

// CacheSim simulates Anthropic's prompt cache so that the scripted model
// reports usage (input, cache_creation and cache_read tokens) the way the
// real API would, and tests can measure cache hits deterministically.
// It is safe for concurrent use.
type CacheSim struct {
	// MinTokens is the shortest prefix that is cached (the API's per-model
	// minimum, e.g. 1024); shorter prefixes are neither written nor read,
	// silently, like the real API. 0 caches every prefix.
	MinTokens int64

	now     func() time.Time
	mu      sync.Mutex
	entries map[[32]byte]time.Time // prefix hash → expiry
}

// NewCacheSim returns an empty cache whose clock is now (nil: time.Now).
func NewCacheSim(now func() time.Time) *CacheSim {
	if now == nil {
		now = time.Now
	}
	return &CacheSim{now: now, entries: map[[32]byte]time.Time{}}
}

// boundary is the end of one block of the rendered prompt (a tool, a
// system block or a message content block): the prefix up to and
// including that block.
type boundary struct {
	hash       [32]byte // hash of every canonical byte up to here
	tokens     int64    // estimated tokens up to here
	breakpoint bool     // the block carries cache_control
}

// Usage returns the usage Anthropic would report for req, and updates the
// cache as the API would: the longest live prefix within the lookback of
// a breakpoint is read (and its TTL refreshed), then every breakpoint's
// prefix is written. InputTokens + CacheCreationInputTokens +
// CacheReadInputTokens is the whole prompt.
func (c *CacheSim) Usage(req *wire.Request, outputTokens int64) wire.Usage {
	bounds, total := renderPrompt(req)
	u := wire.Usage{OutputTokens: outputTokens, InputTokens: total}

	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.dropExpired(now)

	last := lastBreakpoint(bounds)
	// Prefix tokens only grow, so when the last breakpoint is below the
	// minimum every breakpoint is, and nothing is cached at all.
	if last < 0 || bounds[last].tokens < c.MinTokens {
		return u
	}
	read := c.read(bounds, now)
	c.write(bounds, now)
	written := bounds[last].tokens
	u.CacheReadInputTokens = read
	u.CacheCreationInputTokens = written - read
	u.InputTokens = total - written
	return u
}

// PromptTokens is the estimated size of req's prompt, the sum of the three
// input fields of its usage.
func PromptTokens(req *wire.Request) int64 {
	_, total := renderPrompt(req)
	return total
}

// read finds the longest cached prefix at a breakpoint or at one of the
// cacheLookback boundaries before it, refreshes it and returns its tokens.
// Every breakpoint looks back on its own (as the API does), which is why an
// intermediate breakpoint keeps a long tool loop within reach of the cache.
func (c *CacheSim) read(bounds []boundary, now time.Time) int64 {
	candidate := make([]bool, len(bounds))
	for i, b := range bounds {
		if b.breakpoint {
			for j := max(0, i-cacheLookback); j <= i; j++ {
				candidate[j] = true
			}
		}
	}
	for i := len(bounds) - 1; i >= 0; i-- {
		if !candidate[i] || bounds[i].tokens < c.MinTokens {
			continue
		}
		if _, ok := c.entries[bounds[i].hash]; ok {
			c.entries[bounds[i].hash] = now.Add(cacheTTL)
			return bounds[i].tokens
		}
	}
	return 0
}

// write stores (or refreshes) the prefix of every breakpoint long enough
// to be cached.
func (c *CacheSim) write(bounds []boundary, now time.Time) {
	for _, b := range bounds {
		if b.breakpoint && b.tokens >= c.MinTokens {
			c.entries[b.hash] = now.Add(cacheTTL)
		}
	}
}

// dropExpired keeps the map bounded by the entries of the last 5 minutes.
func (c *CacheSim) dropExpired(now time.Time) {
	for h, exp := range c.entries {
		if !now.Before(exp) {
			delete(c.entries, h)
		}
	}
}

func lastBreakpoint(bounds []boundary) int {
	for i := len(bounds) - 1; i >= 0; i-- {
		if bounds[i].breakpoint {
			return i
		}
	}
	return -1
}

// renderPrompt walks req in the API's prefix order (tools → system →
// messages) and returns every block boundary and the total tokens. Each
// message's role is a unit of its own: it adds bytes and tokens but is no
// block boundary (a breakpoint can only sit on a block).
func renderPrompt(req *wire.Request) ([]boundary, int64) {
	p := newPrefix(req.Model)
	var bounds []boundary
	for _, t := range req.Tools {
		bp := t.CacheControl != nil
		t.CacheControl = nil
		p.add('t', canonicalJSON(t))
		bounds = append(bounds, p.boundary(bp))
	}
	for _, b := range req.System {
		p.add('s', canonicalBlock(b))
		bounds = append(bounds, p.boundary(b.CacheControl != nil))
	}
	for _, m := range req.Messages {
		p.add('r', canonicalJSON(m.Role))
		for _, b := range m.Content {
			p.add('b', canonicalBlock(b))
			bounds = append(bounds, p.boundary(b.CacheControl != nil))
		}
	}
	return bounds, p.tokens
}

// prefix is a running hash and token count of the rendered prompt. The
// hash is chained (each step hashes the previous hash, a kind tag, the
// length and the bytes), which identifies the whole byte prefix without
// rehashing it at every boundary.
type prefix struct {
	hash   [32]byte
	tokens int64
}

// newPrefix seeds the chain with the model: the cache is per model.
func newPrefix(model string) *prefix {
	return &prefix{hash: sha256.Sum256([]byte("model\x00" + model))}
}

func (p *prefix) add(kind byte, data []byte) {
	h := sha256.New()
	h.Write(p.hash[:])
	h.Write([]byte{kind})
	h.Write(binary.AppendUvarint(nil, uint64(len(data))))
	h.Write(data)
	h.Sum(p.hash[:0])
	p.tokens += estimateTokens(len(data))
}

func (p *prefix) boundary(breakpoint bool) boundary {
	return boundary{hash: p.hash, tokens: p.tokens, breakpoint: breakpoint}
}

// estimateTokens is the fixed estimator ceil(bytes/4).
func estimateTokens(n int) int64 { return int64((n + 3) / 4) }

// canonicalBlock is the block's JSON without its cache_control, so moving
// a breakpoint does not change the bytes of the prefix.
func canonicalBlock(b wire.Block) []byte {
	b.CacheControl = nil
	return canonicalJSON(b)
}

// canonicalJSON encodes v; a value json cannot encode (a tool_use input
// that is not valid JSON) falls back to its Go rendering, which is still
// deterministic.
func canonicalJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Appendf(nil, "%#v", v)
	}
	return b
}
