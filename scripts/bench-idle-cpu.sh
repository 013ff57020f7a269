#!/usr/bin/env bash
# Measures the supervisor's CPU while PANES shell panes (default 20) sit idle
# for SECS seconds (default 30), as a percentage of one core, from the
# utime+stime of /proc/<pid>/stat. Target: < 1 %.
#   make build && scripts/bench-idle-cpu.sh
set -euo pipefail
panes=${PANES:-20}
secs=${SECS:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CICY_BIN:-$root/bin/cicy-agent}
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 1; }
home=$(mktemp -d /tmp/cicy-bench.XXXXXX)
trap '"$bin" --home "$home" shutdown >/dev/null 2>&1 || true; rm -rf "$home"' EXIT

for i in $(seq "$panes"); do
  "$bin" --home "$home" create "idle$i" --type shell --backend pty -- bash --norc --noprofile >/dev/null
done
sleep 3 # let every pane print its prompt and go idle
pid=$(cat "$home/run/supervisor.pid")
idle=$("$bin" --home "$home" ls --json | grep -c '"state": "idle"' || true)
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks); s0=$(date +%s.%N)
sleep "$secs"
t1=$(ticks); s1=$(date +%s.%N)
rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
awk -v t0="$t0" -v t1="$t1" -v hz="$hz" -v s0="$s0" -v s1="$s1" -v n="$panes" -v idle="$idle" -v rss="$rss" 'BEGIN {
  cpu = (t1 - t0) / hz; wall = s1 - s0
  printf "panes=%d idle=%d wall=%.1fs cpu=%.3fs => %.3f%% of one core; supervisor RSS %.1f MiB\n", n, idle, wall, cpu, 100 * cpu / wall, rss / 1024
}'
