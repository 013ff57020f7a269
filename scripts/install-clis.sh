#!/usr/bin/env bash
# Installs the pinned real CLI agents the integration tests drive (about
# 1.6 GB, ~90 s) into a cache folder, once. Which agents, which versions
# and how each is installed is the registry's (supervisor/cliagent, one
# file per agent): the binary says what the folder or PATH lacks
# (cicy-agent agents --missing), one line per agent: "npm PACKAGE@VERSION"
# is installed here with npm; "path PROGRAM@VERSION" is a program not on
# npm, which the user installs on PATH. The folder is $CICY_CLI_DIR, else
# ~/.cache/cicy-agent/clis; the programs land in its node_modules/.bin.
# Nothing is installed globally.
set -euo pipefail
bin=${1:-$(cd "$(dirname "$0")/.." && pwd)/bin/cicy-agent}
dir=${CICY_CLI_DIR:-$HOME/.cache/cicy-agent/clis}
export CICY_CLI_DIR=$dir
if [ ! -x "$bin" ]; then
  echo "install-clis: $bin is not built; run make clis (it builds it first)" >&2
  exit 1
fi
# missing prints the pins of recipe $1 that are still missing.
missing() { "$bin" agents --missing | awk -v r="$1" '$1 == r { print $2 }'; }
mapfile -t pins < <(missing npm)
if [ ${#pins[@]} -gt 0 ]; then
  if ! command -v npm >/dev/null; then
    echo "install-clis: npm is needed to install the CLI agents (Node.js 20 or newer)" >&2
    exit 1
  fi
  mkdir -p "$dir"
  echo "Installing ${pins[*]} into $dir …"
  # Claude Code 2.1.332 declares node >=22 but ships a native binary that runs
  # on Node 20; npm only warns.
  npm install --no-audit --no-fund --loglevel=error --prefix "$dir" "${pins[@]}"
  mapfile -t left < <(missing npm)
  if [ ${#left[@]} -gt 0 ]; then
    echo "install-clis: still not installed at their pins in $dir: ${left[*]}" >&2
    exit 1
  fi
fi
mapfile -t byhand < <(missing path)
if [ ${#byhand[@]} -gt 0 ]; then
  echo "install-clis: not on npm, so not installed here: install ${byhand[*]} on PATH yourself" >&2
  exit 1
fi
echo "CLI agents ready in $dir"
