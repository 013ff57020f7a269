-- 0001: the supervisor's state. Later issues add behaviour, not tables:
-- tasks already has every column the task outbox needs.

CREATE TABLE agent_config (
    pane_id       TEXT PRIMARY KEY,
    title         TEXT NOT NULL,
    agent_type    TEXT NOT NULL CHECK (agent_type IN ('cicy', 'claude', 'codex', 'opencode', 'shell')),
    role          TEXT NOT NULL DEFAULT 'worker',
    role_template TEXT NOT NULL DEFAULT '',
    workspace     TEXT NOT NULL,
    provider      TEXT NOT NULL DEFAULT '',
    model         TEXT NOT NULL DEFAULT '',
    command       TEXT NOT NULL DEFAULT '[]',   -- argv, JSON array
    backend       TEXT NOT NULL CHECK (backend IN ('pty', 'tmux', 'inproc')),
    master        TEXT,                          -- pane id of the master this worker reports to
    config        TEXT NOT NULL DEFAULT '{}',   -- JSON
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);

-- Pane ids w-N come from this counter and are never reused, even after kill.
CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT INTO counters (name, value) VALUES ('pane', 0), ('task', 0);

-- The last known runtime state of each pane, so that a restarted supervisor
-- can say what happened to it. Written on start and exit, not on every
-- busy/idle flip.
CREATE TABLE pane_runtime (
    pane_id   TEXT PRIMARY KEY REFERENCES agent_config (pane_id) ON DELETE CASCADE,
    state     TEXT NOT NULL,
    reason    TEXT NOT NULL DEFAULT '',
    since     TEXT NOT NULL,
    pid       INTEGER NOT NULL DEFAULT 0,
    exit_code INTEGER
);

CREATE TABLE tasks (
    id           INTEGER PRIMARY KEY,
    from_pane    TEXT NOT NULL DEFAULT '',
    to_pane      TEXT NOT NULL,
    text         TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'queued'
                 CHECK (status IN ('queued', 'delivered', 'done', 'failed', 'cancelled')),
    result       TEXT NOT NULL DEFAULT '',
    error        TEXT NOT NULL DEFAULT '',
    reason       TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    delivered_at TEXT,
    finished_at  TEXT,
    updated_at   TEXT NOT NULL
);
CREATE INDEX tasks_to_status ON tasks (to_pane, status);
CREATE INDEX tasks_from ON tasks (from_pane);
