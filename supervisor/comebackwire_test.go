package supervisor

import "github.com/cicy-ai/cicy-agent/supervisor/comeback"

// dbLost is comeback.DBLost, for the tests of server_test.go that check
// a lost database as the server's start sees it.
func dbLost(path string) (string, error) { return comeback.DBLost(path) }
