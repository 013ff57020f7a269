// Package service starts a home's supervisor at boot: it writes, enables,
// starts, checks and removes the home's systemd user unit
// (cicy-agent-<tag>.service, whose tag is the hash of the home path), and
// where systemd is not, it answers the @reboot crontab line that does the
// same. The supervisor's keys are never in the unit: they go in the
// home's service.env, which the unit and the crontab line read at each
// start.
//
// It is a package of its own because it is the unit's text and
// systemctl's answers, not the command line: cicy-agent service parses
// and prints, this package does the work behind the Manager it declares
// (systemctl --user; a fake in the tests).
package service
