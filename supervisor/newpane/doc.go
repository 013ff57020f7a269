// Package newpane holds what a new pane is before the supervisor
// registers it: its create request checked and its defaults filled
// (Normalize: title, role, type, template, backend, links between fields,
// --env names, the program of a shell pane), what it names checked
// (CheckNames: its role template, and its master as the supervisor's
// registry says), the warnings it gets (MissingEnv), the row it stores
// (Row, with its Config) and its folders made (Prepare: the pane's folder
// and workspace, folders an earlier pane of the same id left set aside,
// its guidance file, all undone if the pane does not start).
//
// It keeps these rules in one place a newcomer can read without the
// daemon: the supervisor's Create (supervisor.go) calls them in order and
// registers the pane; what this package needs of the supervisor — the
// role of a master, where the home's folders are, the worktree keeper's
// Add — it is given as arguments. It never imports the supervisor.
package newpane
