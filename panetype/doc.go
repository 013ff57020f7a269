// Package panetype is the registry of pane types: the two built in (cicy,
// a turn loop inside the supervisor; shell, a program whose tasks are
// shell commands) and the CLI agents that package cliagent registers, one
// file per agent. Every question about a type — does it run in process,
// are its tasks shell commands, is it a CLI agent, which guidance file
// does it read, which types are there — is asked here, never by comparing
// a type's name elsewhere. It sits below topology, supervisor and cmd and
// imports none of them, so each of them can ask it.
package panetype
