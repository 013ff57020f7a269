-- 0010: a pane's type is any agent the registry knows (create checks it),
-- not a list fixed in the table, so a new agent needs no table change.
-- SQLite cannot drop a CHECK: the table is made again, its columns as
-- 0001, 0005 and 0006 left them. Dropping the old table deletes the rows
-- that reference it (ON DELETE CASCADE), so they are kept aside and put
-- back.
CREATE TEMP TABLE keep_runtime AS SELECT * FROM pane_runtime;
CREATE TEMP TABLE keep_tokens AS SELECT * FROM gateway_tokens;

CREATE TABLE agent_config_new (
    pane_id       TEXT PRIMARY KEY,
    title         TEXT NOT NULL,
    agent_type    TEXT NOT NULL CHECK (agent_type <> ''),
    role          TEXT NOT NULL DEFAULT 'worker',
    role_template TEXT NOT NULL DEFAULT '',
    workspace     TEXT NOT NULL,
    provider      TEXT NOT NULL DEFAULT '',
    model         TEXT NOT NULL DEFAULT '',
    command       TEXT NOT NULL DEFAULT '[]',
    backend       TEXT NOT NULL CHECK (backend IN ('pty', 'tmux', 'inproc')),
    master        TEXT,
    config        TEXT NOT NULL DEFAULT '{}',
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    budget_usd    REAL CHECK (budget_usd IS NULL OR budget_usd > 0),
    node          TEXT NOT NULL DEFAULT ''
);
INSERT INTO agent_config_new (pane_id, title, agent_type, role, role_template, workspace, provider, model,
        command, backend, master, config, created_at, updated_at, budget_usd, node)
    SELECT pane_id, title, agent_type, role, role_template, workspace, provider, model,
        command, backend, master, config, created_at, updated_at, budget_usd, node
    FROM agent_config;
DROP TABLE agent_config;
ALTER TABLE agent_config_new RENAME TO agent_config;
CREATE INDEX agent_config_node ON agent_config (node);

INSERT INTO pane_runtime SELECT * FROM keep_runtime;
INSERT INTO gateway_tokens SELECT * FROM keep_tokens;
DROP TABLE keep_runtime;
DROP TABLE keep_tokens;
