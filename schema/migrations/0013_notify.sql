-- 0013: notifications. The sinks events are sent to (a sink's secret
-- lives in a file or the environment: only where is kept here), the
-- durable queue the cluster's one sender works through (one row per event
-- and sink: at least once, never twice after a 2xx), the needs-you
-- episodes open now, the mutes, the answers given from a messenger, and
-- the flap windows that coalesce a pane's repeated events.

CREATE TABLE notify_sinks (
    name       TEXT PRIMARY KEY,
    type       TEXT NOT NULL,
    url        TEXT NOT NULL DEFAULT '',
    chat       TEXT NOT NULL DEFAULT '',
    events     TEXT NOT NULL DEFAULT '',   -- comma list; '' = every event
    secret_ref TEXT NOT NULL DEFAULT '',   -- "file:<path>" or "env:<NAME>", never the secret
    team       TEXT NOT NULL DEFAULT '',   -- '' for the home's own; else the team file's name
    created_at TEXT NOT NULL
);

CREATE TABLE notify_queue (
    id             INTEGER PRIMARY KEY,
    event_id       TEXT NOT NULL,
    sink           TEXT NOT NULL,
    payload        TEXT NOT NULL,              -- JSON
    created_at     TEXT NOT NULL,
    attempts       INTEGER NOT NULL DEFAULT 0,
    next_at        TEXT NOT NULL,              -- not tried before
    claimed_by     TEXT NOT NULL DEFAULT '',   -- the node sending it ('' when free)
    claimed_until  TEXT NOT NULL DEFAULT '',   -- its claim lapses then
    tried_at       TEXT NOT NULL DEFAULT '',   -- its last attempt
    sent_at        TEXT NOT NULL DEFAULT '',   -- '' until the sink took it
    status         INTEGER NOT NULL DEFAULT 0, -- the last HTTP status (a command's exit status)
    last_error     TEXT NOT NULL DEFAULT '',
    first_error_at TEXT NOT NULL DEFAULT '',
    answer         TEXT NOT NULL DEFAULT '',   -- the sink's answer to the send
    UNIQUE (event_id, sink)
);
-- The sender's scan: the unsent rows of its sinks, oldest first.
CREATE INDEX notify_queue_due ON notify_queue (sink, id) WHERE sent_at = '';

CREATE TABLE notify_open (
    key       TEXT PRIMARY KEY,   -- e.g. "w-3/approval"
    event_id  TEXT NOT NULL,
    pane      TEXT NOT NULL DEFAULT '',
    kind      TEXT NOT NULL DEFAULT '',
    opened_at TEXT NOT NULL,
    detail    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX notify_open_event ON notify_open (event_id);

CREATE TABLE notify_mutes (
    target TEXT PRIMARY KEY,      -- a pane or a team
    until  TEXT NOT NULL DEFAULT ''
);

CREATE TABLE notify_answers (
    event_id TEXT PRIMARY KEY,    -- the first answer of an event wins
    pane     TEXT NOT NULL DEFAULT '',
    task     BIGINT NOT NULL DEFAULT 0,
    action   TEXT NOT NULL,
    by_whom  TEXT NOT NULL DEFAULT '',
    via      TEXT NOT NULL DEFAULT '',
    at       TEXT NOT NULL,
    detail   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX notify_answers_pane ON notify_answers (pane);
CREATE INDEX notify_answers_task ON notify_answers (task);

CREATE TABLE notify_flaps (
    key          TEXT PRIMARY KEY,   -- e.g. "w-3/approval"
    window_start TEXT NOT NULL DEFAULT '',
    suppressed   INTEGER NOT NULL DEFAULT 0,
    last_event   TEXT NOT NULL DEFAULT ''   -- the payload (JSON) of the last one suppressed
);
