-- 0002: token usage of every model call of cicy panes, per pane,
-- conversation and turn; aux calls (compact, memory) carry their kind.
CREATE TABLE usage (
    id              INTEGER PRIMARY KEY,
    pane_id         TEXT NOT NULL,
    conversation_id TEXT NOT NULL DEFAULT '',
    turn_id         TEXT NOT NULL DEFAULT '',
    aux             TEXT NOT NULL DEFAULT '',
    model           TEXT NOT NULL DEFAULT '',
    input_tokens    INTEGER NOT NULL DEFAULT 0,
    output_tokens   INTEGER NOT NULL DEFAULT 0,
    cache_read      INTEGER NOT NULL DEFAULT 0,
    cache_creation  INTEGER NOT NULL DEFAULT 0,
    latency_ms      INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL
);
CREATE INDEX usage_pane ON usage (pane_id);
