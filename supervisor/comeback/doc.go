// Package comeback holds how the supervisor's panes come back after a
// reboot, a crash or an exit, and what is kept for them meanwhile:
//
//   - restart policies (AtStart, AfterExit, FoundGone): which pane comes
//     back at a start and which after its program exited by itself;
//   - crash loops (Lives, Decide): quick deaths in a row counted, the
//     wait before a return doubled with each, a loop stopped under
//     needs-you, a session that cannot be resumed given up for a new
//     conversation;
//   - the returns themselves (Returns): on goroutines of their own, the
//     panes found gone brought back once the outbox has settled their
//     tasks, and status's summary of how they came back (Summary);
//   - the reasons shown (Reboot, ByPolicy, Resumed, CrashLoop,
//     CouldNotComeBack, …);
//   - a task in flight when the machine went down (ResumedTask): told the
//     machine restarted once its worker is back in its session, failed
//     as interrupted by a restart otherwise;
//   - a lost database (CheckDatabase, DBLost, SetAsideForeign): missing
//     or empty while the home still holds panes, refused, or with
//     --fresh moved aside, and said;
//   - a team's agent killed by down (Leave, Take, Left.Move): its session
//     kept for the next pane of the same title that up makes.
//
// It is a package of its own so that the decisions are written down apart
// from the registry and can be tested by tables, and what coming back
// needs of the rest of the supervisor is small and named: the interfaces
// it declares — Panes (start a pane again, stop it in a crash loop, how a
// pane found gone is now), Worker and Runner (a resumed task's pane) and
// Settings (where a left session is kept) — which the supervisor
// implements (supervisor/comebackwire.go); this package does not import
// it. What starts a pane, and the registry's entries and kinds, stay in
// the supervisor.
package comeback
