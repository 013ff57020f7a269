package fakellm

import (
	"encoding/json"
	"testing"
	"time"
)

func TestFillJSON(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{``, `{}`},
		{`{"type":"object","properties":{"title":{"type":"string","maxLength":36}},"required":["title"],"additionalProperties":false}`,
			`{"title":"fake-llm"}`},
		{`{"properties":{"a":{"type":"string","maxLength":2},"b":{"type":["null","boolean"]}}}`, `{"a":"fa","b":false}`},
		{`{"type":"object","properties":{"s":{"type":"string","minLength":12}},"required":["s"]}`, `{"s":"fake-llmxxxx"}`},
		{`{"type":"object","properties":{"k":{"enum":["x","y"]},"c":{"const":7},"u":{"anyOf":[{"type":"integer","exclusiveMinimum":4},{"type":"string"}]}},"required":["k","c","u"]}`,
			`{"c":7,"k":"x","u":5}`},
		{`{"type":"object","properties":{"n":{"type":"number","maximum":-2},"l":{"type":"array","minItems":2,"items":{"type":"integer"}}},"required":["n","l","missing"]}`,
			`{"l":[0,0],"missing":null,"n":-2}`},
		{`{"type":"string","maxLength":0}`, `""`},
	} {
		if got := fillJSON(json.RawMessage(c.schema)); got != c.want {
			t.Errorf("fillJSON(%s) = %s, want %s", c.schema, got, c.want)
		}
	}
}

func TestParseDirectives(t *testing.T) {
	d := parseDirectives("a [[reply= x\ny ]] b [[delay=0.5]] [[reply=second]] [[unknown=1]] [[shell=ls -a]]")
	want := map[string]string{"reply": "second", "delay": "0.5", "shell": "ls -a"}
	if len(d) != len(want) {
		t.Fatalf("got %v, want %v", d, want)
	}
	for k, v := range want {
		if d[k] != v {
			t.Errorf("%s = %q, want %q", k, d[k], v)
		}
	}
}

func TestTurnStatusAndDelay(t *testing.T) {
	for _, c := range []struct {
		prompt string
		status int
		delay  time.Duration
	}{
		{"[[status=529]] [[delay=1.5]]", 529, 1500 * time.Millisecond},
		{"[[status=200]] [[delay=-1]]", 0, 0},
		{"[[status=abc]] [[delay=NaN]]", 0, 0},
		{"[[delay=1e300]]", 0, maxDelay},
	} {
		tr := turn{prompt: c.prompt, offersTools: true}
		if got := tr.status(); got != c.status {
			t.Errorf("%q: status %d, want %d", c.prompt, got, c.status)
		}
		if got := tr.delay(); got != c.delay {
			t.Errorf("%q: delay %v, want %v", c.prompt, got, c.delay)
		}
	}
	if d := (&turn{prompt: "[[delay=1]]"}).delay(); d != 0 {
		t.Errorf("no tools: delay %v", d)
	}
}

func TestTruncateRunes(t *testing.T) {
	if got := truncateRunes("héllo", 2); got != "hé" {
		t.Errorf("truncateRunes = %q", got)
	}
}

func TestCacheDirectiveClamped(t *testing.T) {
	cases := []struct {
		prompt      string
		in          int
		read, write int
	}{
		{"no directive", 100, 0, 0},
		{"[[cache=30/20]]", 100, 30, 20},
		{"[[cache=30]]", 100, 30, 0},
		{"[[cache=90/50]]", 100, 90, 10},
		{"[[cache=500]]", 100, 100, 0},
		{"[[cache=-3/x]]", 100, 0, 0},
	}
	for _, c := range cases {
		tr := turn{prompt: c.prompt}
		if r, w := tr.cache(c.in); r != c.read || w != c.write {
			t.Errorf("%q of %d: cache %d/%d, want %d/%d", c.prompt, c.in, r, w, c.read, c.write)
		}
	}
}
