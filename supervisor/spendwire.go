package supervisor

import "github.com/cicy-ai/cicy-agent/supervisor/spend"

// The spending (supervisor/spend) wired to the core: the panes as it sees
// them.

// spendPanes are the panes as the spending (package spend) sees them.
type spendPanes struct{ s *Supervisor }

func spendPane(e *entry) spend.Pane {
	return spend.Pane{ID: e.cfg.ID, Title: e.cfg.Title, Team: e.team}
}

func (p spendPanes) Live(id string) (spend.Pane, bool) {
	e, ok := p.s.live(id)
	if !ok {
		return spend.Pane{}, false
	}
	return spendPane(e), true
}

func (p spendPanes) Registered(id string) (spend.Pane, bool) {
	sp, err := spendOf(p.s.get(id))
	return sp, err == nil
}

func (p spendPanes) Local(ref string) (spend.Pane, error) { return spendOf(p.s.localPane(ref)) }

func (p spendPanes) Resolve(ref string) (spend.Pane, error) { return spendOf(p.s.resolvePane(ref)) }

// spendOf is the pane a look-up found, or its error.
func spendOf(e *entry, err error) (spend.Pane, error) {
	if err != nil {
		return spend.Pane{}, err
	}
	return spendPane(e), nil
}

func (p spendPanes) LiveTeams() map[string]string {
	teams := map[string]string{}
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	for _, m := range []map[string]*entry{p.s.panes, p.s.starting} {
		for id, e := range m {
			if e.team != "" {
				teams[id] = e.team
			}
		}
	}
	return teams
}

func (p spendPanes) Changed(id string) { p.s.paneChanged(id) }
