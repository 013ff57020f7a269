#!/usr/bin/env bash
# Installs the pinned real CLI agents the integration tests drive (about
# 1.1 GB, ~60 s) into a cache folder, once: Claude Code, Codex, opencode.
# The folder is $CICY_CLI_DIR, else ~/.cache/cicy-agent/clis; the programs
# land in its node_modules/.bin. Nothing is installed globally.
set -euo pipefail
dir=${CICY_CLI_DIR:-$HOME/.cache/cicy-agent/clis}
pins=("@anthropic-ai/claude-code@2.1.332" "@openai/codex@0.171.0" "opencode-ai@1.18.33")
want="2.1.332 0.171.0 1.18.33"

have() {
  local bin=$dir/node_modules/.bin
  [ -x "$bin/claude" ] && [ -x "$bin/codex" ] && [ -x "$bin/opencode" ] || return 1
  local got
  got="$("$bin/claude" --version 2>/dev/null | awk '{print $1}') $("$bin/codex" --version 2>/dev/null | awk '{print $2}') $("$bin/opencode" --version 2>/dev/null)"
  [ "$got" = "$want" ]
}

if have; then
  echo "CLI agents ready in $dir ($want)"
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "install-clis: npm is needed to install the CLI agents (Node.js 20 or newer)" >&2
  exit 1
fi
mkdir -p "$dir"
echo "Installing ${pins[*]} into $dir …"
# Claude Code 2.1.332 declares node >=22 but ships a native binary that runs
# on Node 20; npm only warns.
npm install --no-audit --no-fund --loglevel=error --prefix "$dir" "${pins[@]}"
if ! have; then
  echo "install-clis: the installed versions are not $want" >&2
  exit 1
fi
echo "CLI agents ready in $dir ($want)"
