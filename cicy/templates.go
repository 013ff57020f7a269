package cicy

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/cicy-ai/cicy-agent/topology"
)

//go:embed templates
var builtinTemplates embed.FS

// SeedTemplates copies the built-in role templates to
// <home>/memory/agents/, file by file, never overwriting a file that
// exists (a user's edit or deletion of a file's content survives).
func SeedTemplates(home string) error {
	dst := filepath.Join(home, "memory", "agents")
	return fs.WalkDir(builtinTemplates, "templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(path, "templates")
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if _, err := os.Stat(target); err == nil {
			return nil
		}
		b, err := builtinTemplates.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			return fmt.Errorf("seed role template file %s: %w", target, err)
		}
		return nil
	})
}

// Meta is a role template's meta.yaml. Unknown keys are ignored.
type Meta struct {
	Name          string   `yaml:"name"`
	Tools         []string `yaml:"tools"`
	Greeting      string   `yaml:"greeting"`
	MaxToolRounds int      `yaml:"max_tool_rounds"`
	Provider      string   `yaml:"provider"`
	Model         string   `yaml:"model"`
	MaxTokens     int      `yaml:"max_tokens"`
}

// Template is a role template read from disk.
type Template struct {
	Slug   string
	Dir    string
	System string // system.md
	Role   string // role.md
	Meta   Meta
}

// ErrNoTemplate is returned for a role template that does not exist.
var ErrNoTemplate = errors.New("no such role template")

// LoadTemplate reads <home>/memory/agents/<slug>/. A missing system.md or
// role.md reads as empty; a missing folder or a malformed meta.yaml is an
// error whose text is one sentence for the user.
func LoadTemplate(home, slug string) (*Template, error) {
	if !topology.ValidSlug(slug) {
		return nil, fmt.Errorf("role template %q is not a valid name (lowercase letters, digits, - and _)", slug)
	}
	dir := filepath.Join(home, "memory", "agents", slug)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s (there is no folder %s)", ErrNoTemplate, slug, dir)
	}
	t := &Template{Slug: slug, Dir: dir}
	var err error
	if t.System, err = readOptional(filepath.Join(dir, "system.md")); err != nil {
		return nil, err
	}
	if t.Role, err = readOptional(filepath.Join(dir, "role.md")); err != nil {
		return nil, err
	}
	metaBytes, err := readOptional(filepath.Join(dir, "meta.yaml"))
	if err != nil {
		return nil, err
	}
	if t.Meta, err = ParseMeta([]byte(metaBytes)); err != nil {
		return nil, fmt.Errorf("the meta.yaml of role template %s is malformed: %w", slug, err)
	}
	return t, nil
}

// ParseMeta parses meta.yaml and checks its values.
func ParseMeta(b []byte) (Meta, error) {
	var m Meta
	if len(bytes.TrimSpace(b)) == 0 {
		return m, nil
	}
	if err := yaml.Unmarshal(b, &m); err != nil {
		return Meta{}, errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	switch {
	case m.MaxToolRounds < 0:
		return Meta{}, fmt.Errorf("max_tool_rounds must not be negative (got %d)", m.MaxToolRounds)
	case m.MaxTokens < 0:
		return Meta{}, fmt.Errorf("max_tokens must not be negative (got %d)", m.MaxTokens)
	case m.Provider != "" && m.Provider != "anthropic" && m.Provider != "openai" && m.Provider != "script":
		return Meta{}, fmt.Errorf("provider %q is not one of anthropic, openai, script", m.Provider)
	}
	return m, nil
}

func readOptional(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return string(b), nil
}

// WriteGuidanceAt writes the pane's guidance file at path from global.md
// and the template's role.md, with the placeholders substituted, only if
// the file does not exist yet (a user's edits survive). The file is the
// workspace's, or one kept out of it (a pane whose workspace is a git
// worktree keeps it out of the work).
func WriteGuidanceAt(home, path, workspace, paneID, agentType string, t *Template) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	global, err := readOptional(filepath.Join(home, "memory", "global.md"))
	if err != nil {
		return err
	}
	var parts []string
	for _, p := range []string{global, t.Role} {
		if s := strings.TrimSpace(p); s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 || !strings.Contains(t.Role, "# Role") {
		parts = append(parts, "# Role\n\nYou are {{AGENT_ID}}.")
	}
	body := strings.NewReplacer("{{AGENT_ID}}", paneID, "{{WORKSPACE}}", workspace, "{{AGENT_TYPE}}", agentType).
		Replace(strings.Join(parts, "\n\n")) + "\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create the folder of %s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// RoleBodyAt is the identity injected as the <role> block: the guidance
// file at path without a leading frontmatter, trimmed. A missing file
// gives "".
func RoleBodyAt(path string) (string, error) {
	s, err := readOptional(path)
	if err != nil {
		return "", err
	}
	if rest, ok := strings.CutPrefix(s, "---\n"); ok {
		if _, after, found := strings.Cut(rest, "\n---\n"); found {
			s = after
		}
	}
	return strings.TrimSpace(s), nil
}
