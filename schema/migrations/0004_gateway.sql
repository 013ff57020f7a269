-- 0004: the local AI gateway. settings keeps values chosen once per home
-- (the gateway's port); gateway_tokens the hash of each CLI pane's secret
-- token (the token itself lives only in the pane's environment).
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE gateway_tokens (
    pane_id    TEXT PRIMARY KEY REFERENCES agent_config (pane_id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
