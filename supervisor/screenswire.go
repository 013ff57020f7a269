package supervisor

import (
	"context"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/screens"
)

// The screens (supervisor/screens: the preview, the styled screen, the
// explanation, the view) wired to the core: the registry as they see it.

// screensCore is the registry as the screens see it (screens.Core).
type screensCore struct{ *Supervisor }

func (c screensCore) Pane(id string) (screens.Pane, error) {
	e, err := c.get(id)
	if err != nil {
		return nil, err
	}
	return screenPane{c.Supervisor, e}, nil
}

func (c screensCore) Answers(ctx context.Context, pane string, task int64) []api.Answer {
	return c.notify.Answers(ctx, pane, task)
}

func (c screensCore) Settle() time.Duration { return c.cfg.Settle }

func (c screensCore) Scrub(text string) string { return c.scrub.String(text) }

// screenPane is an entry as the screens see it (screens.Pane).
type screenPane struct {
	s *Supervisor
	e *entry
}

func (p screenPane) ID() string         { return p.e.cfg.ID }
func (p screenPane) Type() string       { return p.e.cfg.Type }
func (p screenPane) Kind() screens.Kind { return p.e.kind() }
func (p screenPane) Wake()              { p.s.awaken(p.e) }
func (p screenPane) Info() api.PaneInfo { return p.s.describe(p.e) }

func (p screenPane) Gone() bool {
	_, err := p.s.get(p.e.cfg.ID)
	return err != nil
}
