// Package tools holds the built-in tools of the headless cicy agent
// (see docs/role-templates.md): shell, which runs a command with bash in the workspace, and
// skill, which lists the installed skills or returns one skill's
// SKILL.md.
//
// Each tool has a definition (ShellDef, SkillDef) whose JSON schema is a
// literal string, so the tools block of a request encodes to the same
// bytes every turn and stays inside the prompt cache. The runners (Shell,
// Skill) take the raw tool_use input and return the tool_result content
// and whether it is an error; they never panic on bad input, because a
// malformed call from the model must become an error the model can read
// and correct, not a crashed turn.
//
// The package holds no global state: everything a tool needs (workspace,
// skills directory, context) is passed in.
package tools
