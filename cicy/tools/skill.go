package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// skillFile is the file that makes a directory a skill.
const skillFile = "SKILL.md"

// skillSchema is a literal so the tool definition is byte-stable.
const skillSchema = `{"type":"object","properties":{"name":{"type":"string","description":"The skill to read. Leave out to list the installed skills."}}}`

const skillDescription = "List the installed skills, or, given a skill name, return that skill's SKILL.md " +
	"with its instructions. Run the commands a skill describes with the shell tool."

const (
	skillListHeader = "Installed skills — call skill with a name for its instructions:"
	noSkills        = "(no skills installed)"
)

// SkillDef is the definition of the skill tool offered to the model.
func SkillDef() wire.Tool {
	return wire.Tool{
		Name:        "skill",
		Description: skillDescription,
		InputSchema: json.RawMessage(skillSchema),
	}
}

// skillInput is the input of a skill call.
type skillInput struct {
	Name string `json:"name"`
}

// skillInfo is one installed skill: its directory name and frontmatter.
type skillInfo struct {
	dir         string
	name        string
	description string
}

// Skill runs the skill tool: without a name it lists the skills under
// skillsDir, with a name it returns <skillsDir>/<name>/SKILL.md.
func Skill(skillsDir string, input json.RawMessage) (string, bool) {
	in, err := parseInput[skillInput]("skill", input)
	if err != nil {
		return "error: " + err.Error(), true
	}
	if in.Name == "" {
		return skillList(skillsDir)
	}
	return skillGet(skillsDir, in.Name)
}

// SkillListing returns the listing of installed skills, the same text as
// a skill call without a name, or "" when none are installed (or the
// directory cannot be read), so the caller can leave the block out.
func SkillListing(skillsDir string) string {
	skills, err := listSkills(skillsDir)
	if err != nil || len(skills) == 0 {
		return ""
	}
	return formatListing(skills)
}

// skillList is the no-name form of the tool.
func skillList(skillsDir string) (string, bool) {
	skills, err := listSkills(skillsDir)
	if err != nil {
		return "error: " + err.Error(), true
	}
	if len(skills) == 0 {
		return noSkills, false
	}
	return formatListing(skills), false
}

// skillGet returns one skill's SKILL.md.
func skillGet(skillsDir, name string) (string, bool) {
	name = strings.TrimSpace(name)
	if !validSkillName(name) {
		return fmt.Sprintf("error: bad skill name %q: a skill name is one directory name, without / \\ or ..", name), true
	}
	text, err := readSkill(skillsDir, name)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("error: skill not found: %s (call skill with no name to list them)", name), true
	}
	if err != nil {
		return "error: " + err.Error(), true
	}
	if strings.TrimSpace(text) == "" {
		return fmt.Sprintf("(skill %s has an empty %s)", name, skillFile), false
	}
	return text, false
}

// validSkillName refuses anything that could leave the skills directory
// or name a hidden directory the listing skips.
func validSkillName(name string) bool {
	return name != "" &&
		!strings.ContainsAny(name, `/\`) &&
		!strings.Contains(name, "..") &&
		!strings.HasPrefix(name, ".")
}

// readSkill reads the SKILL.md of the skill in directory name; failing
// that, of the skill whose frontmatter name is name, because the listing
// shows frontmatter names and the model calls skill with what it saw.
func readSkill(skillsDir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(skillsDir, name, skillFile))
	if err == nil {
		return string(b), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read skill %s: %w", name, err)
	}
	skills, lerr := listSkills(skillsDir)
	if lerr != nil {
		return "", err
	}
	for _, s := range skills {
		if s.name == name {
			b, err := os.ReadFile(filepath.Join(skillsDir, s.dir, skillFile))
			if err != nil {
				return "", fmt.Errorf("read skill %s: %w", name, err)
			}
			return string(b), nil
		}
	}
	return "", err
}

// listSkills returns the skills under skillsDir sorted by name. A missing
// directory means no skills; dot-dirs and directories without SKILL.md
// are skipped.
func listSkills(skillsDir string) ([]skillInfo, error) {
	entries, err := os.ReadDir(skillsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list skills: %w", err)
	}
	var skills []skillInfo
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		// ReadFile follows symlinks, so a linked skill directory counts;
		// a plain file or a directory without SKILL.md fails and is skipped.
		b, err := os.ReadFile(filepath.Join(skillsDir, e.Name(), skillFile))
		if err != nil {
			continue
		}
		skills = append(skills, newSkillInfo(e.Name(), string(b)))
	}
	sort.Slice(skills, func(i, j int) bool {
		if skills[i].name != skills[j].name {
			return skills[i].name < skills[j].name
		}
		return skills[i].dir < skills[j].dir
	})
	return skills, nil
}

// newSkillInfo takes name and description from the frontmatter; the name
// defaults to the directory name.
func newSkillInfo(dir, text string) skillInfo {
	fm := parseFrontmatter(text)
	s := skillInfo{dir: dir, name: oneLine(fm["name"]), description: oneLine(fm["description"])}
	if s.name == "" {
		s.name = dir
	}
	return s
}

// formatListing renders the header and one "- name: description" line per
// skill.
func formatListing(skills []skillInfo) string {
	var sb strings.Builder
	sb.WriteString(skillListHeader)
	for _, s := range skills {
		sb.WriteString("\n- ")
		sb.WriteString(s.name)
		if s.description != "" {
			sb.WriteString(": ")
			sb.WriteString(s.description)
		}
	}
	return sb.String()
}

// parseFrontmatter reads the simple "key: value" lines between a leading
// "---" line and the next "---". It is not YAML: indented lines continue
// the previous value (enough for folded "description: >" blocks), quotes
// around a value are removed, anything else is ignored. Text without
// frontmatter gives an empty map.
func parseFrontmatter(text string) map[string]string {
	fm := map[string]string{}
	lines := strings.Split(strings.TrimPrefix(text, "\ufeff"), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "---" {
		return fm
	}
	key := ""
	for _, line := range lines[1:] {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "---" {
			return fm
		}
		if key != "" && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")) {
			fm[key] = strings.TrimSpace(fm[key] + " " + strings.TrimSpace(line))
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			key = ""
			continue
		}
		key = strings.TrimSpace(k)
		fm[key] = frontmatterValue(v)
	}
	// No closing "---": not frontmatter after all.
	return map[string]string{}
}

// frontmatterValue trims a value, drops matching quotes and treats the
// block markers | and > as an empty start for continuation lines.
func frontmatterValue(v string) string {
	v = strings.TrimSpace(v)
	switch v {
	case "|", "|-", "|+", ">", ">-", ">+":
		return ""
	}
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return v
}

// oneLine collapses whitespace so a value fits on one listing line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
