-- 0008: where a finished task's result came from (gateway, hook, screen,
-- shell, turn), '' for tasks finished before it was recorded.
ALTER TABLE tasks ADD COLUMN result_source TEXT NOT NULL DEFAULT '';
