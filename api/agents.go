package api

// AgentType is one kind of pane `create --type` takes, as `cicy-agent
// agents --json` lists it.
type AgentType struct {
	// Type is the name create takes: cicy, shell, or a CLI agent.
	Type string `json:"type"`
	// Builtin: the pane runs no agent program of its own to install (a
	// cicy agent's turn loop runs in the supervisor; a shell pane runs
	// any command).
	Builtin bool `json:"builtin"`
	// Program, Package and Version: a CLI agent's program and the npm
	// package, at the version cicy-agent is tested with; no Package for a
	// program not on npm (installed by hand, on PATH).
	Program string `json:"program,omitempty"`
	Package string `json:"package,omitempty"`
	Version string `json:"version,omitempty"`
	// Path is where the program is found (PATH, else the folder `make
	// clis` installs into); Installed its package's version there when it
	// can be read. Missing says how to install it when it is not found.
	Path      string `json:"path,omitempty"`
	Installed string `json:"installed,omitempty"`
	Missing   string `json:"missing,omitempty"`
	// APIs are the model APIs it speaks ("anthropic", "chat", "responses", "gemini").
	APIs []string `json:"apis"`
	// Signals are where its state comes from besides its screen.
	Signals []string `json:"signals"`
	// ResumesByID: a CLI agent that takes up one of its sessions by its
	// id; Resume the arguments that do, after its program's name, with
	// the id as "<id>" (absent when it cannot).
	ResumesByID bool     `json:"resumes_by_id"`
	Resume      []string `json:"resume,omitempty"`
}
