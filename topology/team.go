package topology

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/cicy-ai/cicy-agent/panetype"
)

// Team files (see docs/team-files.md): a team's panes and, optionally, its master's first
// goal, as `cicy-agent up team.yaml` reads them.

// TeamPane is one pane of a team file, with defaults filled in.
type TeamPane struct {
	Title        string   `yaml:"title"`
	Type         string   `yaml:"type"`          // default cicy
	Role         string   `yaml:"role"`          // master or worker; default worker
	RoleTemplate string   `yaml:"role_template"` // "" leaves the default to create
	Command      []string `yaml:"command"`       // argv; required for type shell, refused for cicy
	Workspace    string   `yaml:"workspace"`     // absolute; "" for the default workspace
	Provider     string   `yaml:"provider"`
	Model        string   `yaml:"model"`
	// Master is the title of the master this worker reports to: the one
	// the file names, else the team's only master ("" when there is none,
	// and always for a master).
	Master string `yaml:"master"`
	// Env names variables of the supervisor's environment the pane's
	// program gets although the supervisor keeps them from panes (the
	// provider keys); like cicy-agent create --env.
	Env []string `yaml:"env"`
	// BudgetUSD is the pane's spending limit in US dollars (0: none).
	BudgetUSD float64 `yaml:"budget_usd"`
	// AllowAll runs a CLI agent in its own bypass-permissions mode, like
	// cicy-agent create --allow-all.
	AllowAll bool `yaml:"allow_all"`
	// Node is the node that runs the pane, in a cluster of supervisors
	// sharing a database ("" for the one up talks to).
	Node string `yaml:"node"`
	// Worktree runs the pane in a git worktree of its own, like
	// cicy-agent create --worktree (from its master's workspace when it
	// names none). Set per pane, or for every worker by the team's
	// worktree key; nil when the pane's entry does not say.
	Worktree *bool `yaml:"worktree"`
	// Restart is the pane's restart policy (RestartPolicies; "" for the
	// default), like cicy-agent create --restart.
	Restart string `yaml:"restart"`
	Line    int    `yaml:"-"` // line of this pane in the file
}

// InWorktree reports whether the pane runs in a worktree of its own.
func (tp TeamPane) InWorktree() bool { return tp.Worktree != nil && *tp.Worktree }

// TeamGoal is the first message for a master of the team.
type TeamGoal struct {
	To   string `yaml:"to"` // a master's title
	Text string `yaml:"text"`
	Line int    `yaml:"-"`
}

// Team is a parsed and checked team file.
type Team struct {
	Name  string     `yaml:"name"`
	Panes []TeamPane `yaml:"panes"`
	Goal  *TeamGoal  `yaml:"goal"`
	// BudgetUSD is the team's spending limit in US dollars (0: none): its
	// panes' spend together.
	BudgetUSD float64 `yaml:"budget_usd"`
	// Worktree gives every worker whose entry does not say otherwise a
	// git worktree of its own.
	Worktree bool `yaml:"worktree"`
	// Notify are the sinks the team's events go to.
	Notify []TeamSink `yaml:"notify"`
	Path   string     `yaml:"-"` // absolute path of the file (LoadTeam)
}

// Pane returns the pane with this title, or nil.
func (t *Team) Pane(title string) *TeamPane {
	for i := range t.Panes {
		if t.Panes[i].Title == title {
			return &t.Panes[i]
		}
	}
	return nil
}

// TeamError is a mistake in a team file: the file, the line and one
// sentence saying what is wrong and how to fix it.
type TeamError struct {
	File string // as the user named it; "team file" for ParseTeam
	Line int
	Msg  string
}

func (e *TeamError) Error() string { return fmt.Sprintf("%s line %d: %s", e.File, e.Line, e.Msg) }

// MaxTeamFileSize bounds what LoadTeam reads: a team file is a short list.
const MaxTeamFileSize = 1 << 20

// LoadTeam reads and checks the team file at path. Relative workspaces
// are resolved against the file's folder; errors name the path as given.
func LoadTeam(path string) (*Team, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("the team file %s cannot be read: %v", path, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("the team file %s cannot be read: %v", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("the team file %s is a folder; give the path of a .yaml file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxTeamFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("the team file %s cannot be read: %v", path, err)
	}
	if len(data) > MaxTeamFileSize {
		return nil, fmt.Errorf("the team file %s is larger than 1 MiB; a team file is a short list of panes", path)
	}
	t, err := parseTeam(data, filepath.Dir(abs), path)
	if err != nil {
		return nil, err
	}
	t.Path = abs
	return t, nil
}

// ParseTeam parses and checks a team document; dir resolves relative
// workspaces (the current folder when ""). Errors are *TeamError.
func ParseTeam(data []byte, dir string) (*Team, error) {
	return parseTeam(data, dir, "team file")
}

// Known keys, in the order error messages list them.
var (
	teamKeys = []string{"name", "panes", "goal", "budget_usd", "worktree", "notify"}
	paneKeys = []string{"title", "type", "role", "role_template", "command", "workspace", "provider", "model", "master", "env", "budget_usd", "allow_all", "node", "worktree", "restart"}
	goalKeys = []string{"to", "text"}

	yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
)

// parser carries the file name into every error.
type parser struct {
	file string
	dir  string
}

func (p *parser) errf(line int, format string, a ...any) error {
	if line < 1 {
		line = 1
	}
	return &TeamError{File: p.file, Line: line, Msg: fmt.Sprintf(format, a...)}
}

func parseTeam(data []byte, dir, file string) (*Team, error) {
	p := &parser{file: file, dir: dir}
	root, err := p.document(data)
	if err != nil {
		return nil, err
	}
	fields, err := p.mapping(root, "at the top level", teamKeys)
	if err != nil {
		return nil, err
	}
	t := &Team{}
	if t.Name, err = p.teamName(root, fields); err != nil {
		return nil, err
	}
	if e, ok := fields["budget_usd"]; ok {
		if t.BudgetUSD, err = p.budget(e, `the team's "budget_usd"`); err != nil {
			return nil, err
		}
	}
	if e, ok := fields["worktree"]; ok {
		if t.Worktree, err = p.boolean(e, `the team's "worktree"`); err != nil {
			return nil, err
		}
	}
	if t.Panes, err = p.panes(root, fields); err != nil {
		return nil, err
	}
	if e, ok := fields["notify"]; ok {
		if t.Notify, err = p.sinks(e); err != nil {
			return nil, err
		}
	}
	for i := range t.Panes {
		if tp := &t.Panes[i]; t.Worktree && tp.Worktree == nil && tp.Role == RoleWorker {
			yes := true
			tp.Worktree = &yes
		}
	}
	if err := p.links(t); err != nil {
		return nil, err
	}
	if g, ok := fields["goal"]; ok {
		if t.Goal, err = p.goal(t, deref(g.value)); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// document parses the YAML and returns its top-level mapping.
func (p *parser) document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.errf(1, "the file is empty; a team file needs name: and panes:, like name: demo / panes: [{title: lead, role: master}]")
		}
		return nil, p.yamlErr(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, p.errf(extra.Line, "a second YAML document starts here; a team file holds one team")
	} else if !errors.Is(err, io.EOF) {
		return nil, p.yamlErr(err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, p.errf(1, "the file is empty; a team file needs name: and panes:")
		}
		root = root.Content[0]
	}
	root = deref(root)
	if isNull(root) {
		return nil, p.errf(root.Line, "the file is empty; a team file needs name: and panes:")
	}
	if root.Kind != yaml.MappingNode {
		return nil, p.errf(root.Line, "the top level must be a mapping with the keys name, panes, goal and budget_usd, not %s", kindName(root))
	}
	return root, nil
}

// teamName reads and checks the team's name.
func (p *parser) teamName(root *yaml.Node, fields map[string]entry) (string, error) {
	nameNode, ok := fields["name"]
	if !ok {
		return "", p.errf(root.Line, "the team has no name: key; add one, like name: demo")
	}
	name, err := p.scalar(nameNode, `the team's "name"`)
	if err != nil {
		return "", err
	}
	switch {
	case name == "":
		return "", p.errf(nameNode.value.Line, `the team's "name" is empty; give it a name like name: demo`)
	case len(name) > MaxTeamBytes:
		return "", p.errf(nameNode.value.Line, `the team's "name" is too long (%d bytes, at most %d)`, len(name), MaxTeamBytes)
	case !ValidSlug(name):
		return "", p.errf(nameNode.value.Line, `the team's "name" %q is not a valid name (lowercase letters, digits, - and _, starting with a letter or digit)`, name)
	}
	return name, nil
}

// panes reads and checks the list of panes; titles are unique.
func (p *parser) panes(root *yaml.Node, fields map[string]entry) ([]TeamPane, error) {
	panesNode, ok := fields["panes"]
	if !ok {
		return nil, p.errf(root.Line, `the team has no "panes" key; list at least one pane, like panes: [{title: lead, role: master}]`)
	}
	pn := deref(panesNode.value)
	if isNull(pn) || (pn.Kind == yaml.SequenceNode && len(pn.Content) == 0) {
		return nil, p.errf(pn.Line, `"panes" is empty; a team needs at least one pane`)
	}
	if pn.Kind != yaml.SequenceNode {
		return nil, p.errf(pn.Line, `"panes" must be a list of panes (one "- title: …" entry each), not %s`, kindName(pn))
	}
	var panes []TeamPane
	firstLine := map[string]int{}
	for i, item := range pn.Content {
		tp, err := p.pane(deref(item), i+1)
		if err != nil {
			return nil, err
		}
		tp.Line = item.Line // an alias's own line
		if l, dup := firstLine[tp.Title]; dup {
			return nil, p.errf(tp.Line, `pane title %q is used twice (lines %d and %d); "title" names a pane and must be unique in the team`, tp.Title, l, tp.Line)
		}
		firstLine[tp.Title] = tp.Line
		panes = append(panes, tp)
	}
	return panes, nil
}

// entry is one key of a mapping with its value node.
type entry struct {
	key   *yaml.Node
	value *yaml.Node
}

// mapping checks a mapping's keys (known, scalar, not repeated) and
// returns them by name. where says where it is ("in pane "alice"").
func (p *parser) mapping(n *yaml.Node, where string, known []string) (map[string]entry, error) {
	out := map[string]entry{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, p.errf(k.Line, "a key %s is %s; keys are plain words (known: %s)", where, kindName(k), strings.Join(known, ", "))
		}
		if !slices.Contains(known, k.Value) {
			return nil, p.errf(k.Line, "unknown key %q %s (known: %s)", k.Value, where, strings.Join(known, ", "))
		}
		if prev, dup := out[k.Value]; dup {
			return nil, p.errf(k.Line, "key %q is given twice %s (first at line %d)", k.Value, where, prev.key.Line)
		}
		out[k.Value] = entry{key: k, value: v}
	}
	return out, nil
}

// scalar returns a text value ("" for null); what names the key.
func (p *parser) scalar(e entry, what string) (string, error) {
	v := deref(e.value)
	if isNull(v) {
		return "", nil
	}
	if v.Kind != yaml.ScalarNode {
		return "", p.errf(v.Line, "%s must be a text value, not %s", what, kindName(v))
	}
	return v.Value, nil
}

// pane reads and checks one pane (index is 1-based, for panes whose title
// is missing). The rules a pane follows are spec.go's, as for create.
func (p *parser) pane(n *yaml.Node, index int) (TeamPane, error) {
	tp := TeamPane{Line: n.Line}
	if n.Kind != yaml.MappingNode {
		return tp, p.errf(n.Line, `pane %d of "panes" must be a mapping with at least a title (like - {title: alice}), not %s`, index, kindName(n))
	}
	r, err := p.paneReader(n, index)
	if err != nil {
		return tp, err
	}
	steps := []func(*TeamPane) error{r.names, r.lists, r.workspace, r.texts, r.budget, r.switches, r.node, r.restart, r.links}
	for _, step := range steps {
		if err := step(&tp); err != nil {
			return tp, err
		}
	}
	return tp, nil
}

// paneFields reads the keys of one pane.
type paneFields struct {
	p      *parser
	n      *yaml.Node
	index  int
	where  string // "in pane "alice"", or "in pane 2" while it has no title
	fields map[string]entry
}

func (p *parser) paneReader(n *yaml.Node, index int) (*paneFields, error) {
	r := &paneFields{p: p, n: n, index: index, where: fmt.Sprintf("in pane %d", index)}
	// The title first, so later messages can name the pane.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := deref(n.Content[i]); k.Kind == yaml.ScalarNode && k.Value == "title" {
			if v := deref(n.Content[i+1]); v.Kind == yaml.ScalarNode && !isNull(v) && strings.TrimSpace(v.Value) != "" {
				r.where = fmt.Sprintf("in pane %q", strings.TrimSpace(v.Value))
			}
			break
		}
	}
	var err error
	r.fields, err = p.mapping(n, r.where, paneKeys)
	return r, err
}

// line is the line of key's value, else the pane's.
func (r *paneFields) line(key string) int {
	if e, ok := r.fields[key]; ok {
		return deref(e.value).Line
	}
	return r.n.Line
}

// text returns key's trimmed text value ("" when absent) and its line.
func (r *paneFields) text(key string) (string, int, error) {
	e, ok := r.fields[key]
	if !ok {
		return "", r.n.Line, nil
	}
	s, err := r.p.scalar(e, fmt.Sprintf("%q %s", key, r.where))
	return strings.TrimSpace(s), deref(e.value).Line, err
}

// checked is text within CheckText's rules and max bytes.
func (r *paneFields) checked(key string, max int) (string, int, error) {
	v, line, err := r.text(key)
	if err != nil {
		return "", line, err
	}
	if err := CheckText(v, max); err != nil {
		return "", line, r.p.errf(line, "%q %s %v", key, r.where, err)
	}
	return v, line, nil
}

// names reads the title, type, role and role template.
func (r *paneFields) names(tp *TeamPane) error {
	title, line, err := r.text("title")
	if err != nil {
		return err
	}
	if title == "" {
		return r.p.errf(line, `pane %d has no "title"; every pane needs one, like title: alice`, r.index)
	}
	if err := CheckTitle(title); err != nil {
		return r.p.errf(line, "%q %s %v", "title", r.where, err)
	}
	tp.Title = title
	if tp.Type, line, err = r.text("type"); err != nil {
		return err
	}
	var ok bool
	if tp.Type, ok = panetype.Resolve(tp.Type); !ok {
		return r.p.errf(line, `"type" %q %s is not a pane type (choose %s)`, tp.Type, r.where, PaneTypeChoices())
	}
	if tp.Role, line, err = r.text("role"); err != nil {
		return err
	}
	if tp.Role = PaneRole(tp.Role); tp.Role != RoleMaster && tp.Role != RoleWorker {
		return r.p.errf(line, `"role" %q %s is not allowed: team panes are masters or workers (role: master or role: worker); a label role is for cicy-agent create --role, and a persona is set with role_template`, tp.Role, r.where)
	}
	if tp.RoleTemplate, line, err = r.text("role_template"); err != nil {
		return err
	}
	if tp.RoleTemplate != "" && !ValidSlug(tp.RoleTemplate) {
		return r.p.errf(line, `"role_template" %q %s is not a valid template name (lowercase letters, digits, - and _; it names a folder under memory/agents/)`, tp.RoleTemplate, r.where)
	}
	return nil
}

// node reads the node that runs the pane.
func (r *paneFields) node(tp *TeamPane) (err error) {
	var line int
	if tp.Node, line, err = r.text("node"); err != nil {
		return err
	}
	if tp.Node != "" && !ValidNode(tp.Node) {
		return r.p.errf(line, `"node" %q %s is not a node name (letters, digits, '.', '_' and '-'; see cicy-agent nodes)`, tp.Node, r.where)
	}
	return nil
}

// restart reads the pane's restart policy.
func (r *paneFields) restart(tp *TeamPane) (err error) {
	var line int
	if tp.Restart, line, err = r.text("restart"); err != nil {
		return err
	}
	if !ValidRestart(tp.Restart) {
		return r.p.errf(line, `"restart" %q %s is not a restart policy (choose %s)`, tp.Restart, r.where, List(RestartPolicies, "or"))
	}
	return nil
}

// lists reads the command and the env names.
func (r *paneFields) lists(tp *TeamPane) (err error) {
	if e, ok := r.fields["command"]; ok {
		if tp.Command, err = r.p.command(e, r.where); err != nil {
			return err
		}
	}
	if e, ok := r.fields["env"]; ok {
		if tp.Env, err = r.p.envNames(e, r.where); err != nil {
			return err
		}
	}
	return nil
}

// workspace reads the workspace and makes it absolute: ~ is the home
// folder, a relative path is relative to the team file's folder.
func (r *paneFields) workspace(tp *TeamPane) error {
	ws, line, err := r.text("workspace")
	if err != nil || ws == "" {
		return err
	}
	if strings.ContainsRune(ws, 0) {
		return r.p.errf(line, `"workspace" %s contains a NUL byte`, r.where)
	}
	if ws == "~" || strings.HasPrefix(ws, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return r.p.errf(line, `"workspace" %s starts with ~ but the home folder is unknown: %v`, r.where, err)
		}
		ws = filepath.Join(home, strings.TrimPrefix(ws, "~"))
	}
	if !filepath.IsAbs(ws) {
		ws = filepath.Join(r.p.dir, ws)
	}
	if tp.Workspace, err = filepath.Abs(ws); err != nil {
		return r.p.errf(line, `"workspace" %s cannot be made absolute: %v`, r.where, err)
	}
	return nil
}

// texts reads the provider, the model and the master.
func (r *paneFields) texts(tp *TeamPane) (err error) {
	if tp.Provider, _, err = r.checked("provider", MaxProviderBytes); err != nil {
		return err
	}
	if tp.Model, _, err = r.checked("model", MaxModelBytes); err != nil {
		return err
	}
	tp.Master, _, err = r.text("master")
	return err
}

// switches reads the pane's true-or-false keys: worktree and allow_all.
func (r *paneFields) switches(tp *TeamPane) error {
	if e, ok := r.fields["worktree"]; ok {
		w, err := r.p.boolean(e, fmt.Sprintf(`"worktree" %s`, r.where))
		if err != nil {
			return err
		}
		tp.Worktree = &w
	}
	e, ok := r.fields["allow_all"]
	if !ok {
		return nil
	}
	var err error
	if tp.AllowAll, err = r.p.boolean(e, fmt.Sprintf(`"allow_all" %s`, r.where)); err != nil {
		return err
	}
	v := deref(e.value)
	if tp.AllowAll && !panetype.IsAgent(tp.Type) {
		return r.p.errf(v.Line, `"allow_all" %s is not allowed: it runs a CLI agent (%s) without its permission prompts; a %s pane has none`, r.where, strings.Join(panetype.Agents(), ", "), tp.Type)
	}
	return nil
}

// boolean reads a true or false value; what names the key.
func (p *parser) boolean(e entry, what string) (bool, error) {
	v := deref(e.value)
	var b bool
	if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
		return false, p.errf(v.Line, `%s must be true or false, not %s`, what, kindName(v))
	}
	if err := v.Decode(&b); err != nil {
		return false, p.errf(v.Line, `%s must be true or false: %v`, what, err)
	}
	return b, nil
}

// budget reads the pane's budget_usd.
func (r *paneFields) budget(tp *TeamPane) (err error) {
	if e, ok := r.fields["budget_usd"]; ok {
		tp.BudgetUSD, err = r.p.budget(e, fmt.Sprintf(`"budget_usd" %s`, r.where))
	}
	return err
}

// budget reads a budget_usd value: a number of US dollars within
// CheckBudget's rules; what names the key.
func (p *parser) budget(e entry, what string) (float64, error) {
	v := deref(e.value)
	if isNull(v) || v.Kind != yaml.ScalarNode {
		return 0, p.errf(v.Line, "%s must be an amount of US dollars, like budget_usd: 2.50, not %s", what, kindName(v))
	}
	usd, err := strconv.ParseFloat(strings.TrimPrefix(v.Value, "$"), 64)
	if err != nil {
		return 0, p.errf(v.Line, "%s must be an amount of US dollars, like budget_usd: 2.50, not %q", what, v.Value)
	}
	if err := CheckBudget(usd); err != nil {
		return 0, p.errf(v.Line, "%s %v (leave it out for no budget)", what, err)
	}
	return usd, nil
}

// links checks the rules between the pane's fields (CheckLinks).
func (r *paneFields) links(tp *TeamPane) error {
	switch err := CheckLinks(tp.Type, tp.Role, tp.Master, tp.Command, tp.Env); {
	case err == nil:
		return nil
	case errors.Is(err, ErrMasterOfMaster):
		return r.p.errf(r.line("master"), `"master" %s is not allowed: %v; drop master or make the pane a worker`, r.where, err)
	case errors.Is(err, ErrCicyCommand):
		return r.p.errf(r.line("command"), `"command" %s is not allowed: %v (its persona comes from role_template); drop command or set type`, r.where, err)
	case errors.Is(err, ErrCicyEnv):
		return r.p.errf(r.line("env"), `"env" %s is not allowed: a cicy pane runs in the supervisor, and its tools never get the provider keys`, r.where)
	case errors.Is(err, ErrShellCommand):
		return r.p.errf(r.line("command"), `a shell pane needs a "command" %s, like command: [bash]`, r.where)
	default:
		return r.p.errf(r.n.Line, "%s: %v", r.where, err)
	}
}

// EnvNameRe is what a variable name passed with env (--env) looks like.
var EnvNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// envNames reads an env list: names of the supervisor's variables.
func (p *parser) envNames(e entry, where string) ([]string, error) {
	v := deref(e.value)
	if isNull(v) {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, p.errf(v.Line, `"env" %s must be a list of variable names, like env: [ANTHROPIC_API_KEY], not %s`, where, kindName(v))
	}
	var names []string
	for i, a := range v.Content {
		a = deref(a)
		if a.Kind != yaml.ScalarNode || isNull(a) {
			return nil, p.errf(a.Line, `entry %d of "env" %s must be a variable name, not %s`, i+1, where, kindName(a))
		}
		if strings.Contains(a.Value, "=") {
			return nil, p.errf(a.Line, `entry %d of "env" %s must be a variable name without a value (the pane gets the supervisor's value of it); a fixed value goes in the command, like command: [env, NAME=value, bash]`, i+1, where)
		}
		if !EnvNameRe.MatchString(a.Value) {
			return nil, p.errf(a.Line, `entry %d of "env" %s, %q, is not a variable name (letters, digits and _, not starting with a digit)`, i+1, where, a.Value)
		}
		if !slices.Contains(names, a.Value) {
			names = append(names, a.Value)
		}
	}
	return names, nil
}

// command reads a command list.
func (p *parser) command(e entry, where string) ([]string, error) {
	v := deref(e.value)
	if isNull(v) {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, p.errf(v.Line, `"command" %s must be a list of arguments, like command: [bash, --norc], not %s`, where, kindName(v))
	}
	var argv []string
	for i, a := range v.Content {
		a = deref(a)
		if a.Kind != yaml.ScalarNode || isNull(a) {
			return nil, p.errf(a.Line, `argument %d of "command" %s must be a text value, not %s`, i+1, where, kindName(a))
		}
		if strings.ContainsRune(a.Value, 0) {
			return nil, p.errf(a.Line, `argument %d of "command" %s contains a NUL byte`, i+1, where)
		}
		argv = append(argv, a.Value)
	}
	return argv, nil
}

// links checks each worker's master and fills in the default one.
func (p *parser) links(t *Team) error {
	var masters []string
	for _, tp := range t.Panes {
		if tp.Role == RoleMaster {
			masters = append(masters, tp.Title)
		}
	}
	for i := range t.Panes {
		tp := &t.Panes[i]
		if tp.Role != RoleWorker {
			continue
		}
		if tp.Master == "" {
			switch len(masters) {
			case 0:
			case 1:
				tp.Master = masters[0]
			default:
				return p.errf(tp.Line, `worker %q has no "master": the team has %d masters (%s), so each worker must name the one it reports to, like master: %s`,
					tp.Title, len(masters), strings.Join(masters, ", "), masters[0])
			}
			continue
		}
		m := t.Pane(tp.Master)
		switch {
		case m == nil:
			return p.errf(tp.Line, `"master" %q of worker %q is not a pane of this team (%s)`, tp.Master, tp.Title, mastersHint(masters))
		case m.Role != RoleMaster:
			return p.errf(tp.Line, `"master" %q of worker %q names a pane whose role is %s, not master (%s)`, tp.Master, tp.Title, m.Role, mastersHint(masters))
		}
	}
	return nil
}

func mastersHint(masters []string) string {
	switch len(masters) {
	case 0:
		return "the team has no master; give one pane role: master"
	case 1:
		return "the team's master is " + masters[0]
	default:
		return "its masters are " + strings.Join(masters, ", ")
	}
}

// goal reads and checks the goal.
func (p *parser) goal(t *Team, n *yaml.Node) (*TeamGoal, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n.Line, `"goal" must be a mapping like goal: {to: lead, text: "…"}, not %s`, kindName(n))
	}
	fields, err := p.mapping(n, "in the goal", goalKeys)
	if err != nil {
		return nil, err
	}
	g := &TeamGoal{Line: n.Line}
	var masters []string
	for _, tp := range t.Panes {
		if tp.Role == RoleMaster {
			masters = append(masters, tp.Title)
		}
	}
	toLine := n.Line
	if e, ok := fields["to"]; ok {
		if g.To, err = p.scalar(e, `the goal's "to"`); err != nil {
			return nil, err
		}
		g.To, toLine = strings.TrimSpace(g.To), deref(e.value).Line
	}
	if g.To == "" {
		hint := "like to: " + firstOr(masters, "lead")
		return nil, p.errf(toLine, `the goal has no "to"; name the master it is for, %s`, hint)
	}
	switch m := t.Pane(g.To); {
	case m == nil:
		return nil, p.errf(toLine, `the goal's "to" %q is not a pane of this team (%s)`, g.To, mastersHint(masters))
	case m.Role != RoleMaster:
		return nil, p.errf(toLine, `the goal's "to" %q is a %s; a goal goes to a master (%s)`, g.To, m.Role, mastersHint(masters))
	}
	textLine := n.Line
	if e, ok := fields["text"]; ok {
		if g.Text, err = p.scalar(e, `the goal's "text"`); err != nil {
			return nil, err
		}
		textLine = deref(e.value).Line
	}
	if strings.TrimSpace(g.Text) == "" {
		return nil, p.errf(textLine, `the goal has no "text"; write what %s should do, like text: "…"`, g.To)
	}
	if !utf8.ValidString(g.Text) {
		return nil, p.errf(textLine, `the goal's "text" is not valid UTF-8`)
	}
	if strings.ContainsRune(g.Text, 0) {
		return nil, p.errf(textLine, `the goal's "text" contains a NUL byte`)
	}
	g.Text = strings.TrimSpace(g.Text)
	return g, nil
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

// yamlParserProblems are yaml.v3's parser (not scanner) errors, whose
// line is off by one.
var yamlParserProblems = []string{
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found undefined tag handle",
}

// yamlErr turns a YAML syntax error into a TeamError with its line.
func (p *parser) yamlErr(err error) error {
	msg := err.Error()
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if slices.Contains(yamlParserProblems, m[2]) {
			// yaml.v3 numbers these from 0, and gives the line where the
			// enclosing list or mapping starts when it knows it.
			return p.errf(line+1, "the file is not valid YAML at or below this line: %s", m[2])
		}
		return p.errf(line, "the file is not valid YAML: %s", m[2])
	}
	return p.errf(1, "the file is not valid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "empty"
		}
		return fmt.Sprintf("the value %q", n.Value)
	default:
		return "something else"
	}
}
