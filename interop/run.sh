#!/usr/bin/env bash
# Run the real-client interop matrix against a stdio MCP server.
#
# Usage:  interop/run.sh [--] SERVER_CMD [ARGS...]      (after interop/install.sh)
#   e.g.  interop/run.sh ./target/release/fugue
#         INTEROP_TOOL=echo INTEROP_ARGS='{"text":"hi"}' INTEROP_SLOW_TOOL=slow \
#           INTEROP_SLOW_ARGS='{"seconds":5}' interop/run.sh python3 /work/shared/mcp-clients/raw_server.py
# The server runs in the current directory. Each step prints "PASS name",
# "FAIL name" (followed by the tail of its output) or "SKIP name: why" (the step
# exited 77: something it needs is not installed); the last line is
# "N passed, N failed", and the exit status is 1 if any step failed.
#
# Environment:
#   INTEROP_TOOL, INTEROP_ARGS   cheap read-only tool call that must succeed
#                                (default: fugue_list_sessions, {})
#   INTEROP_EXTRA                extra Python SDK calls, one "TOOL JSON_ARGS" per line
#                                ("#" lines ignored); skipped when unset
#   INTEROP_SLOW_TOOL, INTEROP_SLOW_ARGS
#                                a call that takes > INTEROP_CANCEL_AFTER seconds, to
#                                test cancellation; the cancel steps are skipped when unset
#   INTEROP_CANCEL_AFTER         seconds before the clients cancel the slow call (default 1.2)
#   INTEROP_EXPECT_AUTO          protocol the Python client in --mode auto must negotiate
#                                (default 2026-07-28, a dual-era server; empty: no check)
#   INTEROP_PORT                 port for the conformance HTTP bridge (default: a free one)
#   INTEROP_STEP_TIMEOUT         seconds per step (default 90; 4x that for the conformance steps)
#   INTEROP_CONFORMANCE_TIMEOUT_MS  per-scenario limit of the conformance suite (default 120000)
#   INTEROP_ONLY                 extended regex: run only the steps whose name matches
#   INTEROP_TAIL                 lines of output shown for a failed step (default 40)
#   INTEROP_LOG_DIR              keep every step's full output in this directory
#   INTEROP_LIVE_DAY             a fugue server: also run interop/live_day.py, a day in one live
#                                shell pane (cd, make, a failing test, git commit in vim, rm -i, a
#                                long build waited on) through the Python SDK; with INTEROP_SHARED,
#                                through the front too
#   INTEROP_SHARED               a fugue server: also run the Python SDK steps through a front,
#                                SERVER_CMD serve --shared NAME, in a private runtime directory
#                                (ended with SERVER_CMD kill-server NAME afterwards)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[[ "${1:-}" == "--" ]] && shift
if [[ $# -eq 0 ]]; then sed -n '2,36p' "$0"; exit 2; fi
server=("$@")

tool="${INTEROP_TOOL:-fugue_list_sessions}"
args="${INTEROP_ARGS:-{\}}"
slow_tool="${INTEROP_SLOW_TOOL:-}"
slow_args="${INTEROP_SLOW_ARGS:-{\}}"
cancel_after="${INTEROP_CANCEL_AFTER:-1.2}"
expect_auto="${INTEROP_EXPECT_AUTO-2026-07-28}"
step_timeout="${INTEROP_STEP_TIMEOUT:-90}"
only="${INTEROP_ONLY:-}"
tail_n="${INTEROP_TAIL:-40}"

py="$here/.venv/bin/python"
if [[ ! -x "$py" || ! -x "$here/node_modules/.bin/inspector" || ! -x "$here/node_modules/.bin/conformance" ]]; then
  echo "interop clients are not installed: run $here/install.sh first" >&2
  exit 2
fi
if ! command -v -- "${server[0]}" >/dev/null; then
  echo "server command not found: ${server[0]}" >&2
  exit 2
fi
for j in "$args" "$slow_args"; do
  "$py" -c 'import json,sys; assert isinstance(json.loads(sys.argv[1]), dict)' "$j" 2>/dev/null \
    || { echo "not a JSON object: $j" >&2; exit 2; }
done

if [[ -n "${INTEROP_LOG_DIR:-}" ]]; then
  logdir="$INTEROP_LOG_DIR"; mkdir -p "$logdir"
else
  logdir="$(mktemp -d -t fugue-interop.XXXXXX)"
  trap 'rm -rf "$logdir"' EXIT
fi

passed=0 failed=0 failed_names=() skipped_names=() step_pid=""
t_start=$SECONDS

summary() {
  echo
  [[ ${#skipped_names[@]} -gt 0 ]] && echo "skipped: ${skipped_names[*]}"
  [[ $failed -gt 0 ]] && echo "failed: ${failed_names[*]}"
  echo "interop matrix took $((SECONDS - t_start))s (server: ${server[*]})"
  echo "$passed passed, $failed failed"
}
on_signal() {  # stop the running step (runstep.py cleans up its processes), then report
  [[ -n "$step_pid" ]] && { kill -TERM "$step_pid" 2>/dev/null; wait "$step_pid" 2>/dev/null; }
  echo "interrupted"
  summary
  exit "$1"
}
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
trap 'on_signal 129' HUP

show_failure() {  # the useful part of a failed step's output
  local log="$1"
  if grep -q '^=== .*(port [0-9]*)$' "$log"; then  # conformance: the verdict lines, not the prose
    sed 's/\x1b\[[0-9;]*m//g' "$log" \
      | grep -E 'FAILURE|WARNING|Error:|^Passed:|^  [~✓✗] |baseline|Baseline|supergateway|LEFTOVER|runstep|^===' \
      | tail -n "$tail_n"
  else
    sed 's/\x1b\[[0-9;]*m//g' "$log" | tail -n "$tail_n"
  fi
}

# step NAME CMD...: run CMD (via runstep.py: time limit, no stdin, no leftover processes)
step() {
  local name="$1" rc t0 dt log
  shift
  [[ -z "$only" || "$name" =~ $only ]] || return 0
  log="$logdir/$name.log"
  t0="${EPOCHREALTIME/,/.}"
  "$py" "$here/runstep.py" "${this_timeout:-$step_timeout}" "$@" >"$log" 2>&1 </dev/null &
  step_pid=$!
  wait "$step_pid"; rc=$?
  step_pid=""
  # runstep.py exits 128+N when it got signal N (e.g. a Ctrl-C that this shell inherited
  # as ignored): stop the whole run, not just the step
  case $rc in 129|130|143) echo "FAIL $name (interrupted)"; failed=$((failed + 1)); failed_names+=("$name")
                           on_signal "$rc" ;; esac
  dt="$(awk -v a="$t0" -v b="${EPOCHREALTIME/,/.}" 'BEGIN { printf "%.1fs", b - a }')"
  if [[ $rc -eq 0 ]]; then
    passed=$((passed + 1))
    echo "PASS $name ($dt)"
  elif [[ $rc -eq 77 ]]; then
    skipped_names+=("$name")
    echo "SKIP $name: $(grep -m1 '^skipped: ' "$log" | cut -c10-)"
  else
    failed=$((failed + 1)); failed_names+=("$name")
    echo "FAIL $name (exit $rc, $dt): $*"
    show_failure "$log" | sed 's/^/    /'
  fi
}

export FORCE_COLOR=0 NO_COLOR=1 CI="${CI:-true}"
pyc=("$py" "$here/py_client.py")
insp=(npx --prefix "$here" --no-install inspector --cli)

# 1. Python SDK (mcp 2.3.0): list + one real call, in each era
step py-auto "${pyc[@]}" --mode auto ${expect_auto:+--expect-protocol "$expect_auto"} \
  --tool "$tool" --args "$args" -- "${server[@]}"
step py-legacy "${pyc[@]}" --mode legacy --expect-protocol 2025-11-25 --tool "$tool" --args "$args" -- "${server[@]}"
step py-2026-07-28 "${pyc[@]}" --mode 2026-07-28 --expect-protocol 2026-07-28 \
  --tool "$tool" --args "$args" -- "${server[@]}"

# 2. optional extra Python SDK calls that do real work
if [[ -n "${INTEROP_EXTRA:-}" ]]; then
  n=0
  while IFS= read -r line; do
    line="${line#"${line%%[![:space:]]*}"}"
    [[ -z "$line" || "$line" == \#* ]] && continue
    n=$((n + 1))
    x_tool="${line%%[[:space:]]*}" x_args="${line#"$x_tool"}"
    x_args="${x_args#"${x_args%%[![:space:]]*}"}"
    step "py-extra-$n-$x_tool" "${pyc[@]}" --tool "$x_tool" --args "${x_args:-{\}}" -- "${server[@]}"
  done <<<"$INTEROP_EXTRA"
fi

# 2b. a day in one live shell pane, as an agent would spend it (skipped without git, make, vim)
[[ -n "${INTEROP_LIVE_DAY:-}" ]] && step py-live-day "$py" "$here/live_day.py" -- "${server[@]}"

# 3. TypeScript SDK v1 (legacy era, what most shipped hosts embed)
step ts-sdk-v1 node "$here/ts_client.mjs" --tool "$tool" --args "$args" -- "${server[@]}"

# 3b. durable calls (MCP Tasks): a task completed, a program's question answered, a task
# cancelled — with the SDK v1's experimental tasks client (2025-11-25) and with
# @modelcontextprotocol/client + @modelcontextprotocol/ext-tasks (the 2026-07-28 extension)
step ts-tasks-2025-11-25 node "$here/ts_tasks_v1.mjs" -- "${server[@]}"
step ts-tasks-2026-07-28 node "$here/ts_tasks_v2.mjs" -- "${server[@]}"

# 4. MCP Inspector CLI in each era
for era in legacy auto modern; do
  step "inspector-$era-list" "${insp[@]}" --protocol-era "$era" --method tools/list "${server[@]}"
done
for era in legacy modern; do
  step "inspector-$era-call" "${insp[@]}" --protocol-era "$era" --method tools/call \
    --tool-name "$tool" --tool-args-json "$args" "${server[@]}"
done

# 5. cancellation: abandon a slow call, the server must still answer promptly
if [[ -n "$slow_tool" ]]; then
  step py-cancel "${pyc[@]}" --mode auto --tool "$slow_tool" --args "$slow_args" \
    --cancel-after "$cancel_after" -- "${server[@]}"
  step ts-cancel node "$here/ts_client.mjs" --tool "$slow_tool" --args "$slow_args" \
    --cancel-after "$("$py" -c 'import sys; print(int(float(sys.argv[1]) * 1000))' "$cancel_after")" \
    -- "${server[@]}"
fi

# 6. raw wire probes: error codes, framing, exit < 2 s after stdin EOF
probe_opts=(--tool "$tool" --args "$args")
[[ -n "$slow_tool" ]] && probe_opts+=(--slow-tool "$slow_tool" --slow-args "$slow_args")
for p in legacy modern; do
  step "wire-$p" "$py" "$here/wire_probe.py" "${probe_opts[@]}" "$here/probes/$p.jsonl" -- "${server[@]}"
done

# 6b. through a shared-server front: the Python SDK in each of its modes, one server for all
if [[ -n "${INTEROP_SHARED:-}" ]]; then
  shared_dir="$(mktemp -d -t fugue-interop-shared.XXXXXX)"
  chmod 700 "$shared_dir"
  shared_name="interop-$$"
  front=(env XDG_RUNTIME_DIR="$shared_dir" FUGUE_STATE_DIR="$shared_dir/state" \
    "${server[@]}" serve --shared "$shared_name")
  step py-shared-auto "${pyc[@]}" --mode auto ${expect_auto:+--expect-protocol "$expect_auto"} \
    --tool "$tool" --args "$args" -- "${front[@]}"
  step py-shared-legacy "${pyc[@]}" --mode legacy --expect-protocol 2025-11-25 \
    --tool "$tool" --args "$args" -- "${front[@]}"
  step py-shared-2026-07-28 "${pyc[@]}" --mode 2026-07-28 --expect-protocol 2026-07-28 \
    --tool "$tool" --args "$args" -- "${front[@]}"
  [[ -n "${INTEROP_LIVE_DAY:-}" ]] && step py-shared-live-day "$py" "$here/live_day.py" \
    -- "${front[@]}"
  [[ -n "$slow_tool" ]] && step py-shared-cancel "${pyc[@]}" --mode auto --tool "$slow_tool" \
    --args "$slow_args" --cancel-after "$cancel_after" -- "${front[@]}"
  step ts-shared-tasks-2026-07-28 node "$here/ts_tasks_v2.mjs" -- "${front[@]}"
  XDG_RUNTIME_DIR="$shared_dir" "${server[@]}" kill-server "$shared_name" 2>/dev/null
  rm -rf "$shared_dir"
fi

# 7. the official conformance suite, over an HTTP bridge (supergateway)
this_timeout=$((step_timeout * 4))
step conformance-2025-11-25 "$here/conformance.sh" server-initialize ping tools-list -- "${server[@]}"
step conformance-2026-07-28 "$here/conformance.sh" --spec 2026-07-28 \
  --baseline "$here/conformance-baseline.yml" tools-list caching server-stateless -- "${server[@]}"
this_timeout=""

summary
[[ $failed -eq 0 ]]
