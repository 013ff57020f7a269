-- 0009: the work product of a task on a worker with its own git worktree:
-- its branch, the commits before and after it, how many commits, and the
-- diff stat of the range (files, lines added, lines deleted). '' and 0
-- for a task that left no change or ran on no worktree.
ALTER TABLE tasks ADD COLUMN branch TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN base_commit TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN head_commit TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN commits INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN diff_files INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN diff_added INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN diff_deleted INTEGER NOT NULL DEFAULT 0;
