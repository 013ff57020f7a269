package api

import "time"

// Explanation is `explain <pane>`: why a live pane has its state.
type Explanation struct {
	Pane PaneInfo `json:"pane"`
	// Signal is what set the state, read from its reason.
	Signal Signal `json:"signal"`
	// FoundAtRestart is true for a pane that ended while no supervisor
	// watched it (killed with the supervisor, its tmux session gone):
	// its state's since is when a supervisor's start found it ended.
	FoundAtRestart bool `json:"found_at_restart,omitempty"`
	// LastHook is a CLI agent's last signal applied (null when none came
	// from this supervisor's start); ScreenRulesFrom is when its screen
	// rules may overrule it.
	LastHook *HookSeen `json:"last_hook"`
	// LastIgnored is the last hook whose meaning was to ignore it (Claude
	// Code's SessionStart, before its prompt takes input).
	LastIgnored *HookIgnored `json:"last_ignored_hook,omitempty"`
	// Rules is what the screen rules say of the current screen (CLI agent
	// panes), or why there are none (shell and cicy panes).
	Rules RulesVerdict `json:"screen_rules"`
	// Turn is a cicy pane's current or last turn.
	Turn *TurnSeen `json:"turn,omitempty"`
	// Screen is the current screen (a cicy pane's latest reply).
	Screen string `json:"screen"`
	// Answers are the person's latest answers to the pane, oldest first.
	Answers []Answer `json:"answers,omitempty"`
}

// Signal is what decided a pane's state.
type Signal struct {
	// Kind is hook, gateway, screen_rule, output, quiet, input, start,
	// turn, command, process or other.
	Kind string `json:"kind"`
	// Name is the hook's event, the screen rule's name, or the gateway's
	// request or request-ended.
	Name   string    `json:"name,omitempty"`
	At     time.Time `json:"at"`
	Detail string    `json:"detail"`
}

// HookSeen is the last hook applied to a CLI agent pane.
type HookSeen struct {
	Event           string    `json:"event"`
	At              time.Time `json:"at"`
	ScreenRulesFrom time.Time `json:"screen_rules_from"`
}

// HookIgnored is the last hook a CLI agent pane ignored, and why.
type HookIgnored struct {
	Event string    `json:"event"`
	At    time.Time `json:"at"`
	Why   string    `json:"why"`
}

// RulesVerdict is what a pane's screen rules say of its current screen.
type RulesVerdict struct {
	// Applies is false for panes without screen rules (shell, cicy).
	Applies bool `json:"applies"`
	// State is busy, idle or waiting, or "unknown" when no rule matched
	// (the pane keeps its state).
	State string `json:"state,omitempty"`
	Rule  string `json:"rule,omitempty"`
	// Part is the part of the layout the deciding rule looked at (empty
	// for a rule that names none: it reads the whole screen).
	Part  string `json:"part,omitempty"`
	Match string `json:"match,omitempty"`
	Line  string `json:"line,omitempty"`
	// LineNo is the matching line's number on the screen, from 1.
	LineNo int    `json:"line_no,omitempty"`
	Note   string `json:"note"`
	// Warning says that the deciding rule names no part (or the
	// transcript), so text the agent or its user wrote can set it off.
	Warning string `json:"warning,omitempty"`
	// Parts are the parts of the agent's layout found on the screen.
	Parts []ScreenPart `json:"parts,omitempty"`
	// Pending is the state the pane's last look of its screen rules gave,
	// other than its own: it takes it if the next look gives it again.
	Pending string `json:"pending,omitempty"`
	// Overruled says why the verdict does not apply now: the gateway
	// holds a model request of the agent, which keeps the pane busy.
	Overruled string `json:"overruled,omitempty"`
}

// ScreenPart is one part of an agent's layout found on a screen: its
// lines From to To, counted from 1.
type ScreenPart struct {
	Part string `json:"part"`
	From int    `json:"from"`
	To   int    `json:"to"`
}

// TurnSeen is a cicy pane's current or last turn.
type TurnSeen struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	StartedAt time.Time `json:"started_at"`
	UpdatedAt time.Time `json:"updated_at"`
	ToolCalls int       `json:"tool_calls"`
	Messages  int       `json:"messages"`
}
