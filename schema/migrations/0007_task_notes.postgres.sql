-- 0007 (PostgreSQL): every task insert or update notifies channel
-- cicy_tasks with {"id": …, "to": …, "from": …}, the nodes of its to_pane
-- and from_pane ('' for a pane with no agent_config row), so a node's
-- supervisor wakes for the tasks it delivers or reports (see WatchTasks).
CREATE FUNCTION cicy_task_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('cicy_tasks', json_build_object(
        'id', NEW.id,
        'to', COALESCE((SELECT node FROM agent_config WHERE pane_id = NEW.to_pane), ''),
        'from', COALESCE((SELECT node FROM agent_config WHERE pane_id = NEW.from_pane), '')
    )::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_note AFTER INSERT OR UPDATE ON tasks
    FOR EACH ROW EXECUTE FUNCTION cicy_task_note();
