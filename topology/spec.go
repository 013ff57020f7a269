package topology

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/panetype"
)

// Pane specs: the rules every pane follows however it is described —
// `cicy-agent create` (package newpane's Normalize) or a team file
// (parser.pane). Each check returns the heart of the sentence (or, for the
// links between fields, which rule is broken); the caller names the field
// its own way ("the title", or `"title" in pane "a"`), adds the line of a
// team file, and says how to fix it in its own terms (a flag or a key).

// List joins names for a sentence: "a", "a and b", "a, b and c" (conj
// "and" or "or").
func List(names []string, conj string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conj + " " + names[len(names)-1]
}

// PaneTypeChoices lists the pane types for a message: "cicy, claude, … or
// shell".
func PaneTypeChoices() string { return List(panetype.All(), "or") }

// Limits of a pane's text fields, in bytes.
const (
	MaxTitleBytes    = 100
	MaxRoleBytes     = 64
	MaxProviderBytes = 64
	MaxModelBytes    = 200
	MaxTeamBytes     = 64
)

// slugRe is a name that becomes a folder: a role template, a team.
var slugRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// nodeRe is a node's name (serve --node).
var nodeRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidNode reports whether s can name a node: 1 to 63 letters, digits,
// '.', '_' and '-', starting with a letter or digit.
func ValidNode(s string) bool { return nodeRe.MatchString(s) }

// ValidSlug reports whether s can name a folder: 1 to 64 lowercase
// letters, digits, - and _, starting with a letter or digit.
func ValidSlug(s string) bool { return slugRe.MatchString(s) }

// CheckText refuses an over-long value, invalid UTF-8 and control
// characters in a text field; the error is the sentence's predicate ("is
// too long (120 bytes, at most 100)"), for the caller to put after the
// field's name.
func CheckText(v string, max int) error {
	if len(v) > max {
		return fmt.Errorf("is too long (%d bytes, at most %d)", len(v), max)
	}
	if !utf8.ValidString(v) {
		return errors.New("is not valid UTF-8")
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return fmt.Errorf("contains a control character (%q); use plain text", r)
		}
	}
	return nil
}

// idLikeRe is a title a command would read as a pane id (w-3, w-3:main).
var idLikeRe = regexp.MustCompile(`^w-[0-9]+($|:)`)

// CheckTitle is CheckText for a pane's title, which is shown in tables
// and terminals and names the pane on the command line: it also refuses
// the characters that make a title show other than it reads — bidi
// overrides and isolates (U+202A-U+202E, U+2066-U+2069), line and
// paragraph separators (U+2028, U+2029), zero-width characters
// (U+200B-U+200F, U+2060, U+FEFF) — and a title that is a pane id.
func CheckTitle(v string) error {
	if err := CheckText(v, MaxTitleBytes); err != nil {
		return err
	}
	for _, r := range v {
		switch {
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return fmt.Errorf("contains a bidirectional control (%U), which makes text show in another order than it reads; use plain text", r)
		case r == 0x2028 || r == 0x2029:
			return fmt.Errorf("contains a line separator (%U); a title is one line", r)
		case r >= 0x200b && r <= 0x200f, r == 0x2060, r == 0xfeff:
			return fmt.Errorf("contains an invisible character (%U); use plain text", r)
		}
	}
	if idLikeRe.MatchString(v) {
		return fmt.Errorf("%q is a pane id's form (w-<N>), which commands read as the id; choose another", v)
	}
	return nil
}

// PaneRole fills in the default role, worker.
func PaneRole(role string) string {
	if role == "" {
		return RoleWorker
	}
	return role
}

// The rules that tie a pane's fields together; CheckLinks returns one of
// these.
var (
	// ErrMasterOfMaster: a master names a master.
	ErrMasterOfMaster = errors.New("a master does not report to another master")
	// ErrCicyCommand: a cicy pane is given a program to run.
	ErrCicyCommand = errors.New("a cicy pane runs no program")
	// ErrShellCommand: a shell pane is given no program to run.
	ErrShellCommand = errors.New("a shell pane needs a command")
	// ErrCicyEnv: a cicy pane asks for variables of the supervisor.
	ErrCicyEnv = errors.New("a cicy pane's tools never get the provider keys")
)

// CheckLinks checks the rules between a pane's fields (its type and role
// filled in): a master reports to no master, a cicy pane runs no command
// and gets no variables, a shell pane runs one.
func CheckLinks(typ, role, master string, command, env []string) error {
	switch {
	case master != "" && role == RoleMaster:
		return ErrMasterOfMaster
	case panetype.InProcess(typ) && len(command) > 0:
		return ErrCicyCommand
	case panetype.InProcess(typ) && len(env) > 0:
		return ErrCicyEnv
	case panetype.RunsShellTasks(typ) && (len(command) == 0 || command[0] == ""):
		return ErrShellCommand
	}
	return nil
}

// MaxBudgetUSD bounds a budget: far above a real one, it catches a typo
// (a missing decimal point) before it leaves a pane unguarded.
const MaxBudgetUSD = 1_000_000

// CheckBudget refuses a budget that is not more than $0 and at most
// MaxBudgetUSD; the error is the sentence's predicate ("must be more than
// $0"), for the caller to put after the field's name.
func CheckBudget(usd float64) error {
	switch {
	case math.IsNaN(usd) || usd <= 0:
		return errors.New("must be more than $0")
	case usd > MaxBudgetUSD:
		return fmt.Errorf("is more than $%d; is a decimal point missing?", MaxBudgetUSD)
	}
	return nil
}
