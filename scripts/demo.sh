#!/usr/bin/env bash
# The offline demo team (make demo): a coordinator gets a goal, dispatches
# three tasks to two cicy engineers and a shell worker, which run real
# commands on examples/demo-data; every completion reaches the coordinator,
# which writes a report. Runs on a copy of examples/ in a fresh home, with
# the scripted model (no network, no key) — unless ANTHROPIC_API_KEY is set
# and CICY_PROVIDER is not, in which case the same team runs on the real
# model. Exits 0 when the goal is done, 1 with the reason if not in time.
# The demo's folder (in $TMPDIR, else /tmp) is removed at the end, also
# when the demo fails or is interrupted; KEEP=1 keeps it, with the team
# running, and says where.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CICY_BIN:-$root/bin/cicy-agent}
work=$(mktemp -d "${TMPDIR:-/tmp}/cicy-demo.XXXXXX")
finish() {
  if [ "${KEEP:-0}" = 1 ]; then
    echo "Kept in $work; the team keeps running: CICY_HOME=$work/home $bin status   (stop: CICY_HOME=$work/home $bin down $work/demo.yaml; then shutdown; then rm -rf $work)"
    return
  fi
  # The shell worker may run in tmux: down stops it too.
  CICY_HOME="$work/home" "$bin" down "$work/demo.yaml" >/dev/null 2>&1 || true
  CICY_HOME="$work/home" "$bin" shutdown >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cp -r "$root/examples/demo.yaml" "$root/examples/demo.script.yaml" "$root/examples/demo-data" "$work/"
export CICY_HOME="$work/home"
if [ -z "${CICY_PROVIDER:-}" ] && [ -z "${ANTHROPIC_API_KEY:-}" ]; then
  export CICY_PROVIDER=script CICY_SCRIPT="$work/demo.script.yaml"
fi
echo "demo folder: $work (provider: ${CICY_PROVIDER:-anthropic}; removed at the end unless KEEP=1)"
status=0
"$bin" up "$work/demo.yaml" --wait --timeout "${DEMO_TIMEOUT:-3m}" || status=$?
exit $status
