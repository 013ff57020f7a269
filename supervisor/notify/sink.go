package notify

import (
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultTelegramURL is the Telegram Bot API's base, a telegram sink's
// URL when it names none.
const DefaultTelegramURL = "https://api.telegram.org"

// maxName is the longest sink name.
const maxName = 40

// WithDefaults returns the sink with what it leaves out filled in: a
// telegram sink's URL is the Bot API's base.
func (s Sink) WithDefaults() Sink {
	if s.Type == TypeTelegram && strings.TrimSpace(s.URL) == "" {
		s.URL = DefaultTelegramURL
	}
	return s
}

// Validate says what is wrong with the sink, if anything (its defaults
// filled in first): its name, type, URL, chat, secret and events filter.
func (s Sink) Validate() error {
	s = s.WithDefaults()
	if err := validName(s.Name); err != nil {
		return err
	}
	if !slices.Contains(Types, s.Type) {
		return fmt.Errorf("sink %s: unknown type %q (one of %s)", s.Name, s.Type, strings.Join(Types, ", "))
	}
	if err := validSecret(s.Secret); err != nil {
		return fmt.Errorf("sink %s: %w", s.Name, err)
	}
	if err := s.validTarget(); err != nil {
		return fmt.Errorf("sink %s: %w", s.Name, err)
	}
	for _, ev := range s.Events {
		if err := validEvent(ev); err != nil {
			return fmt.Errorf("sink %s: %w", s.Name, err)
		}
	}
	return nil
}

func validName(name string) error {
	if name == "" {
		return errors.New("a sink needs a name (letters, digits, '-' and '_')")
	}
	if len(name) > maxName {
		return fmt.Errorf("sink name %q is longer than %d characters", name, maxName)
	}
	for _, r := range name {
		if !isLetter(r) && !isDigit(r) && r != '-' && r != '_' {
			return fmt.Errorf("sink name %q: use only letters, digits, '-' and '_'", name)
		}
	}
	return nil
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }
func isDigit(r rune) bool  { return r >= '0' && r <= '9' }

// validSecret refuses a secret that would break a header or a URL: one
// with a line break or a NUL (as a token file read with its newline
// would be, were it not trimmed).
func validSecret(secret string) error {
	if strings.ContainsAny(secret, "\r\n\x00") {
		return errors.New("the secret is a token with newlines (or a NUL): give it on one line, without its line break")
	}
	if !utf8.ValidString(secret) {
		return errors.New("the secret is not valid UTF-8")
	}
	return nil
}

// validEvent accepts one of Events, or "needs-you:<kind>".
func validEvent(ev string) error {
	if slices.Contains(Events, ev) {
		return nil
	}
	if kind, ok := strings.CutPrefix(ev, EventNeedsYou+":"); ok && kind != "" {
		for _, r := range kind {
			if !isLetter(r) && r != '-' {
				return fmt.Errorf("event %q: a needs-you kind is letters and '-' (needs-you:approval)", ev)
			}
		}
		return nil
	}
	return fmt.Errorf("unknown event %q (one of %s, or needs-you:KIND)", ev, strings.Join(Events, ", "))
}

func (s Sink) validTarget() error {
	switch s.Type {
	case TypeTelegram:
		return s.validTelegram()
	case TypeCommand:
		if s.Chat != "" {
			return errors.New("a command sink takes no chat")
		}
		_, err := commandArgs(s.URL)
		return err
	case TypeSlack:
		return s.validSlack()
	case TypeNtfy:
		u, err := httpURL(s.URL, "url")
		if err == nil && strings.Trim(u.Path, "/") == "" {
			return fmt.Errorf("url %s names no topic (https://ntfy.sh/TOPIC)", s.MaskedURL())
		}
		return err
	default:
		_, err := httpURL(s.URL, "url")
		return err
	}
}

func (s Sink) validTelegram() error {
	if _, err := httpURL(s.URL, "url (the Bot API's base)"); err != nil {
		return err
	}
	if s.Chat == "" {
		return errors.New("a telegram sink needs its chat id (--chat; a number, negative for a group)")
	}
	if _, err := strconv.ParseInt(s.Chat, 10, 64); err != nil {
		return fmt.Errorf("chat %q is not a chat id (a number, negative for a group)", s.Chat)
	}
	if s.Secret == "" {
		return errors.New("a telegram sink needs its bot token (from @BotFather) as its secret")
	}
	for _, r := range s.Secret {
		if !isLetter(r) && !isDigit(r) && r != ':' && r != '-' && r != '_' {
			return errors.New("the bot token has a character a token never has (it looks like 123456:ABC-def_…)")
		}
	}
	return nil
}

// validSlack: the incoming webhook's URL is itself the secret, so it may
// be given as the secret (kept like a key) or as the URL, not both.
func (s Sink) validSlack() error {
	if s.Secret != "" && s.URL != "" && s.Secret != s.URL {
		return errors.New("a slack sink's secret is its webhook url: give it once (as the secret)")
	}
	if s.Chat != "" {
		return errors.New("a slack sink takes no chat (its webhook url names the channel)")
	}
	_, err := httpURL(s.slackURL(), "webhook url")
	return err
}

// slackURL is the incoming webhook's URL: the secret when set, else URL.
func (s Sink) slackURL() string {
	if s.Secret != "" {
		return s.Secret
	}
	return s.URL
}

// httpURL parses an http(s) URL with a host; its error never carries
// more of the URL than its scheme (it may be a secret).
func httpURL(raw, what string) (*url.URL, error) {
	if raw == "" {
		return nil, fmt.Errorf("no %s given (http:// or https://)", what)
	}
	if strings.ContainsAny(raw, " \t\r\n\x00") {
		return nil, fmt.Errorf("the %s has a space or a line break in it", what)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the %s does not parse as a url", what)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("the %s is not http(s) (it starts %q): give http:// or https://", what, u.Scheme+":")
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("the %s names no host", what)
	}
	return u, nil
}

// commandArgs splits a command sink's URL into the program (resolved on
// PATH unless absolute) and its arguments.
func commandArgs(line string) ([]string, error) {
	args := strings.Fields(line)
	if len(args) == 0 {
		return nil, errors.New("a command sink needs a program to run (its url: the program and its arguments)")
	}
	prog := args[0]
	if strings.Contains(prog, "/") && !filepath.IsAbs(prog) {
		return nil, fmt.Errorf("program %s: give an absolute path or a name on PATH (a relative path depends on where the supervisor runs)", prog)
	}
	abs, err := exec.LookPath(prog)
	if err != nil {
		return nil, fmt.Errorf("program %s is not found or not executable: give an absolute path or a name on PATH", prog)
	}
	args[0] = abs
	return args, nil
}

// Wants says whether the sink is sent the event: every event when its
// filter is empty, else the events it names (needs-you:KIND names one
// kind); a test is always sent.
func (s Sink) Wants(e Event) bool {
	if e.Event == EventTest || len(s.Events) == 0 {
		return true
	}
	for _, ev := range s.Events {
		if ev == e.Event || e.Event == EventNeedsYou && ev == EventNeedsYou+":"+e.Kind {
			return true
		}
	}
	return false
}

// Mask shows enough of a secret to tell two apart and no more: its first
// 4 and last 2 characters when it is long, "****" when short, "" when
// there is none.
func Mask(secret string) string {
	r := []rune(secret)
	switch {
	case len(r) == 0:
		return ""
	case len(r) < 12:
		return "****"
	default:
		return string(r[:4]) + "…" + string(r[len(r)-2:])
	}
}

// MaskedURL is the sink's URL as it may be shown: a Slack webhook's is a
// secret (scheme and host only), an ntfy topic is masked (on a public
// server the topic is the password), a webhook's loses its user info,
// query and fragment; the Telegram API base and a command are shown.
func (s Sink) MaskedURL() string {
	s = s.WithDefaults()
	raw := s.URL
	if s.Type == TypeSlack {
		raw = s.slackURL()
	}
	if s.Type == TypeCommand {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return Mask(raw)
	}
	base := u.Scheme + "://" + u.Host
	switch s.Type {
	case TypeSlack:
		return base + "/…"
	case TypeNtfy:
		dir, topic := path.Split(strings.TrimSuffix(u.Path, "/"))
		return base + dir + Mask(topic)
	}
	return base + u.EscapedPath()
}
