#!/bin/sh
# The tests of tally: each file in tests/ calls check for its cases.
# Run: make test (or sh test.sh). Exits 1 if any case fails.
cd "$(dirname "$0")" || exit 1
n=0 failed=0
# check NAME INPUT WANT COMMAND...: tally COMMAND with INPUT (printf
# format) on standard input prints WANT and its exit status is 0 (or the
# status given as STATUS=N before the name).
check() {
  want_status=0
  case $1 in STATUS=*) want_status=${1#STATUS=}; shift ;; esac
  name=$1 input=$2 want=$3
  shift 3
  n=$((n + 1))
  got=$(printf %b "$input" | sh ./tally "$@" 2>&1)
  status=$?
  if [ "$got" = "$want" ] && [ "$status" = "$want_status" ]; then
    echo "ok $n - $name"
  else
    echo "not ok $n - $name: got '$got' (status $status), want '$want' (status $want_status)"
    failed=$((failed + 1))
  fi
}
for t in tests/*.sh; do
  . "./$t"
done
if [ "$failed" -gt 0 ]; then
  echo "FAIL: $failed of $n tests failed"
  exit 1
fi
echo "PASS: all $n tests passed"
