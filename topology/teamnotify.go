package topology

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A team file's notify: section — the sinks the team's events go to
// (docs/notifications.md), added (or replaced) by up.

// SinkTypes are the notification sink types.
var SinkTypes = []string{"webhook", "ntfy", "slack", "telegram", "command"}

// NotifyEvents are the events a sink's filter names (a needs-you event
// may be named with its kind too: needs-you:approval).
var NotifyEvents = []string{"needs-you", "task-failed", "goal-done", "budget-reached", "node-down"}

// SinkNeedsSecret reports whether a sink of type typ cannot work without a
// secret: a webhook signs with it, a Telegram bot's token and a Slack
// webhook's URL are one.
func SinkNeedsSecret(typ string) bool { return typ == "webhook" || typ == "telegram" || typ == "slack" }

// TeamSink is one sink of a team file. Its secret is named, never
// written: a file (secret_file, relative to the team file) or a variable
// of the supervisor's environment (secret_env).
type TeamSink struct {
	Name       string   `yaml:"name"`
	Type       string   `yaml:"type"`
	URL        string   `yaml:"url"`
	Chat       string   `yaml:"chat"`
	Events     []string `yaml:"events"`
	SecretFile string   `yaml:"secret_file"`
	SecretEnv  string   `yaml:"secret_env"`
	Line       int      `yaml:"-"`
}

var (
	sinkKeys    = []string{"name", "type", "url", "chat", "events", "secret_file", "secret_env"}
	sinkNameRe  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$`)
	envNameRe   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	eventKindRe = regexp.MustCompile(`^needs-you:[a-z][a-z-]*$`)
)

// ValidSinkEvent reports whether ev can be in a sink's events filter.
func ValidSinkEvent(ev string) bool {
	return slices.Contains(NotifyEvents, ev) || eventKindRe.MatchString(ev)
}

// sinks reads the team's notify: list.
func (p *parser) sinks(e entry) ([]TeamSink, error) {
	n := deref(e.value)
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n.Line, `"notify" must be a list of sinks (one "- name: …" entry each), not %s`, kindName(n))
	}
	var out []TeamSink
	seen := map[string]int{}
	for _, item := range n.Content {
		s, err := p.sink(deref(item))
		if err != nil {
			return nil, err
		}
		if l, dup := seen[s.Name]; dup {
			return nil, p.errf(s.Line, "sink name %q is used twice (lines %d and %d)", s.Name, l, s.Line)
		}
		seen[s.Name] = s.Line
		out = append(out, s)
	}
	return out, nil
}

// sink reads and checks one sink.
func (p *parser) sink(n *yaml.Node) (TeamSink, error) {
	s := TeamSink{Line: n.Line}
	if n.Kind != yaml.MappingNode {
		return s, p.errf(n.Line, "a sink must be a mapping with name, type and the keys its type needs, not %s", kindName(n))
	}
	fields, err := p.mapping(n, "in a sink", sinkKeys)
	if err != nil {
		return s, err
	}
	text := func(key string) (string, error) {
		e, ok := fields[key]
		if !ok {
			return "", nil
		}
		return p.scalar(e, `the sink's "`+key+`"`)
	}
	for _, f := range []struct {
		key string
		to  *string
	}{{"name", &s.Name}, {"type", &s.Type}, {"url", &s.URL}, {"chat", &s.Chat}, {"secret_file", &s.SecretFile}, {"secret_env", &s.SecretEnv}} {
		if *f.to, err = text(f.key); err != nil {
			return s, err
		}
	}
	if err := p.sinkRules(n.Line, s); err != nil {
		return s, err
	}
	if s.SecretFile != "" {
		s.SecretFile = expandHome(s.SecretFile)
		if !filepath.IsAbs(s.SecretFile) {
			s.SecretFile = filepath.Join(p.dir, s.SecretFile)
		}
	}
	if e, ok := fields["events"]; ok {
		if s.Events, err = p.sinkEvents(e, s.Name); err != nil {
			return s, err
		}
	}
	return s, nil
}

// sinkRules checks what a sink's type needs of it.
func (p *parser) sinkRules(line int, s TeamSink) error {
	where := "a sink"
	if s.Name != "" {
		where = "sink " + s.Name
	}
	switch {
	case !sinkNameRe.MatchString(s.Name):
		return p.errf(line, "%s needs a name: letters, digits, - and _ (at most 40)", where)
	case !slices.Contains(SinkTypes, s.Type):
		return p.errf(line, "%s: type must be one of %s", where, strings.Join(SinkTypes, ", "))
	case s.SecretFile != "" && s.SecretEnv != "":
		return p.errf(line, "%s: give its secret in secret_file or secret_env, not both", where)
	case s.SecretEnv != "" && !envNameRe.MatchString(s.SecretEnv):
		return p.errf(line, "%s: secret_env %q is not a variable name", where, s.SecretEnv)
	case SinkNeedsSecret(s.Type) && s.SecretFile == "" && s.SecretEnv == "":
		return p.errf(line, "%s has no secret: a %s sink needs one, named by secret_file (a file only you can read) or secret_env (a variable of the supervisor's environment)", where, s.Type)
	case s.Type == "telegram" && s.Chat == "":
		return p.errf(line, "%s: a telegram sink needs its chat id (chat: 123456789)", where)
	case s.Type == "slack" && s.URL != "":
		return p.errf(line, "%s: a Slack webhook's URL is its secret: put it in secret_file or secret_env, not url", where)
	case s.Type != "slack" && s.Type != "telegram" && s.URL == "":
		return p.errf(line, "%s: a %s sink needs its url", where, s.Type)
	}
	return nil
}

// sinkEvents reads a sink's events filter.
func (p *parser) sinkEvents(e entry, name string) ([]string, error) {
	where := "sink " + name
	var events []string
	v := deref(e.value)
	switch v.Kind {
	case yaml.ScalarNode:
		events = strings.Split(v.Value, ",")
	case yaml.SequenceNode:
		for _, it := range v.Content {
			events = append(events, deref(it).Value)
		}
	default:
		return nil, p.errf(v.Line, "%s: events must be a list of event names", where)
	}
	for i, ev := range events {
		events[i] = strings.TrimSpace(ev)
		if !ValidSinkEvent(events[i]) {
			return nil, p.errf(v.Line, "%s: unknown event %q (known: %s, or needs-you:<kind>)", where, ev, strings.Join(NotifyEvents, ", "))
		}
	}
	return events, nil
}

// expandHome turns a leading ~/ into the user's home folder.
func expandHome(path string) string {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, rest)
		}
	}
	return path
}
