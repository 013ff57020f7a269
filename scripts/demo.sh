#!/usr/bin/env bash
# The offline demo team (for now: shell panes; cicy agents join in a later
# issue). Creates a master and two workers plus an untracked label pane in a
# fresh home, gives the workers something to do, and shows screens, status
# and ls. KEEP=1 leaves the team running to attach to.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CICY_BIN:-$root/bin/cicy-agent}
home=${DEMO_HOME:-$(mktemp -d /tmp/cicy-demo.XXXXXX)}
cicy() { "$bin" --home "$home" "$@"; }
say() { printf '\n\033[1m$ cicy-agent %s\033[0m\n' "$*"; }

echo "demo home: $home"
say create lead --type shell --role master -- bash
lead=$(cicy create lead --type shell --role master -- bash --norc --noprofile)
echo "$lead"
builder=$(cicy create builder --type shell --master "$lead" -- bash --norc --noprofile)
tester=$(cicy create tester --type shell --master "$lead" -- bash --norc --noprofile)
say create notes --type shell --role scratchpad -- bash
cicy create notes --type shell --role scratchpad -- bash --norc --noprofile

say send "$builder" "echo building…; for s in fetch compile link; do echo \$s; sleep 0.3; done; echo build ok"
cicy send "$builder" 'echo building…; for s in fetch compile link; do echo "  $s"; sleep 0.3; done; echo build ok'
cicy send "$tester" 'echo testing…; sleep 0.5; echo "3 passed, 0 failed"'

# Wait (up to 15 s) until both workers have printed their last line.
for _ in $(seq 150); do
  if cicy screen "$builder" | grep -q '^build ok$' && cicy screen "$tester" | grep -q '^3 passed'; then break; fi
  sleep 0.1
done
say screen "$builder" --lines 6
cicy screen "$builder" --lines 6
say screen "$tester" --lines 3
cicy screen "$tester" --lines 3
say status
cicy status
say ls
cicy ls

if [ "${KEEP:-0}" = 1 ]; then
  printf '\nThe team keeps running. Attach: %s --home %s attach %s (Ctrl-Q detaches)\n' "$bin" "$home" "$builder"
  printf 'Stop it: %s --home %s shutdown\n' "$bin" "$home"
else
  cicy shutdown
  printf '\nDone; the supervisor is stopped. KEEP=1 make demo leaves the team running.\n'
fi
