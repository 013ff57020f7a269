// Package signals holds what a CLI agent pane's own signals said (see
// docs/hooks.md): its native completion hooks (`cicy-agent hook`, spooled
// while no supervisor runs), the gateway's news of its main-loop model
// requests (in flight, and their answers), and the agent's own session id.
// From them it reads whether a typed task was taken up and how the turn
// ended: the task's result or failure.
//
// The logs here are kept per pane by the supervisor's registry and outlive
// a restart of the pane's program. What applying a signal needs of the
// registry — the pane, its lock, the store — it asks through the small
// interfaces it declares (Target, SessionStore); the supervisor keeps the
// thin wiring.
package signals
