package web

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/topology"
)

// pageNames are the pages; each is the layout plus its own file, which
// defines "content" (the whole page's own part) and "live" (what the
// script swaps in when an event comes).
var pageNames = []string{"team", "pane", "tasks"}

func parsePages() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets,
			"assets/templates/layout.html", "assets/templates/parts.html", "assets/templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parsing the %s page: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

var funcs = template.FuncMap{
	"tokens":    tokens,
	"runClass":  runClass,
	"mul100":    func(f float64) float64 { return f * 100 },
	"usd":       usd,
	"ago":       ago,
	"need":      topology.NeedLabel,
	"firstLine": topology.FirstLine,
	"workLines": workLines,
	"lines":     func(files, added, deleted int) string { return api.Lines(files, added, deleted) },
	"amount":    budgetAmount,
	"hasWork":   func(w *api.Work) bool { return w != nil && w.Base != w.Head },
	"workStat":  func(w api.Work) string { return w.Stat() },
	"clock": func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return ""
		}
		return t.Local().Format("Jan 2 15:04:05")
	},
}

// tokens is a token count as people read it: 950, 12.3k, 4.1M.
func tokens(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
}

// usd is a cost, or "" when it is unknown.
func usd(v *float64) string {
	if v == nil {
		return ""
	}
	return api.USD(*v)
}

// budgetAmount is a budget as the budget form shows it ("" for none).
func budgetAmount(v *float64) string {
	if v == nil {
		return ""
	}
	return api.Amount(*v)
}

// ago is how long since t, short: 5s, 3m, 2h, 4d.
func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// workLines is a worktree worker's unmerged work: "2↑ +18 −3", or "".
func workLines(w topology.Work) string {
	if w.Branch == "" || w.Ahead+w.Added+w.Deleted == 0 {
		return ""
	}
	return api.AheadLines(w.Ahead, w.Added, w.Deleted)
}

// option is one numbered choice of a CLI agent's dialog.
type option struct {
	N     int
	Label string
}

// dialogOptions are a dialog's choices (as its agent's registry entry
// read them: the screen response's dialog), numbered from 1, each label cut.
func dialogOptions(labels []string) []option {
	out := make([]option, 0, len(labels))
	for i, label := range labels {
		if r := []rune(label); len(r) > 60 {
			label = string(r[:60]) + "…"
		}
		out = append(out, option{N: i + 1, Label: label})
	}
	return out
}

// diffLine is one line of a diff and its highlight class.
type diffLine struct {
	Class string // d-add, d-del, d-hunk, d-file or ""
	Text  string
}

// maxDiffLines bounds a diff shown in the page.
const maxDiffLines = 5000

// diffLines splits git's diff text into highlighted lines.
func diffLines(diff string) (out []diffLine, cut int) {
	lines := strings.Split(strings.TrimRight(diff, "\n"), "\n")
	if len(lines) > maxDiffLines {
		cut = len(lines) - maxDiffLines
		lines = lines[:maxDiffLines]
	}
	out = make([]diffLine, 0, len(lines))
	for _, l := range lines {
		out = append(out, diffLine{Class: diffClass(l), Text: l})
	}
	return out, cut
}

func diffClass(l string) string {
	switch {
	case strings.HasPrefix(l, "diff --git"), strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "),
		strings.HasPrefix(l, "index "), strings.HasPrefix(l, "new file"), strings.HasPrefix(l, "deleted file"):
		return "d-file"
	case strings.HasPrefix(l, "@@"):
		return "d-hunk"
	case strings.HasPrefix(l, "+"):
		return "d-add"
	case strings.HasPrefix(l, "-"):
		return "d-del"
	}
	return ""
}
