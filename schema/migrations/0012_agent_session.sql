-- 0012: a CLI agent's own session id (its conversation, as it names it),
-- recorded as soon as the agent reveals it (its hooks, plugin or
-- extension events) and replaced when it switches session (/clear,
-- /resume): what a restart resumes. session_at is when it was first seen.
ALTER TABLE agent_config ADD COLUMN session_id TEXT NOT NULL DEFAULT '';
ALTER TABLE agent_config ADD COLUMN session_at TEXT NOT NULL DEFAULT '';
