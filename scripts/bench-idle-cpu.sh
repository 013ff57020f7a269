#!/usr/bin/env bash
# Measures the supervisor's CPU while PANES panes (default 20) sit idle for
# SECS seconds (default 30), as a percentage of one core, from the
# utime+stime of /proc/<pid>/stat.
#   make build && scripts/bench-idle-cpu.sh                  # 20 bash panes on PTYs
#   BACKEND=tmux PANES=30 scripts/bench-idle-cpu.sh          # bash panes in tmux
#   BACKEND=tmux PANES=30 TYPES="claude codex opencode" scripts/bench-idle-cpu.sh
#     (the CLI agents as make clis installs them: the supervisor finds them)
# TYPES cycles through pane types (shell = bash); the CLI agents point at a
# closed port: idle, they call no model. The tmux server's CPU is shown too.
set -euo pipefail
panes=${PANES:-20}
secs=${SECS:-30}
backend=${BACKEND:-pty}
read -r -a types <<< "${TYPES:-shell}"
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CICY_BIN:-$root/bin/cicy-agent}
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 1; }
home=$(mktemp -d /tmp/cicy-bench.XXXXXX)
export ANTHROPIC_BASE_URL=http://127.0.0.1:9 ANTHROPIC_API_KEY=sk-ant-bench-0123456789abcdef
export OPENAI_BASE_URL=http://127.0.0.1:9/v1 OPENAI_API_KEY=sk-bench
cleanup() {
  "$bin" --home "$home" shutdown >/dev/null 2>&1 || true
  tmux -L "$sock" kill-server >/dev/null 2>&1 || true
  rm -rf "$home"
}
sock=cicy-$(printf %s "$home" | sha1sum | cut -c1-8)
trap cleanup EXIT

for i in $(seq "$panes"); do
  t=${types[$(( (i - 1) % ${#types[@]} ))]}
  case $t in
  shell) "$bin" --home "$home" create "idle$i" --type shell --backend "$backend" -- bash --norc --noprofile >/dev/null ;;
  claude) "$bin" --home "$home" create "idle$i" --type claude --backend "$backend" --allow-all >/dev/null ;;
  *) "$bin" --home "$home" create "idle$i" --type "$t" --backend "$backend" --allow-all --model fake-model >/dev/null ;;
  esac
done
# Wait until every pane is idle (CLI agents take seconds to start), then
# a little more for their start-up work to end.
for _ in $(seq 300); do
  idle=$("$bin" --home "$home" ls --json | grep -c '"state": "idle"' || true)
  [ "$idle" -ge "$panes" ] && break
  sleep 1
done
sleep 10
pid=$(cat "$home/run/supervisor.pid")
tpid=$(tmux -L "$sock" display -p '#{pid}' 2>/dev/null || echo "")
idle=$("$bin" --home "$home" ls --json | grep -c '"state": "idle"' || true)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks "$pid"); x0=0; [ -n "$tpid" ] && x0=$(ticks "$tpid")
s0=$(date +%s.%N)
sleep "$secs"
t1=$(ticks "$pid"); x1=0; [ -n "$tpid" ] && x1=$(ticks "$tpid")
s1=$(date +%s.%N)
rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
awk -v t0="$t0" -v t1="$t1" -v x0="$x0" -v x1="$x1" -v hz="$hz" -v s0="$s0" -v s1="$s1" -v n="$panes" -v idle="$idle" -v rss="$rss" -v b="$backend" -v ty="${types[*]}" 'BEGIN {
  cpu = (t1 - t0) / hz; wall = s1 - s0; tx = (x1 - x0) / hz
  printf "panes=%d (%s on %s) idle=%d wall=%.1fs supervisor cpu=%.3fs => %.3f%% of one core; RSS %.1f MiB", n, ty, b, idle, wall, cpu, 100 * cpu / wall, rss / 1024
  if (b == "tmux") printf "; tmux server %.3f%%", 100 * tx / wall
  printf "\n"
}'
