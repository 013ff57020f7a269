package screens

import (
	"strings"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
)

// StyledScreen is Screen with the screen's colours in Styled: a terminal
// pane's runs of styled text, any other pane's lines as plain runs. Screen
// and Styled are read from one look at the screen.
func (r *Room) StyledScreen(id string, lines int) (api.ScreenResponse, error) {
	p, err := r.core.Pane(id)
	if err != nil {
		return api.ScreenResponse{}, err
	}
	k := p.Kind()
	var styled []pane.StyledLine
	var text string
	if ss, ok := k.(StyledScreener); ok {
		if styled, ok = ss.StyledScreen(); ok {
			text = pane.StyledText(styled)
		}
	}
	if styled == nil {
		if text, err = k.Screen(); err != nil {
			return api.ScreenResponse{}, err
		}
	}
	out, whole := r.respond(p, k.Status(), text, lines)
	runs := scrubStyled(styled, text, whole)
	if lines > 0 && len(runs) > lines {
		runs = runs[len(runs)-lines:]
	}
	out.Styled = runs
	return out, nil
}

// scrubStyled is a screen's styled lines after its text was scrubbed of
// credentials (scrubbed is text scrubbed): a line the scrubbing changed is
// given as one plain run of its scrubbed text, so a secret split over runs
// of different styles is gone too; when the scrubbing changed the number
// of lines every line is plain.
func scrubStyled(styled []pane.StyledLine, text, scrubbed string) [][]api.StyledRun {
	plain, clean := strings.Split(text, "\n"), strings.Split(scrubbed, "\n")
	out := make([][]api.StyledRun, len(clean))
	for i, c := range clean {
		if len(plain) == len(clean) && plain[i] == c && i < len(styled) {
			out[i] = apiRuns(styled[i])
			continue
		}
		out[i] = []api.StyledRun{}
		if c != "" {
			out[i] = append(out[i], api.StyledRun{Text: c})
		}
	}
	return out
}

func apiRuns(l pane.StyledLine) []api.StyledRun {
	runs := make([]api.StyledRun, len(l))
	for i, r := range l {
		runs[i] = api.StyledRun{
			Text: r.Text, FG: r.FG.String(), BG: r.BG.String(),
			Bold: r.Bold, Italic: r.Italic, Underline: r.Underline, Reverse: r.Reverse,
		}
	}
	return runs
}
