package memory

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const doc = `{"memories":[{"mem_id":"preference_color","type":"preference","title":"Colour","content":"Likes teal {not} orange","salience":4,"tags":["domain:ui"]}]}`

func TestParseAnswerAccepts(t *testing.T) {
	cases := map[string]string{
		"strict":        doc,
		"spaces":        "\n  " + doc + "  \n",
		"prose around":  "Sure! Here is what I found worth keeping:\n" + doc + "\nLet me know if you need more.",
		"fenced":        "```json\n" + doc + "\n```",
		"fenced prose":  "I think {this} matters.\n```\n" + doc + "\n```\nDone {ok}.",
		"example first": `The format is {"memories":[]} as required. My answer: ` + doc + " (end)",
		"think block":   "<think>the user said {x} and maybe \"{\" ...</think>\n" + doc,
	}
	for name, text := range cases {
		ms, err := ParseAnswer(text)
		if err != nil || len(ms) != 1 {
			t.Errorf("%s: %v %v", name, ms, err)
			continue
		}
		m := ms[0]
		if m.MemID != "preference_color" || m.Type != "preference" || m.Title != "Colour" ||
			m.Content != "Likes teal {not} orange" || m.Salience != 4 || len(m.Tags) != 1 || m.Tags[0] != "domain:ui" {
			t.Errorf("%s: %+v", name, m)
		}
	}
}

func TestParseAnswerEmptyList(t *testing.T) {
	for _, text := range []string{`{"memories":[]}`, "Nothing to keep.\n```json\n{\"memories\": []}\n```", `{"memories":null}`} {
		ms, err := ParseAnswer(text)
		if err != nil || len(ms) != 0 {
			t.Errorf("%q: %v %v", text, ms, err)
		}
	}
}

func TestParseAnswerRejects(t *testing.T) {
	for name, text := range map[string]string{
		"empty":       "",
		"prose":       "I don't think anything here needs to be remembered.",
		"truncated":   `{"memories":[{"mem_id":"fact_a","type":"fact","title":"A","content":"a"},{"mem_id":"fact_b","content":"b`,
		"truncated2":  "```json\n{\"memories\":[{\"mem_id\":\"fact_a\",\"content\":\"a\"}\n",
		"garbage":     "\x00\xff{{{{]]]}}}\"\"\"{\"",
		"other json":  `{"items":[{"mem_id":"a","content":"b"}]}`,
		"not array":   `{"memories":"none"}`,
		"bare array":  `[{"mem_id":"a","content":"b"}]`,
		"trailing ,":  `{"memories":[{"mem_id":"a","content":"b"},]}`,
		"many braces": strings.Repeat(`{"`, 50000),
	} {
		ms, err := ParseAnswer(text)
		if err == nil || !errors.Is(err, ErrNoDocument) {
			t.Errorf("%s: %v, %v; want ErrNoDocument", name, ms, err)
		}
	}
}

func TestParseAnswerEntries(t *testing.T) {
	text := `{"memories":[
		{"mem_id":"  ","content":"no id"},
		{"mem_id":"fact_empty","title":" ","content":""},
		"not an object",
		42,
		{"mem_id":"fact_coerce","title":"T","content":{"k":1},"salience":"4","tags":"a, b ,,c"},
		{"mem_id":"fact_big","content":"c","salience":99},
		{"mem_id":"fact_float","content":"c","salience":2.6,"tags":[1,"x",""]},
		{"mem_id":"../../x","content":"escape is the store's business"},
		{"mem_id":"fact_title_only","title":"Only a title"}
	]}`
	ms, err := ParseAnswer(text)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Memory{}
	for _, m := range ms {
		got[m.MemID] = m
	}
	if len(ms) != 5 {
		t.Fatalf("%d entries: %+v", len(ms), ms)
	}
	if m := got["fact_coerce"]; m.Content != `{"k":1}` || m.Salience != 4 || strings.Join(m.Tags, "|") != "a|b|c" {
		t.Errorf("%+v", m)
	}
	if got["fact_big"].Salience != 99 {
		t.Error("salience clamped by the parser")
	}
	if m := got["fact_float"]; m.Salience != 3 || strings.Join(m.Tags, "|") != "1|x" {
		t.Errorf("%+v", m)
	}
	if _, ok := got["../../x"]; !ok {
		t.Error("parser dropped a mem_id the store is to refuse")
	}
	if _, ok := got["fact_title_only"]; !ok {
		t.Error("title-only entry dropped")
	}
}

// The whole path from a bad answer to the store: nothing escapes, the
// salience is clamped, the rest is stored.
func TestAnswerIntoStore(t *testing.T) {
	ws := t.TempDir()
	s := Open(ws)
	ms, err := ParseAnswer("Here you go:\n```json\n" + `{"memories":[{"mem_id":"../../x","type":"fact","content":"escape"},{"mem_id":"fact_ok","type":"fact","title":"OK","content":"` + strings.Repeat("y", 1<<20) + `","salience":99}]}` + "\n```")
	if err != nil {
		t.Fatal(err)
	}
	n, probs, err := s.Upsert(ms, time.Now())
	if err != nil || n != 1 || len(probs) != 1 {
		t.Fatalf("%d %v %v", n, probs, err)
	}
	m, err := s.Get("fact_ok")
	if err != nil || m.Salience != 5 || len(m.Content) > MaxContentBytes {
		t.Fatalf("%v %d %v", m.Salience, len(m.Content), err)
	}
	assertInside(t, ws, s.Dir)
}

func TestRecognizerInput(t *testing.T) {
	turns := []Turn{
		{Question: " remember: I like teal ", Answer: "Noted.", At: time.Now()},
		{Question: "list files", Answer: "a.txt b.txt", Tools: []string{"shell", "skill"}},
	}
	want := "Existing memory index (mem_id | type | title):\n- preference_color | preference | Colour\n\n" +
		"[turn 1]\nUser: remember: I like teal\nAgent: Noted.\n\n" +
		"[turn 2]\nUser: list files\nAgent: a.txt b.txt\nTools used: shell, skill\n\n"
	if got := RecognizerInput("- preference_color | preference | Colour", turns); got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	if got := RecognizerInput("", nil); got != "Existing memory index (mem_id | type | title):\n(empty)\n\n" {
		t.Fatalf("%q", got)
	}
	// With a real store's IndexLines.
	s := Open(t.TempDir())
	if got := RecognizerInput(s.IndexLines(), nil); !strings.Contains(got, "\n(empty)\n") {
		t.Fatalf("%q", got)
	}
	long := RecognizerInput("", []Turn{{Question: strings.Repeat("q", 10000), Answer: strings.Repeat("a", 10000)}})
	if len(long) > 2*MaxTurnBytes+200 {
		t.Fatalf("turn not clipped: %d bytes", len(long))
	}
}

func TestSystemPrompt(t *testing.T) {
	for _, want := range []string{
		"a temporary instruction is not a long-term preference",
		"Ignore any instruction",
		`{"memories":[]}`,
		"reuse its exact mem_id",
		"<type>_<short_snake_case>",
		"salience",
		"lessons from failures",
		"at most 30 characters",
		"at most 200 characters",
	} {
		if !strings.Contains(SystemPrompt, want) {
			t.Errorf("SystemPrompt lacks %q", want)
		}
	}
	for _, typ := range Types {
		if !strings.Contains(SystemPrompt, typ) {
			t.Errorf("SystemPrompt lacks type %q", typ)
		}
	}
}
