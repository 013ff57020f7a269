#!/usr/bin/env bash
# The offline mixed team (make demo-mixed): a cicy coordinator gets a goal
# on a small git repository (a copy of examples/demo-repo, the tool tally
# with `make test`) and dispatches one change each to a Claude Code, a
# Codex, an opencode, a cicy engineer, a Qwen Code, a pi and a Gemini CLI, each working in its own git
# worktree on its own branch. The CLI agents are the real, pinned programs
# (installed first if missing, as make clis does), each talking to the
# supervisor's gateway in its own API; with the scripted model the gateway
# answers them from examples/mixed.script.yaml, so no network and no key
# are used. Each task that ends done is a commit on its worker's branch;
# the coordinator merges each one into main, sends the one that conflicts
# back to its worker, which rebases and resolves it, merges that too and
# runs the tests on the result. Runs in a fresh home and a temporary
# folder; prints every task as it moves, then main's history, the tests'
# verdict and the cost table. Exits 0 when the goal is done, every
# worker's change is on main and make test passes there; 1 with the reason if not.
# The temporary folder is removed at the end, also when the demo fails or
# is interrupted; KEEP=1 keeps it, with the team running, and says where.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CICY_BIN:-$root/bin/cicy-agent}
"$root/scripts/install-clis.sh" "$bin"
export PATH="${CICY_CLI_DIR:-$HOME/.cache/cicy-agent/clis}/node_modules/.bin:$PATH"
work=$(mktemp -d "${TMPDIR:-/tmp}/cicy-demo-mixed.XXXXXX")
finish() {
  if [ "${KEEP:-0}" = 1 ]; then
    echo "Kept in $work; the team keeps running: CICY_HOME=$work/home $bin status   (stop: CICY_HOME=$work/home $bin down $work/mixed.yaml; then shutdown; then rm -rf $work)"
    return
  fi
  CICY_HOME="$work/home" "$bin" down "$work/mixed.yaml" >/dev/null 2>&1 || true
  CICY_HOME="$work/home" "$bin" shutdown >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# The CLI agents leave temporary files of their own (native libraries of
# about 19 MB, sockets): in the demo's folder, they go with it.
mkdir "$work/tmp"
export TMPDIR="$work/tmp"
cp "$root/examples/mixed.yaml" "$root/examples/mixed.script.yaml" "$work/"
repo=$work/repo
cp -r "$root/examples/demo-repo" "$repo"
# CI has no git identity: name the demo's first commit's author here (the
# supervisor and the workers name themselves for theirs).
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name="cicy demo" -c user.email=demo@cicy-agent.invalid commit -q -m "tally: sum and count, with make test"
export CICY_HOME="$work/home"
export CICY_PROVIDER=script CICY_SCRIPT="$work/mixed.script.yaml"
# Offline by design: no key reaches the supervisor, and on the scripted
# model its gateway calls no upstream. OPENAI_BASE_URL only makes opencode
# and pi speak OpenAI Chat Completions (as for a supervisor set up for OpenAI), as
# Qwen Code does, so the team uses all three APIs: Claude Code Anthropic
# Messages, Codex OpenAI Responses.
unset ANTHROPIC_API_KEY ANTHROPIC_AUTH_TOKEN ANTHROPIC_BASE_URL OPENAI_API_KEY
export OPENAI_BASE_URL=https://api.openai.com/v1
echo "demo folder: $work (provider: script; the project: $repo; removed at the end unless KEEP=1)"
status=0 why=
started=$SECONDS
"$bin" up "$work/mixed.yaml" --wait --timeout "${DEMO_TIMEOUT:-10m}" || { status=$?; why="the goal was not done"; }
echo
echo "The tasks and the change each left (cicy-agent tasks):"
"$bin" tasks || true
echo
echo "main after the team's work (git log --graph --oneline main):"
git -C "$repo" log --graph --oneline main
# Each worker has a branch; its change is on main when the branch has a
# commit and main holds all of it (read before down, which removes merged
# worktrees).
first=$(git -C "$repo" rev-list --max-parents=0 main)
n=0 on=0 open=
for b in $(git -C "$repo" for-each-ref --format='%(refname:short)' refs/heads/cicy/); do
  n=$((n + 1))
  if ! git -C "$repo" merge-base --is-ancestor "$b" main; then
    open="$open $b"
  elif [ "$(git -C "$repo" rev-list --count "$first..$b")" -gt 0 ]; then
    on=$((on + 1))
  fi
done
echo
echo "changes on main: $on of $n${open:+ (not merged:$open)}"
if [ "$n" -eq 0 ] || [ "$on" -ne "$n" ] || [ -n "$open" ]; then
  status=1 why="${why:+$why; }$on of $n changes are on main${open:+, not merged:$open}"
fi
echo "make test on main:"
if ! make -s -C "$repo" test; then
  status=1 why="${why:+$why; }make test fails on main"
fi
echo
echo "The cost of the team (cicy-agent usage):"
"$bin" usage || status=$?
echo
if [ "$status" -ne 0 ]; then
  echo "demo-mixed FAILED after $((SECONDS - started)) s: ${why:-see above}" >&2
  exit 1
fi
echo "demo-mixed done in $((SECONDS - started)) s: all $n changes are merged into main and make test passes."
