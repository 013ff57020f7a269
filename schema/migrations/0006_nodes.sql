-- 0006: the nodes of a cluster, several supervisors sharing one PostgreSQL
-- database (a SQLite home has its one supervisor here too). A node
-- registers itself and renews its lease while it runs; a pane belongs to
-- the node whose supervisor started it.
CREATE TABLE nodes (
    name         TEXT PRIMARY KEY,
    addr         TEXT NOT NULL DEFAULT '',   -- host:port of its cluster API
    pid          INTEGER NOT NULL DEFAULT 0,
    version      TEXT NOT NULL DEFAULT '',
    started_at   TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL,
    lease_until  TEXT NOT NULL             -- it is gone once this has passed
);

ALTER TABLE agent_config ADD COLUMN node TEXT NOT NULL DEFAULT '';
CREATE INDEX agent_config_node ON agent_config (node);
