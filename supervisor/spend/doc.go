// Package spend is the supervisor's spending: what every model call of a
// pane cost, and the limits on it.
//
// It holds the price table (prices.go: the list prices of well-known
// models, lite-config.json's "prices" over them), the usage of every pane
// by model, counted as calls are made and loaded from the ledger at the
// start (usage.go, which also answers the usage report by pane, model or
// day), the ledger's writer (ledger.go: rows the database refuses wait in
// memory and are written again), and the budgets of panes and teams
// (budget.go): the check asked before every model request, of the gateway
// for CLI agents (Reserve) and of a cicy pane's provider (Budgeted), the
// sentence a request over its budget is refused with, and the budget
// reports and changes of the API.
//
// It is a package of its own so that the spending is read and tested apart
// from the pane registry: the supervisor builds one Accounts in New and
// hands it what it needs through the small interfaces declared here (Panes:
// a pane's id, title and team, the live panes' teams, a pane's change
// announced; Store: the usage and budget rows). It does not import package
// supervisor.
package spend
