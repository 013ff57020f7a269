-- 0005 (PostgreSQL): as ../0005_budgets.sql, with DOUBLE PRECISION for REAL
-- (PostgreSQL's REAL is four bytes).
-- Spending limits in US dollars at the price table: a pane's own
-- (NULL: none; removed with the pane) and a team's (a team is the name its
-- panes record in agent_config.config; its budget outlives its panes).
ALTER TABLE agent_config ADD COLUMN budget_usd DOUBLE PRECISION CHECK (budget_usd IS NULL OR budget_usd > 0);
CREATE TABLE team_budgets (
    team       TEXT PRIMARY KEY,
    budget_usd DOUBLE PRECISION NOT NULL CHECK (budget_usd > 0),
    updated_at TEXT NOT NULL
);
