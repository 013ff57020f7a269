package dashboard

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
	"unicode"

	tea "charm.land/bubbletea/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Backend is what the dashboard asks of the supervisor (a
// *api.Client).
type Backend interface {
	Send(ctx context.Context, id string, req api.SendRequest) (*api.SendResult, error)
	Dispatch(ctx context.Context, req api.DispatchRequest) (api.TaskInfo, error)
	Command(ctx context.Context, id, cmd string) (*api.SendResult, error)
	Kill(ctx context.Context, id string) error
}

// mode is what the keyboard does now.
type mode int

const (
	modeNormal   mode = iota
	modeSend          // typing a message for the selected pane
	modeDispatch      // typing a task for the selected worker
	modeKill          // confirming a kill
	modeHelp          // the help screen
)

// Messages of the program.
type (
	// eventsMsg is a batch of the team's events.
	eventsMsg []api.Event
	// linkMsg says whether the event stream is connected.
	linkMsg struct {
		up  bool
		err error
	}
	// previewMsg is the selected pane's screen; seq tells stale ones.
	previewMsg struct {
		seq    int
		screen api.ScreenResponse
	}
	// selectMsg fires a moment after the selection settles.
	selectMsg struct{ seq int }
	tickMsg   time.Time
	// doneMsg is the outcome of an action: a line for the footer.
	doneMsg struct {
		text string
		err  error
	}
)

// Model is the dashboard's state. Everything it shows comes from the team
// (fed by events), the preview stream and the clock.
type Model struct {
	team    *Team
	backend Backend
	// attach is the command Enter runs for a pane (cicy-agent attach).
	attach func(id string) *exec.Cmd
	// preview starts following a pane's screen (seq numbers it); nil
	// follows nothing.
	preview func(seq int, id string)
	now     func() time.Time
	bell    bool

	width, height int
	selected      string // pane id
	offset        int    // first table row shown
	mode          mode
	input         []rune
	flash         string
	flashErr      bool
	flashAt       time.Time
	linked        bool
	linkErr       string

	seq       int // selection changes
	screen    api.ScreenResponse
	attention map[string]bool // needs-you items already seen
	primed    bool            // attention holds what was there at the start
	bellOut   io.Writer
	bells     int // rung so far
	onStart   func()
	// term draws the frames (Run); nil in tests, which read Frame.
	term *screenWriter
	tty  *rawTerm // the terminal's mode, when it is one

	// rev counts the updates that may change the frame; View renders
	// again only when it or the clock's second moved.
	rev       int
	cacheRev  int
	cacheSec  int64
	cacheView string
	quitting  bool
}

// Options configure a Model.
type Options struct {
	Backend Backend
	Attach  func(id string) *exec.Cmd
	Preview func(seq int, id string)
	Now     func() time.Time
	// Bell rings the terminal bell (writes BEL to BellOut) when something
	// new needs you.
	Bell    bool
	BellOut io.Writer
	// OnStart is called once the program runs (from Init).
	OnStart func()
}

// NewModel is a dashboard over an empty team; events fill it.
func NewModel(o Options) *Model {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Model{team: NewTeam(), backend: o.Backend, attach: o.Attach, preview: o.Preview, now: o.Now, bell: o.Bell, bellOut: o.BellOut, onStart: o.OnStart,
		width: 80, height: 24, attention: map[string]bool{}}
}

// Init starts the clock (elapsed times tick once a second).
func (m *Model) Init() tea.Cmd {
	if m.onStart != nil {
		m.onStart()
	}
	return tick()
}

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m.rev++
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		if m.term != nil {
			m.term.invalidate()
		}
		return m, nil
	case eventsMsg:
		for _, ev := range msg {
			m.team.Apply(ev)
		}
		return m, tea.Batch(m.keepSelection(), m.ring())
	case linkMsg:
		m.linked = msg.up
		m.linkErr = ""
		if msg.err != nil {
			m.linkErr = msg.err.Error()
		}
		return m, nil
	case previewMsg:
		if msg.seq == m.seq {
			m.screen = msg.screen
		}
		return m, nil
	case selectMsg:
		if msg.seq == m.seq && m.preview != nil {
			m.preview(m.seq, m.selected)
		}
		return m, nil
	case tickMsg:
		if m.flash != "" && m.now().Sub(m.flashAt) > 8*time.Second {
			m.flash = ""
		}
		return m, tick()
	case doneMsg:
		m.say(msg.text, msg.err)
		return m, nil
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.PasteMsg:
		if m.mode == modeSend || m.mode == modeDispatch {
			m.input = append(m.input, []rune(strings.ReplaceAll(msg.Content, "\n", " "))...)
		}
		return m, nil
	}
	return m, nil
}

func (m *Model) say(text string, err error) {
	m.flash, m.flashErr, m.flashAt = text, err != nil, m.now()
	if err != nil {
		m.flash = err.Error()
	}
}

// keepSelection keeps a pane selected (the first, or the neighbour of one
// that went) and follows it in the preview.
func (m *Model) keepSelection() tea.Cmd {
	if len(m.team.Panes) == 0 {
		m.selected = ""
		return nil
	}
	if _, ok := m.team.Pane(m.selected); ok {
		return nil
	}
	i := 0
	for j, p := range m.team.Panes {
		if api.PaneNum(p.ID) < api.PaneNum(m.selected) {
			i = j
		}
	}
	return m.choose(m.team.Panes[i].ID)
}

// choose selects a pane; its preview follows once the selection rests.
func (m *Model) choose(id string) tea.Cmd {
	if id == m.selected {
		return nil
	}
	m.selected = id
	m.seq++
	m.screen = api.ScreenResponse{}
	seq := m.seq
	return tea.Tick(80*time.Millisecond, func(time.Time) tea.Msg { return selectMsg{seq} })
}

// ring rings the bell once for each new thing that needs you. What needs
// you when the dashboard starts is the state of things, not news: it does
// not ring.
func (m *Model) ring() tea.Cmd {
	if !m.team.Synced {
		return nil
	}
	seen := map[string]bool{}
	fresh := false
	for _, n := range m.team.Status(m.now()).NeedsYou {
		k := fmt.Sprintf("%s/%s/%d", n.Kind, n.ID, n.Task)
		seen[k] = true
		fresh = fresh || !m.attention[k]
	}
	m.attention = seen
	if !m.primed {
		m.primed = true
		return nil
	}
	if !fresh || !m.bell || m.bellOut == nil {
		return nil
	}
	m.bells++
	out := m.bellOut
	return func() tea.Msg {
		_, _ = out.Write([]byte("\a"))
		return nil
	}
}

func (m *Model) move(d int) tea.Cmd {
	if len(m.team.Panes) == 0 {
		return nil
	}
	i := max(m.team.index(m.selected), 0) + d
	i = min(max(i, 0), len(m.team.Panes)-1)
	return m.choose(m.team.Panes[i].ID)
}

func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	switch m.mode {
	case modeHelp:
		m.mode = modeNormal
		if k.String() == "q" || k.String() == "ctrl+c" {
			return m.quit()
		}
		return nil
	case modeKill:
		m.mode = modeNormal
		if k.String() == "y" || k.String() == "Y" {
			id := m.selected
			return m.do(func(ctx context.Context) (string, error) {
				return "killed " + id, m.backend.Kill(ctx, id)
			})
		}
		m.say("not killed", nil)
		return nil
	case modeSend, modeDispatch:
		return m.edit(k)
	}
	switch k.String() {
	case "q", "ctrl+c":
		return m.quit()
	case "up", "k":
		return m.move(-1)
	case "down", "j":
		return m.move(1)
	case "home", "g":
		return m.move(-len(m.team.Panes))
	case "end", "G":
		return m.move(len(m.team.Panes))
	case "?":
		m.mode = modeHelp
	case "enter":
		return m.attachSelected()
	case "s":
		if m.selected != "" {
			m.mode, m.input = modeSend, nil
		}
	case "d":
		p, ok := m.team.Pane(m.selected)
		switch {
		case !ok:
		case p.Role != topology.RoleWorker:
			m.say("", fmt.Errorf("%s is a %s; tasks go to workers", p.ID, roleName(p.Role)))
		default:
			m.mode, m.input = modeDispatch, nil
		}
	case "c":
		p, ok := m.team.Pane(m.selected)
		switch {
		case !ok:
		case !panetype.InProcess(p.Type):
			m.say("", fmt.Errorf("%s is a %s pane; c compacts cicy panes", p.ID, p.Type))
		default:
			id := p.ID
			m.say("compacting "+id+"…", nil)
			return m.do(func(ctx context.Context) (string, error) {
				res, err := m.backend.Command(ctx, id, "/compact")
				if err != nil {
					return "", err
				}
				if res.Error != "" {
					return "", fmt.Errorf("compact %s: %s", id, res.Error)
				}
				return "compacted " + id + ": " + topology.FirstLine(res.Answer), nil
			})
		}
	case "x":
		if m.selected != "" {
			m.mode = modeKill
		}
	}
	return nil
}

func roleName(role string) string {
	if role == "" {
		return "pane with no role"
	}
	return role
}

func (m *Model) quit() tea.Cmd {
	m.quitting = true
	return tea.Quit
}

// edit is the one-line editor of send and dispatch.
func (m *Model) edit(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case k.Code == tea.KeyEscape || k.String() == "ctrl+c":
		m.mode = modeNormal
		return nil
	case k.Code == tea.KeyBackspace:
		if len(m.input) > 0 {
			m.input = m.input[:len(m.input)-1]
		}
		return nil
	case k.String() == "ctrl+u":
		m.input = nil
		return nil
	case k.String() == "ctrl+w":
		s := strings.TrimRightFunc(string(m.input), unicode.IsSpace)
		if i := strings.LastIndexFunc(s, unicode.IsSpace); i >= 0 {
			m.input = []rune(s[:i+1])
		} else {
			m.input = nil
		}
		return nil
	case k.Code == tea.KeyEnter:
	case k.Text != "":
		m.input = append(m.input, []rune(k.Text)...)
		return nil
	default:
		return nil
	}
	text := strings.TrimSpace(string(m.input))
	md, id := m.mode, m.selected
	m.mode, m.input = modeNormal, nil
	if text == "" {
		return nil
	}
	if md == modeSend {
		return m.do(func(ctx context.Context) (string, error) {
			_, err := m.backend.Send(ctx, id, api.SendRequest{Text: text})
			return "sent to " + id, err
		})
	}
	return m.do(func(ctx context.Context) (string, error) {
		t, err := m.backend.Dispatch(ctx, api.DispatchRequest{To: id, Text: text})
		return fmt.Sprintf("task %d queued for %s", t.ID, id), err
	})
}

// do runs an action off the program's loop and reports how it went.
func (m *Model) do(f func(ctx context.Context) (string, error)) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		text, err := f(ctx)
		return doneMsg{text: text, err: err}
	}
}

// attachSelected hands the terminal to `cicy-agent attach`; detaching
// brings the dashboard back.
func (m *Model) attachSelected() tea.Cmd {
	p, ok := m.team.Pane(m.selected)
	if !ok || m.attach == nil {
		return nil
	}
	id := p.ID
	done := func(err error) tea.Msg {
		if err != nil {
			return doneMsg{err: fmt.Errorf("attach %s: %w", id, err)}
		}
		return doneMsg{text: "detached from " + id}
	}
	if m.term != nil {
		return tea.Exec(&execOnMain{cmd: m.attach(id), screen: m.term, tty: m.tty}, done)
	}
	return tea.ExecProcess(m.attach(id), done)
}
