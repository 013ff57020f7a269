#!/usr/bin/env bash
# The offline mixed team (make demo-mixed): a cicy coordinator gets a goal
# and dispatches four tasks — to a Claude Code, a Codex, an opencode and a
# shell worker. The CLI agents are the real, pinned programs (installed
# first if missing, as make clis does), each talking to the supervisor's
# gateway in its own API; with the scripted model the gateway answers them
# from examples/mixed.script.yaml, so no network and no key are used. Each
# worker runs a real command on examples/demo-data; every completion
# reaches the coordinator, which writes a report. Runs on a copy of
# examples/ in a fresh home; prints every task as it moves, then the cost
# table. Exits 0 when the goal is done, 1 with the reason if not in time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CICY_BIN:-$root/bin/cicy-agent}
"$root/scripts/install-clis.sh"
export PATH="${CICY_CLI_DIR:-$HOME/.cache/cicy-agent/clis}/node_modules/.bin:$PATH"
work=$(mktemp -d /tmp/cicy-demo-mixed.XXXXXX)
cp -r "$root/examples/mixed.yaml" "$root/examples/mixed.script.yaml" "$root/examples/demo-data" "$work/"
export CICY_HOME="$work/home"
export CICY_PROVIDER=script CICY_SCRIPT="$work/mixed.script.yaml"
# Offline by design: no key reaches the supervisor, and on the scripted
# model its gateway calls no upstream. OPENAI_BASE_URL only makes opencode
# speak OpenAI Chat Completions (as for a supervisor set up for OpenAI), so
# the team uses all three APIs: Claude Code Anthropic Messages, Codex
# OpenAI Responses.
unset ANTHROPIC_API_KEY ANTHROPIC_AUTH_TOKEN ANTHROPIC_BASE_URL OPENAI_API_KEY
export OPENAI_BASE_URL=https://api.openai.com/v1
echo "demo folder: $work (provider: script)"
status=0
"$bin" up "$work/mixed.yaml" --wait --timeout "${DEMO_TIMEOUT:-10m}" || status=$?
echo
echo "The cost of the team (cicy-agent usage):"
"$bin" usage || status=$?
if [ "${KEEP:-0}" = 1 ]; then
  echo "The team keeps running: CICY_HOME=$CICY_HOME $bin status   (stop: CICY_HOME=$CICY_HOME $bin down $work/mixed.yaml; then shutdown)"
else
  "$bin" down "$work/mixed.yaml" >/dev/null 2>&1 || true
  "$bin" shutdown
fi
exit $status
