#!/usr/bin/env bash
# Measures the dashboard and the supervisor together while PANES panes
# (default 50) each change state every second, for SECS seconds (default
# 30): CPU as a percentage of one core, from the utime+stime of
# /proc/<pid>/stat. Each pane (PTY backend) prints a line every PERIOD
# seconds (default 2), so it goes busy, then idle once its output is quiet
# (500 ms): two state changes per period — one a second per pane by
# default, 50 a second in all (PERIOD=1: twice that). The dashboard runs in
# a real terminal (a private tmux server, SIZE default 120x40) and draws
# all of it; the tmux server's CPU (the terminal's work) is shown apart.
#   make build && scripts/bench-dashboard.sh
set -euo pipefail
panes=${PANES:-50}
secs=${SECS:-30}
size=${SIZE:-120x40}
period=${PERIOD:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CICY_BIN:-$root/bin/cicy-agent}
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 1; }
home=$(mktemp -d /tmp/cicy-bench.XXXXXX)
term=cicy-bench-term-$$
cleanup() {
  tmux -L "$term" kill-server >/dev/null 2>&1 || true
  "$bin" --home "$home" shutdown >/dev/null 2>&1 || true
  rm -rf "$home"
}
trap cleanup EXIT

for i in $(seq "$panes"); do
  "$bin" --home "$home" create "flip$i" --type shell --backend pty -- sh -c "while :; do echo tick; sleep $period; done" >/dev/null
done
dashboard=("$bin" dashboard --bell=false)
# DASH=0 measures the supervisor alone (a shell sits in the terminal).
[ "${DASH:-1}" = 0 ] && dashboard=(sleep 100000)
tmux -L "$term" -f /dev/null new-session -d -x "${size%x*}" -y "${size#*x}" -e "CICY_HOME=$home" "${dashboard[@]}"
sleep 5
pid=$(cat "$home/run/supervisor.pid")
dpid=$(tmux -L "$term" display -p '#{pane_pid}')
tpid=$(tmux -L "$term" display -p '#{pid}')
[ "${DASH:-1}" = 0 ] || grep -q flip1 <(tmux -L "$term" capture-pane -p) || { echo "the dashboard does not show the panes" >&2; tmux -L "$term" capture-pane -p >&2; exit 1; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
s0=$(date +%s.%N); a0=$(ticks "$pid"); b0=$(ticks "$dpid"); c0=$(ticks "$tpid")
sleep "$secs"
s1=$(date +%s.%N); a1=$(ticks "$pid"); b1=$(ticks "$dpid"); c1=$(ticks "$tpid")
srss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
drss=$(awk '/VmRSS/ {print $2}' "/proc/$dpid/status")
awk -v a0="$a0" -v a1="$a1" -v b0="$b0" -v b1="$b1" -v c0="$c0" -v c1="$c1" -v hz="$hz" -v s0="$s0" -v s1="$s1" \
  -v n="$panes" -v size="$size" -v period="$period" -v srss="$srss" -v drss="$drss" 'BEGIN {
  wall = s1 - s0; sup = 100 * (a1 - a0) / hz / wall; dash = 100 * (b1 - b0) / hz / wall; tm = 100 * (c1 - c0) / hz / wall
  printf "panes=%d changing state %.0f times a second in all, dashboard %s, wall=%.1fs: supervisor %.2f%% + dashboard %.2f%% = %.2f%% of one core", n, 2 * n / period, size, wall, sup, dash, sup + dash
  printf " (tmux terminal %.2f%%); RSS supervisor %.1f MiB, dashboard %.1f MiB\n", tm, srss / 1024, drss / 1024
}'
