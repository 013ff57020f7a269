-- 0010: a pane's type is any agent the registry knows (create checks it),
-- not a list fixed in the table, so a new agent needs no table change.
ALTER TABLE agent_config DROP CONSTRAINT IF EXISTS agent_config_agent_type_check;
ALTER TABLE agent_config ADD CONSTRAINT agent_config_agent_type_set CHECK (agent_type <> '');
