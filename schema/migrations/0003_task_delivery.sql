-- 0003: what task delivery needs to be exactly-once across crashes.
ALTER TABLE tasks ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;  -- deliveries so far
ALTER TABLE tasks ADD COLUMN notified_at TEXT;                      -- the master was told
CREATE INDEX tasks_status ON tasks (status);
