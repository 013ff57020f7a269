package gateway

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
)

func TestEventEnd(t *testing.T) {
	cases := []struct {
		in   string
		want int
	}{
		{"data: x\n\nrest", 9},
		{"event: a\r\ndata: x\r\n\r\nrest", 21},
		{"data: x\r\rrest", 9},
		{"data: x\n", -1},
		{"data: x\r\n\r", -1}, // the last \r may start \r\n
		{"\nrest", 1},
		{"data: x", -1},
	}
	for _, c := range cases {
		if got := eventEnd([]byte(c.in)); got != c.want {
			t.Errorf("eventEnd(%q) = %d, want %d", c.in, got, c.want)
		}
	}
	name, data := eventFields([]byte("event: message_delta\r\ndata: {\"a\":\r\ndata:1}\r\n\r\n"))
	if string(name) != "message_delta" || string(data) != "{\"a\":\n1}" {
		t.Errorf("fields %q %q", name, data)
	}
}

// chunked feeds b to the client in random small reads.
type chunked struct {
	b   []byte
	rng *rand.Rand
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(1+c.rng.IntN(40), len(c.b), len(p))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

func TestFramesByteIdenticalUnderAnySplit(t *testing.T) {
	stream := []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":9,\"cache_read_input_tokens\":4,\"output_tokens\":1}}}\n\n" +
		": comment\r\n\r\nevent: ping\r\ndata: {}\r\n\r\n" +
		"event: message_delta\rdata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":17}}\r\r" +
		"data: trailing without end")
	for seed := range uint64(200) {
		rec := httptest.NewRecorder()
		x := &exchange{w: rec, r: httptest.NewRequest(http.MethodPost, "/", nil)}
		mt := &meter{api: Anthropic}
		x.pipe(&chunked{b: stream, rng: rand.New(rand.NewPCG(seed, 1))}, mt.frames, nil)
		if !bytes.Equal(rec.Body.Bytes(), stream) {
			t.Fatalf("seed %d: got %q", seed, rec.Body.Bytes())
		}
		if mt.tok != (tokens{input: 9, output: 17, cacheRead: 4}) || mt.model != "m" {
			t.Fatalf("seed %d: tokens %+v model %q", seed, mt.tok, mt.model)
		}
	}
}

func TestOpenAIUsageMapping(t *testing.T) {
	hit, miss := int64(30), int64(70)
	cases := []struct {
		u    provider.OpenAIUsage
		want tokens
	}{
		{provider.OpenAIUsage{PromptTokens: 100, CompletionTokens: 5, PromptTokensDetails: &provider.CachedTokens{CachedTokens: 40}}, tokens{input: 60, output: 5, cacheRead: 40}},
		{provider.OpenAIUsage{InputTokens: 50, OutputTokens: 2, InputTokensDetails: &provider.CachedTokens{CachedTokens: 50}}, tokens{input: 0, output: 2, cacheRead: 50}},
		{provider.OpenAIUsage{PromptCacheHitTokens: &hit, PromptCacheMissTokens: &miss, CompletionTokens: 1}, tokens{input: 70, output: 1, cacheRead: 30}},
	}
	for i, c := range cases {
		if got := openAITokens(&c.u); got != c.want {
			t.Errorf("case %d: %+v, want %+v", i, got, c.want)
		}
	}
}

func TestWithIncludeUsageKeepsOtherOptions(t *testing.T) {
	out, err := withIncludeUsage([]byte(`{"model":"x","stream":true,"stream_options":{"continuous_usage_stats":false},"messages":[{"role":"user","content":"<b>"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"role":"user","content":"<b>"}],"model":"x","stream":true,"stream_options":{"continuous_usage_stats":false,"include_usage":true}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}
