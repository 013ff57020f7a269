package dashboard

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/topology"
)

// The screen, top to bottom: a header line, what needs you, the pane
// table, the topology with a completion bar per master, recent tasks, the
// selected pane's preview, and the key line. Every line is exactly the
// terminal's width and the whole exactly its height, so a frame overwrites
// the last one cell for cell (Bubble Tea redraws only changed lines): no
// flicker. Every meaning is in the text (▸ selected, ! needs you); colour
// only repeats it, so NO_COLOR and narrow terminals lose nothing.

// styles are the dashboard's colours (from the house style: few, muted,
// state-coded).
type styles struct {
	head, dim, sel, warn, bad, good, busy, title, bar, barEmpty lipgloss.Style
}

// The styles are ANSI colours: the terminal's own palette. Bubble Tea
// drops them for a terminal without colour or with NO_COLOR set.
var st = styles{
	head:     lipgloss.NewStyle().Bold(true),
	dim:      lipgloss.NewStyle().Faint(true),
	sel:      lipgloss.NewStyle().Reverse(true),
	warn:     lipgloss.NewStyle().Foreground(lipgloss.Color("5")).Bold(true),
	bad:      lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
	good:     lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
	busy:     lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
	title:    lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("6")),
	bar:      lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
	barEmpty: lipgloss.NewStyle().Faint(true),
}

func (s styles) state(st string) lipgloss.Style {
	switch st {
	case "idle":
		return s.good
	case "busy", "starting":
		return s.busy
	case "waiting":
		return s.warn
	case "error", "unreachable":
		return s.bad
	}
	return s.dim
}

// fit cuts s to w cells (with …) and pads it to exactly w.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) { // C0, DEL and C1 (U+009B is CSI)
			return ' '
		}
		return r
	}, s)
	if width(s) > w {
		s = truncate(s, w, "…")
	}
	if pad := w - width(s); pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	return s
}

// width is how many cells s takes on a terminal. Most of what the
// dashboard draws is ASCII: that is counted directly, and only the rest
// goes through grapheme segmentation.
func width(s string) int {
	plain := s
	if strings.IndexByte(s, 0x1b) >= 0 {
		plain = ansi.Strip(s)
	}
	n := 0
	for _, r := range plain {
		if !narrow(r) {
			return ansi.StringWidth(s)
		}
		n++
	}
	return n
}

// narrow reports whether a rune surely takes one cell: ASCII and Latin-1
// letters, and the punctuation, arrows, box drawing, blocks and shapes
// the dashboard draws with (…·›→▸─█░●○).
func narrow(r rune) bool {
	switch {
	case r >= 0x20 && r < 0x7f, r >= 0xa0 && r < 0x300:
		return true
	case r >= 0x2010 && r <= 0x206f, r >= 0x2190 && r <= 0x21ff, r >= 0x2500 && r <= 0x25ff:
		return true
	}
	return false
}

// truncate cuts s to w cells, ending with tail (one cell or none).
func truncate(s string, w int, tail string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] == 0x1b {
			return ansi.Truncate(s, w, tail)
		}
	}
	if len(s) <= w {
		return s
	}
	if tail == "" {
		return s[:w]
	}
	return s[:max(w-1, 0)] + tail
}

// column is one column of the pane table.
type column struct {
	name  string
	width int // minimum; reason and title take what is left
	drop  int // lower goes first when the terminal is narrow (0: never)
	right bool
	cell  func(m *Model, r row) string
}

// row is one pane of the table with the task it works on, if any.
type row struct {
	api.PaneInfo
	task *api.TaskInfo
}

var columns = []column{
	{name: "ID", width: 5, cell: func(_ *Model, p row) string { return p.ID }},
	{name: "TITLE", width: 8, drop: 90, cell: func(_ *Model, p row) string { return p.Title }},
	{name: "TYPE", width: 8, drop: 40, cell: func(_ *Model, p row) string { return p.Type }},
	{name: "ROLE", width: 6, drop: 30, cell: func(_ *Model, p row) string { return p.Role }},
	{name: "STATE", width: 8, cell: func(_ *Model, p row) string { return p.State }},
	{name: "REASON", width: 10, drop: 50, cell: func(_ *Model, p row) string { return reasonCell(p.Reason) }},
	{name: "TASK", width: 5, drop: 80, cell: func(_ *Model, r row) string {
		if r.task != nil {
			return fmt.Sprintf("#%d", r.task.ID)
		}
		return "-"
	}},
	{name: "ELAPSED", width: 7, drop: 70, right: true, cell: func(m *Model, r row) string {
		if r.task != nil && r.task.DeliveredAt != nil {
			return clock(m.now().Sub(*r.task.DeliveredAt))
		}
		return "-"
	}},
	{name: "TOKENS", width: 6, drop: 60, right: true, cell: func(_ *Model, p row) string {
		u := p.Usage
		n := u.InputTokens + u.OutputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
		if n == 0 {
			return "-"
		}
		return tokens(n)
	}},
	{name: "CACHE", width: 5, drop: 20, right: true, cell: func(_ *Model, p row) string {
		if p.CacheHit < 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", p.CacheHit*100)
	}},
	{name: "COST", width: 6, drop: 10, right: true, cell: func(_ *Model, p row) string {
		if p.CostUSD == nil {
			return "-"
		}
		return fmt.Sprintf("$%.2f", *p.CostUSD)
	}},
}

// turnReason is a cicy pane's reason: "turn <id> <outcome>".
var turnReason = regexp.MustCompile(`^turn (\S+) (.+)$`)

// reasonCell puts what happened before which turn it was, so a narrow
// column keeps the part that matters ("done · turn t3b4…", not
// "turn t3b4…").
func reasonCell(reason string) string {
	if m := turnReason.FindStringSubmatch(reason); m != nil {
		return m[2] + " · turn " + m[1]
	}
	return reason
}

// workColumn is the CHANGE column, when a pane runs in a git worktree:
// its commits not merged yet and their lines ("2↑ +42 −7"), "merged"
// when none.
var workColumn = column{name: "CHANGE", width: 8, drop: 65, right: true, cell: func(_ *Model, p row) string {
	return WorkCell(p.Worktree)
}}

// WorkCell is a worktree's unmerged work in a few characters.
func WorkCell(w *api.WorktreeInfo) string {
	switch {
	case w == nil:
		return "-"
	case w.Ahead == 0:
		return "merged"
	}
	return api.AheadLines(w.Ahead, w.Added, w.Deleted)
}

// nodeColumn is the NODE column, after ID, when the panes run on more
// than one node; it goes after the reason when the terminal is narrow.
func nodeColumn(w int) column {
	return column{name: "NODE", width: w, drop: 55, cell: func(_ *Model, p row) string {
		if p.Node == "" {
			return "-"
		}
		return p.Node
	}}
}

// fitPanes are the widths the table's columns need for these panes: the
// NODE column's (their longest node name, 4 to 12 cells; 0 when they all
// run on one node: a single machine's table has no NODE column), and the
// STATE column's (8, or 11 for "unreachable").
func fitPanes(panes []api.PaneInfo) (nodeW, stateW int) {
	first, many, w := "", false, 4
	stateW = 8
	for _, p := range panes {
		if p.State == "unreachable" {
			stateW = len("unreachable")
		}
		if p.Node == "" {
			continue
		}
		if first == "" {
			first = p.Node
		} else if p.Node != first {
			many = true
		}
		w = max(w, width(p.Node))
	}
	if !many {
		return 0, stateW
	}
	return min(w, 12), stateW
}

// layout picks the columns that fit in width and their widths for these
// panes.
func layout(width int, panes []api.PaneInfo) ([]column, []int) {
	cols := append([]column(nil), columns...)
	nodeW, stateW := fitPanes(panes)
	if nodeW > 0 {
		cols = slices.Insert(cols, 1, nodeColumn(nodeW))
	}
	if slices.ContainsFunc(panes, func(p api.PaneInfo) bool { return p.Worktree != nil }) {
		cols = slices.Insert(cols, slices.IndexFunc(cols, func(c column) bool { return c.name == "TOKENS" }), workColumn)
	}
	for i := range cols {
		if cols[i].name == "STATE" {
			cols[i].width = stateW
		}
	}
	need := func() int {
		n := 2 // the selection mark and its space
		for _, c := range cols {
			n += c.width + 1
		}
		return n - 1
	}
	for need() > width {
		drop := -1
		for i, c := range cols {
			if c.drop > 0 && (drop < 0 || c.drop < cols[drop].drop) {
				drop = i
			}
		}
		if drop < 0 {
			break
		}
		cols = append(cols[:drop], cols[drop+1:]...)
	}
	widths := make([]int, len(cols))
	for i, c := range cols {
		widths[i] = c.width
	}
	// What is left goes to the reason, then the title (up to 20 cells).
	extra := width - need()
	for i, c := range cols {
		if c.name == "TITLE" && extra > 0 {
			add := min(extra, 20-c.width)
			if !hasColumn(cols, "REASON") {
				add = extra
			}
			widths[i] += add
			extra -= add
		}
	}
	for i, c := range cols {
		if c.name == "REASON" && extra > 0 {
			widths[i] += extra
			extra = 0
		}
	}
	return cols, widths
}

func hasColumn(cols []column, name string) bool {
	for _, c := range cols {
		if c.name == name {
			return true
		}
	}
	return false
}

func clock(d time.Duration) string {
	d = d.Round(time.Second)
	if d < 0 {
		d = 0
	}
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

func tokens(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%dk", n/1000)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// rule is a section title: "── title ───…".
func (m *Model) rule(title string) string {
	t := "── " + title + " "
	return st.dim.Render(fit(t+strings.Repeat("─", max(m.width-width(t), 0)), m.width))
}

// View draws the frame (Bubble Tea calls it after every update). The
// program runs without Bubble Tea's renderer: the screen writer draws
// the changed lines itself (see screenWriter).
func (m *Model) View() tea.View {
	if m.term != nil {
		m.term.draw(m.Frame())
	}
	return tea.View{}
}

// Frame renders the frame: exactly the terminal's size.
func (m *Model) Frame() string {
	if m.quitting {
		return ""
	}
	sec := m.now().Unix()
	if m.cacheView != "" && m.cacheRev == m.rev && m.cacheSec == sec {
		return m.cacheView
	}
	m.cacheView, m.cacheRev, m.cacheSec = m.render(), m.rev, sec
	return m.cacheView
}

// render draws the frame.
func (m *Model) render() string {
	w, h := max(m.width, 1), max(m.height, 1)
	now := m.now()
	status := m.team.Status(now)
	var top, body, foot []string

	top = append(top, m.header(status))
	if m.mode == modeHelp {
		body = m.help(h - 2)
	} else {
		top = append(top, m.needs(status, max(h/6, 1))...)
		body = m.body(status, h-len(top)-1)
	}
	foot = append(foot, m.footer())

	lines := append(top, body...)
	if len(lines) > h-1 {
		lines = lines[:max(h-1, 0)]
	}
	for len(lines) < h-1 {
		lines = append(lines, "")
	}
	lines = append(lines, foot...)
	for i, l := range lines { // exactly w cells each, whatever a section did
		switch n := width(l); {
		case n > w:
			lines[i] = truncate(l, w, "")
		case n < w:
			lines[i] = l + strings.Repeat(" ", w-n)
		}
	}
	return strings.Join(lines[len(lines)-h:], "\n")
}

func (m *Model) header(status topology.Status) string {
	counts := map[string]int{}
	for _, p := range m.team.Panes {
		counts[p.State]++
	}
	done, total := 0, 0
	for _, ms := range status.Masters {
		done += ms.Tasks.Done
		total += ms.Tasks.Total
	}
	var cost float64
	known := false
	for _, p := range m.team.Panes {
		if p.CostUSD != nil {
			cost += *p.CostUSD
			known = true
		}
	}
	parts := []string{fmt.Sprintf("%d panes", len(m.team.Panes))}
	for _, s := range []string{"busy", "waiting", "idle", "error", "unreachable", "exited"} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	if total > 0 {
		parts = append(parts, fmt.Sprintf("tasks %d/%d", done, total))
	}
	if known {
		parts = append(parts, fmt.Sprintf("$%.2f", cost))
	}
	if n := notifyPart(status.Notify); n != "" {
		parts = append(parts, n)
	}
	link := "● live"
	switch {
	case !m.linked && m.linkErr != "":
		link = "○ reconnecting"
	case !m.linked:
		link = "○ connecting"
	}
	left := " cicy-agent  " + strings.Join(parts, " · ")
	room := m.width - width(link) - 1
	if room < width(left)+1 {
		return st.head.Render(fit(left, m.width))
	}
	return st.head.Render(fit(left, room)) + st.dim.Render(link) + " "
}

// notifyPart is the header's word on the notification sinks: which fail
// ("notify: telegram failing"), else how many deliver; "" with none.
func notifyPart(sinks []topology.SinkState) string {
	var failing []string
	for _, s := range sinks {
		if s.FailingSince != nil {
			failing = append(failing, s.Name)
		}
	}
	switch {
	case len(failing) > 0:
		return "notify: " + strings.Join(failing, ", ") + " failing"
	case len(sinks) == 1:
		return "notify: " + sinks[0].Name
	case len(sinks) > 1:
		return fmt.Sprintf("notify: %d sinks", len(sinks))
	}
	return ""
}

// needs lists what needs you (at most max lines).
func (m *Model) needs(status topology.Status, limit int) []string {
	var out []string
	for i, n := range status.NeedsYou {
		if i == limit-1 && len(status.NeedsYou) > limit {
			out = append(out, st.warn.Render(fit(fmt.Sprintf("! …and %d more (status --json lists them)", len(status.NeedsYou)-i), m.width)))
			break
		}
		title := ""
		if p, ok := m.team.Pane(n.ID); ok {
			title = " " + p.Title
		}
		what := n.Reason
		switch n.Kind {
		case topology.NeedWaiting:
			what = "waiting: " + n.Reason
		case topology.NeedError:
			what = "error: " + n.Reason
		case topology.NeedUnreachable:
			what = "unreachable: " + n.Reason
		case topology.NeedUpstream:
			what = "upstream: " + n.Reason
		case topology.NeedProvider:
			what = "provider: " + n.Reason
		case topology.NeedWorkerStopped:
			what = "stopped: " + n.Reason
		}
		style := st.warn
		switch n.Kind {
		case topology.NeedError, topology.NeedUnreachable, topology.NeedTaskFailed, topology.NeedBudget, topology.NeedUpstream, topology.NeedProvider, topology.NeedWorkerStopped, topology.NeedDiskFull:
			style = st.bad
		case topology.NeedAllDone:
			style = st.good.Bold(true)
		}
		out = append(out, style.Render(fit("! "+n.ID+title+" — "+what, m.width)))
	}
	return out
}

// body is the table, topology, tasks and preview in h lines.
func (m *Model) body(status topology.Status, h int) []string {
	if h <= 0 {
		return nil
	}
	if len(m.team.Panes) == 0 {
		msg := "no panes yet: 'cicy-agent create' or 'cicy-agent up team.yaml' starts some"
		if !m.team.Synced {
			msg = "connecting to the supervisor…"
		}
		return []string{st.dim.Render(fit(" "+msg, m.width))}
	}
	topo := m.topology(status)
	tasks := m.tasks()
	// Shares: the table first (all rows if it can), then the topology,
	// recent tasks, and the preview takes the rest.
	tableWant := 1 + len(m.team.Panes)
	tableH := min(tableWant, max(h*2/5, 4))
	topoH := min(len(topo), max(h/5, 2))
	tasksH := min(len(tasks), max(h/6, 2))
	previewH := h - tableH - topoH - tasksH
	if previewH < 3 { // no room for a useful preview: give it back
		tasksH = min(len(tasks), tasksH+max(previewH, 0))
		previewH = 0
	}
	for tableH+topoH+tasksH+previewH > h {
		switch {
		case tasksH > 0:
			tasksH--
		case topoH > 0:
			topoH--
		default:
			tableH--
		}
	}
	if previewH > 0 { // the table may grow into the preview's spare room
		previewH = h - tableH - topoH - tasksH
	}
	out := m.table(tableH)
	out = append(out, topo[:topoH]...)
	out = append(out, tasks[:tasksH]...)
	if previewH > 0 {
		out = append(out, m.previewLines(previewH)...)
	}
	return out
}

func (m *Model) table(h int) []string {
	if h <= 0 {
		return nil
	}
	cols, widths := layout(m.width, m.team.Panes)
	var hdr strings.Builder
	hdr.WriteString("  ")
	for i, c := range cols {
		if i > 0 {
			hdr.WriteByte(' ')
		}
		hdr.WriteString(align(c.name, widths[i], c.right))
	}
	out := []string{st.dim.Render(fit(hdr.String(), m.width))}
	rows := h - 1
	sel := max(m.team.index(m.selected), 0)
	if sel < m.offset {
		m.offset = sel
	}
	if rows > 0 && sel >= m.offset+rows {
		m.offset = sel - rows + 1
	}
	m.offset = min(m.offset, max(len(m.team.Panes)-rows, 0))
	current := m.team.Current()
	for i := m.offset; i < len(m.team.Panes) && len(out) < h; i++ {
		p := row{PaneInfo: m.team.Panes[i]}
		if t, ok := current[p.ID]; ok {
			p.task = &t
		}
		mark := "  "
		if p.ID == m.selected {
			mark = "▸ "
		}
		var line strings.Builder
		line.WriteString(mark)
		for j, c := range cols {
			if j > 0 {
				line.WriteByte(' ')
			}
			cell := align(c.cell(m, p), widths[j], c.right)
			if c.name == "STATE" {
				cell = st.state(p.State).Render(cell)
			}
			line.WriteString(cell)
		}
		text := line.String()
		pad := m.width - width(text)
		if pad < 0 {
			text = truncate(text, m.width, "")
		} else {
			text += strings.Repeat(" ", pad)
		}
		if p.ID == m.selected {
			text = st.sel.Render(ansi.Strip(text))
		}
		out = append(out, text)
	}
	return out
}

func align(s string, w int, right bool) string {
	if !right {
		return fit(s, w)
	}
	s = fit(s, w)
	t := strings.TrimRight(s, " ")
	return strings.Repeat(" ", w-width(t)) + t
}

// topology is each master with its completion bar, then its workers.
func (m *Model) topology(status topology.Status) []string {
	if len(status.Masters) == 0 && len(status.Unassigned) == 0 {
		return nil
	}
	out := []string{m.rule("topology")}
	barW := min(20, max(m.width/6, 5))
	for _, ms := range status.Masters {
		c := ms.Tasks
		filled := 0
		if c.Total > 0 {
			filled = (c.Done + c.Failed + c.Cancelled) * barW / c.Total
		}
		label := fmt.Sprintf(" %d/%d done", c.Done, c.Total)
		if c.Failed > 0 {
			label += fmt.Sprintf(" · %d failed", c.Failed)
		}
		if c.Queued > 0 {
			label += fmt.Sprintf(" · %d queued", c.Queued)
		}
		head := fmt.Sprintf("%s %s ", ms.ID, ms.Title)
		headW := min(width(head), max(m.width-barW-width(label)-2, 4))
		line := fit(head, headW) + "[" + st.bar.Render(strings.Repeat("█", filled)) + st.barEmpty.Render(strings.Repeat("░", barW-filled)) + "]"
		rest := m.width - headW - barW - 2
		out = append(out, line+fit(label, rest))
		out = append(out, fit("  └ "+workers(ms.Workers), m.width))
	}
	if len(status.Unassigned) > 0 {
		out = append(out, fit("no master: "+workers(status.Unassigned), m.width))
	}
	return out
}

func workers(ws []topology.Worker) string {
	if len(ws) == 0 {
		return "(no workers)"
	}
	parts := make([]string, 0, len(ws))
	for _, w := range ws {
		s := w.ID + " " + w.Title + " " + w.State
		if w.CurrentTask != "" {
			s += " #" + w.CurrentTask
		}
		if w.Branch != "" && w.Ahead > 0 {
			s += " " + w.Branch + " " + api.AheadLines(w.Ahead, w.Added, w.Deleted)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " · ")
}

// tasks are the latest tasks, newest first.
func (m *Model) tasks() []string {
	recent := m.team.Recent()
	if len(recent) == 0 {
		return nil
	}
	out := []string{m.rule("recent tasks")}
	for _, t := range recent {
		status := fit(t.Status, 9)
		switch t.Status {
		case api.TaskDone:
			status = st.good.Render(status)
		case api.TaskFailed:
			status = st.bad.Render(status)
		case api.TaskDelivered:
			status = st.busy.Render(status)
		default:
			status = st.dim.Render(status)
		}
		head := fmt.Sprintf("#%-4d %s→%s ", t.ID, t.From, t.To)
		text := t.Text
		if t.Status == api.TaskFailed && t.Error != "" {
			text = t.Error + " · " + text
		}
		out = append(out, fit(head, 16)+status+" "+fit(topology.FirstLine(text), m.width-26))
	}
	return out
}

// previewLines are the selected pane's screen: its last lines that fit.
func (m *Model) previewLines(h int) []string {
	p, _ := m.team.Pane(m.selected)
	title := p.ID + " " + p.Title + " · " + p.State
	if panetype.InProcess(p.Type) {
		title += " · reply"
	} else {
		title += " · screen"
	}
	out := []string{m.rule(title)}
	text := strings.TrimRight(m.screen.Screen, "\n ")
	var lines []string
	if text != "" {
		lines = strings.Split(text, "\n")
	}
	// Trailing blank lines of a terminal screen carry nothing.
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if n := h - 1; len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for _, l := range lines {
		out = append(out, fit(" "+l, m.width))
	}
	for len(out) < h {
		out = append(out, fit("", m.width))
	}
	return out
}

func (m *Model) footer() string {
	switch m.mode {
	case modeSend:
		return st.head.Render(fit(" send to "+m.selected+" › "+string(m.input)+"█", m.width))
	case modeDispatch:
		return st.head.Render(fit(" task for "+m.selected+" › "+string(m.input)+"█", m.width))
	case modeKill:
		p, _ := m.team.Pane(m.selected)
		return st.bad.Render(fit(fmt.Sprintf(" kill %s %s? its process stops; its workspace stays. y/N", p.ID, p.Title), m.width))
	case modeHelp:
		return st.dim.Render(fit(" any key returns", m.width))
	}
	if m.flash != "" {
		style := st.good
		if m.flashErr {
			style = st.bad
		}
		return style.Render(fit(" "+m.flash, m.width))
	}
	keys := " ↑↓ select  ⏎ attach  s send  d dispatch  c compact  x kill  ? help  q quit"
	if m.width < width(keys) {
		keys = " ↑↓ ⏎ s d c x ? q"
	}
	return st.dim.Render(fit(keys, m.width))
}

// NeedKindLines are the kinds of needs-you, one per line after indent:
// the kind (as status names it) and what it means.
func NeedKindLines(indent string) []string {
	w := 0
	for _, k := range topology.NeedKinds {
		w = max(w, len(k.Kind))
	}
	out := make([]string, 0, len(topology.NeedKinds))
	for _, k := range topology.NeedKinds {
		out = append(out, fmt.Sprintf("%s%-*s  %s", indent, w, topology.NeedLabel(k.Kind), k.Means))
	}
	return out
}

// help is the help screen in rows lines: the kinds of needs-you one per
// line with what each means when they fit, else their names wrapped (and
// where status explains them).
// needKindNames are the kinds of needs-you by name only, wrapped at w
// cells after indent, closed by where each is explained.
func needKindNames(w int, indent string) []string {
	words := make([]string, 0, len(topology.NeedKinds)+4)
	for i, k := range topology.NeedKinds {
		sep := ","
		if i == len(topology.NeedKinds)-1 {
			sep = " (cicy-agent status --help says what each means)"
		}
		words = append(words, topology.NeedLabel(k.Kind)+sep)
	}
	var out []string
	line := ""
	for _, wd := range words {
		for _, part := range strings.Fields(wd) {
			if line != "" && width(line)+1+width(part) > w {
				out = append(out, indent+line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += part
		}
	}
	return append(out, indent+line)
}

func (m *Model) help(rows int) []string {
	text := []string{
		"",
		" cicy-agent dashboard — the team, live",
		"",
		"   ↑ ↓  j k    select a pane (g G: first, last)",
		"   Enter       attach: a CLI pane's terminal (Ctrl-Q detaches) or a",
		"               cicy pane's chat (Ctrl-D detaches); back here after",
		"   s           send the selected pane a message",
		"   d           dispatch a task to the selected worker (from its master)",
		"   c           compact a cicy pane's conversation",
		"   x           kill the selected pane (asks first; its workspace stays)",
		"   ?           this help",
		"   q  Ctrl-C   quit (the team keeps running)",
		"",
		" ! lines need you, and ring the bell when they appear (--bell=false: silent):",
	}
	if kinds := NeedKindLines("   "); len(text)+len(kinds) <= rows {
		text = append(text, kinds...)
	} else {
		text = append(text, needKindNames(max(m.width, 20)-4, "   ")...)
	}
	out := make([]string, 0, len(text))
	for _, l := range text {
		out = append(out, fit(l, m.width))
	}
	return out
}
