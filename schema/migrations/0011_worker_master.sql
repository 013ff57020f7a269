-- 0011: a worker reports to the master recorded in its row — given by
-- --master, or the only master there was when it was created (recorded
-- then) — and no longer to whichever master is the only one now, which
-- made panes created by hand join a team's master made later. The workers
-- that reported to the only master by the old rule keep it: it is
-- recorded.
UPDATE agent_config SET master = (SELECT m.pane_id FROM agent_config m WHERE m.role = 'master')
WHERE role = 'worker' AND (master IS NULL OR master = '')
  AND (SELECT COUNT(*) FROM agent_config m WHERE m.role = 'master') = 1;
