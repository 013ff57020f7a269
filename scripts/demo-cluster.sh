#!/usr/bin/env bash
# The offline demo team on a cluster of two nodes (make demo-cluster): a
# private PostgreSQL (Debian's postgresql package; its folder and socket in
# a temp folder, no TCP), two supervisors with homes of their own as nodes
# a and b sharing it, and examples/demo-cluster.yaml brought up from node
# a: the coordinator and alice on a, bob and bash1 on b (created through
# a). The coordinator dispatches to workers on both nodes; every
# completion reaches it. Then node b's view of the team is printed. Exits
# 0 when the goal is done, 1 with the reason if not. Both supervisors,
# the database and the temporary folders are stopped and removed at the
# end, also when the demo fails or is interrupted; KEEP=1 keeps them
# running and says where.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CICY_BIN:-$root/bin/cicy-agent}
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$pgbin" ]; then
  echo "demo-cluster needs PostgreSQL's server programs: apt-get install postgresql" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/cicy-demo-cluster.XXXXXX")
cp -r "$root/examples/demo-cluster.yaml" "$root/examples/demo.script.yaml" "$root/examples/demo-data" "$work/"
# The database's folder is its own, in /tmp (which the postgres user can
# reach), removed at the end; initdb refuses root: the server runs as the
# postgres user then.
pg=$(mktemp -d /tmp/cicy-demo-pg.XXXXXX)
as=()
if [ "$(id -u)" = 0 ]; then
  chown postgres "$pg"
  as=(runuser -u postgres --)
fi
a="$work/a" b="$work/b"
stop_all() {
  CICY_HOME="$a" "$bin" down "$work/demo-cluster.yaml" >/dev/null 2>&1 || true
  CICY_HOME="$a" "$bin" shutdown >/dev/null 2>&1 || true
  CICY_HOME="$b" "$bin" shutdown >/dev/null 2>&1 || true
  "${as[@]}" "$pgbin/pg_ctl" -D "$pg/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$pg" "$work"
}
finish() {
  if [ "${KEEP:-0}" = 1 ]; then
    echo "Kept in $work (the database in $pg); the cluster keeps running: CICY_DB='${CICY_DB:-}' CICY_HOME=$a $bin status   (node b: CICY_HOME=$b; stop: down and shutdown on both homes, then $pgbin/pg_ctl -D $pg/data stop)"
    return
  fi
  stop_all
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
"${as[@]}" "$pgbin/initdb" -D "$pg/data" -U cicy -A trust >"$work/initdb.log" 2>&1
"${as[@]}" "$pgbin/pg_ctl" -D "$pg/data" -l "$pg/postgres.log" -w \
  -o "-c listen_addresses= -c unix_socket_directories=$pg" start >/dev/null
"${as[@]}" "$pgbin/createdb" -h "$pg" -U cicy cicy
export CICY_DB="postgres:///cicy?host=$pg&user=cicy"
CICY_CLUSTER_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export CICY_CLUSTER_TOKEN CICY_PROVIDER=script CICY_SCRIPT="$work/demo.script.yaml"
echo "demo folder: $work (PostgreSQL at $pg, provider: script; removed at the end unless KEEP=1)"
# A client command starts its home's supervisor in the background with
# these: node b's first (any command will do), then node a's, which
# brings the team up.
CICY_HOME="$b" CICY_NODE=b CICY_LISTEN=127.0.0.1:0 "$bin" nodes >/dev/null
status=0
CICY_HOME="$a" CICY_NODE=a CICY_LISTEN=127.0.0.1:0 "$bin" up "$work/demo-cluster.yaml" --wait --timeout "${DEMO_TIMEOUT:-3m}" || status=$?
# Node b follows node a's panes a moment behind: its view is printed once
# it has seen the master end its last turn (at most 10 s).
for _ in $(seq 50); do
  CICY_HOME="$b" "$bin" ls 2>/dev/null | grep -Eq '^\S+ +a +\S+ +\S+ +master +idle' && break
  sleep 0.2
done
echo
echo "Node b's view (cicy-agent nodes, ls, tasks):"
CICY_HOME="$b" "$bin" nodes
CICY_HOME="$b" "$bin" ls
CICY_HOME="$b" "$bin" tasks
exit $status
