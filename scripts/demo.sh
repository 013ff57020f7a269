#!/usr/bin/env bash
# The offline demo team (make demo): a coordinator gets a goal, dispatches
# three tasks to two cicy engineers and a shell worker, which run real
# commands on examples/demo-data; every completion reaches the coordinator,
# which writes a report. Runs on a copy of examples/ in a fresh home, with
# the scripted model (no network, no key) — unless ANTHROPIC_API_KEY is set
# and CICY_PROVIDER is not, in which case the same team runs on the real
# model. Exits 0 when the goal is done, 1 with the reason if not in time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CICY_BIN:-$root/bin/cicy-agent}
work=$(mktemp -d /tmp/cicy-demo.XXXXXX)
cp -r "$root/examples/demo.yaml" "$root/examples/demo.script.yaml" "$root/examples/demo-data" "$work/"
export CICY_HOME="$work/home"
if [ -z "${CICY_PROVIDER:-}" ] && [ -z "${ANTHROPIC_API_KEY:-}" ]; then
  export CICY_PROVIDER=script CICY_SCRIPT="$work/demo.script.yaml"
fi
echo "demo folder: $work (provider: ${CICY_PROVIDER:-anthropic})"
status=0
"$bin" up "$work/demo.yaml" --wait --timeout "${DEMO_TIMEOUT:-3m}" || status=$?
if [ "${KEEP:-0}" = 1 ]; then
  echo "The team keeps running: CICY_HOME=$CICY_HOME $bin status   (stop: CICY_HOME=$CICY_HOME $bin down $work/demo.yaml; then shutdown)"
else
  "$bin" down "$work/demo.yaml" >/dev/null 2>&1 || true  # the shell worker may run in tmux: stop it too
  "$bin" shutdown
fi
exit $status
