"""Send raw lines to a stdio MCP server, print every line it answers with, and check the answers.

For edge cases no SDK client will send on purpose (bad JSON, batches, missing _meta,
cancellation races, unknown methods).

Usage:
  python wire_probe.py [--wait S] [--gap S] [--max-exit S] [--tool NAME --args JSON]
                       [--slow-tool NAME --slow-args JSON] SCRIPT -- SERVER_CMD [ARGS...]
SCRIPT is a file with one message per line, sent in order, `--gap` seconds apart
(default 0.05).  Special lines:  "#..." comment,  "sleep 1.5",  "" ignored.
The shorthands LEGACY_INIT and MODERN_META expand to a 2025-11-25 initialize +
notifications/initialized, and to the 2026-07-28 per-request _meta object.
@TOOL@ / @ARGS@ expand to a cheap tool call that must succeed (--tool/--args, default
echo {"text":"probe"}), @SLOW_TOOL@ / @SLOW_ARGS@ to a slow, cancellable call
(--slow-tool/--slow-args, default slow {"seconds":3}).
After the script, waits `--wait` seconds (default 1) for output, closes stdin,
and reports how long the server took to exit after EOF.

Checks (exit 1 if any fails, 0 otherwise):
  * every stdout line is a JSON-RPC 2.0 object (the server MUST NOT write anything else);
  * at most one response per request id, and none for ids that were never sent;
  * the server exits within --max-exit seconds (default 2) of stdin EOF;
  * the expectations written in SCRIPT as comment directives:
      #expect ID WHAT   ID is JSON (1, "init"); WHAT is one of
                          result        a result response
                          modern-result a result with resultType "complete"
                          -32602        an error with this code (several: -32601|-32602)
                          answered      exactly one response, result or error
                          none          no response at all
                          cancelled     the request is cancelled later in SCRIPT: with an explicit
                                        --slow-tool, no response and no progress notification may
                                        arrive after the cancel (0.3 s grace); otherwise not checked
                          any           not checked
      #expect null CODE...   the multiset of error codes answered with "id": null
      #expect-no-requests    the server must not send requests (method + id)
"""

import argparse
import json
import re
import subprocess
import sys
import threading
import time

MODERN_META = json.dumps({
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "wire-probe", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
})
LEGACY_INIT = [
    json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "wire-probe", "version": "0"}}}),
    "sleep 0.3",
    json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
]

p = argparse.ArgumentParser()
p.add_argument("--wait", type=float, default=1.0)
p.add_argument("--gap", type=float, default=0.05)
p.add_argument("--max-exit", type=float, default=2.0)
p.add_argument("--tool", default="echo")
p.add_argument("--args", default='{"text":"probe"}')
p.add_argument("--slow-tool")
p.add_argument("--slow-args", default='{"seconds":3}')
p.add_argument("script")
p.add_argument("cmd", nargs=argparse.REMAINDER)
a = p.parse_args()
cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
if not cmd:
    p.error("missing server command after --")

subst = {
    "MODERN_META": MODERN_META,
    "@TOOL@": json.dumps(a.tool),
    "@ARGS@": json.dumps(json.loads(a.args)),
    "@SLOW_TOOL@": json.dumps(a.slow_tool or "slow"),
    "@SLOW_ARGS@": json.dumps(json.loads(a.slow_args)),
}
subst_re = re.compile("|".join(re.escape(k) for k in subst))

lines, expect, expect_null, no_requests = [], {}, None, False
for raw in open(a.script, encoding="utf-8"):
    raw = raw.rstrip("\n")
    s = raw.strip()
    if s == "LEGACY_INIT":
        lines += LEGACY_INIT
    elif s.startswith("#expect-no-requests"):
        no_requests = True
    elif s.startswith("#expect "):
        _, rid, *what = s.split()
        if rid == "null":
            expect_null = sorted(int(c) for c in what)
        else:
            expect[json.dumps(json.loads(rid))] = what[0]
    elif s and not s.startswith("#"):
        lines.append(subst_re.sub(lambda m: subst[m.group(0)], raw))

t0 = time.monotonic()
proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
received = []  # (time, raw stdout line)


def reader():
    for out in proc.stdout:
        text = out.decode("utf-8", "replace").rstrip("\r\n")
        received.append((time.monotonic() - t0, text))
        print(f"{time.monotonic() - t0:7.3f} <- {text}", flush=True)


th = threading.Thread(target=reader, daemon=True)
th.start()
sent_ids, tokens, cancel_at = set(), {}, {}  # id -> progressToken; id -> when its cancel was sent
try:
    for line in lines:
        if line.startswith("sleep "):
            time.sleep(float(line.split()[1]))
            continue
        print(f"{time.monotonic() - t0:7.3f} -> {line}", flush=True)
        try:
            msg = json.loads(line)
            if isinstance(msg, dict) and msg.get("id") is not None:
                sent_ids.add(json.dumps(msg["id"]))
                token = ((msg.get("params") or {}).get("_meta") or {}).get("progressToken")
                if token is not None:
                    tokens[json.dumps(msg["id"])] = json.dumps(token)
            if isinstance(msg, dict) and msg.get("method") == "notifications/cancelled":
                cancel_at[json.dumps((msg.get("params") or {}).get("requestId"))] = time.monotonic() - t0
        except ValueError:
            pass
        proc.stdin.write(line.encode("utf-8") + b"\n")
        time.sleep(a.gap)
except BrokenPipeError:
    print("server closed its stdin early (it exited?)")
time.sleep(a.wait)
t_eof = time.monotonic()
problems = []
try:
    proc.stdin.close()
except BrokenPipeError:
    pass
try:
    rc = proc.wait(timeout=5)
    dt = time.monotonic() - t_eof
    print(f"server exited rc={rc} {dt:.3f}s after stdin EOF")
    if dt > a.max_exit:
        problems.append(f"server took {dt:.3f}s to exit after stdin EOF (limit {a.max_exit}s)")
except subprocess.TimeoutExpired:
    print("server did NOT exit within 5s of stdin EOF; killing")
    problems.append("server did not exit within 5s of stdin EOF")
    proc.kill()
    rc = proc.wait()
th.join(timeout=1)

# ---- checks ----
responses, null_codes, progress_at = {}, [], {}  # progress_at: token -> [times]
for t_rx, text in received:
    try:
        msg = json.loads(text)
    except ValueError:
        problems.append(f"stdout line is not JSON: {text[:120]!r}")
        continue
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        problems.append(f"stdout line is not a JSON-RPC 2.0 object: {text[:120]!r}")
        continue
    if "method" in msg:
        if "id" in msg and no_requests:
            problems.append(f"server sent a request: {text[:120]!r}")
        if msg["method"] == "notifications/progress":
            token = json.dumps((msg.get("params") or {}).get("progressToken"))
            progress_at.setdefault(token, []).append(t_rx)
        continue  # notification
    if "result" not in msg and "error" not in msg:
        problems.append(f"message is neither request, notification nor response: {text[:120]!r}")
        continue
    rid = msg.get("id")
    if rid is None:
        if "error" in msg:
            null_codes.append((msg["error"] or {}).get("code"))
        else:
            problems.append(f"result with null id: {text[:120]!r}")
        continue
    key = json.dumps(rid)
    if key not in sent_ids:
        problems.append(f"response for an id that was never sent: {text[:120]!r}")
    if key in responses:
        problems.append(f"second response for id {key}: {text[:120]!r}")
        continue
    responses[key] = (t_rx, msg)

for key, what in expect.items():
    t_r, r = responses.get(key, (None, None))
    if what == "any" or (what == "cancelled" and not a.slow_tool):
        continue
    if what == "cancelled":
        if key not in cancel_at:
            problems.append(f"id {key}: marked cancelled, but SCRIPT never cancels it")
            continue
        t_c = cancel_at[key]
        if r is not None and t_r < t_c:
            what_ = "failed" if "error" in r else "finished (too fast for a cancel test)"
            problems.append(f"id {key}: the slow call {what_} {t_c - t_r:.3f}s before its cancel: "
                            f"{json.dumps(r)[:160]}")
        elif r is not None:
            problems.append(f"id {key}: answered {t_r - t_c:.3f}s after its cancel (the server must not "
                            f"answer a cancelled request): {json.dumps(r)[:120]}")
        late = [t for t in progress_at.get(tokens.get(key), []) if t > t_c + 0.3]
        if late:
            problems.append(f"id {key}: {len(late)} progress notification(s) more than 0.3 s after the cancel")
        continue
    if what == "none":
        if r is not None:
            problems.append(f"id {key}: expected no response, got {json.dumps(r)[:160]}")
        continue
    if r is None:
        problems.append(f"id {key}: expected {what}, got no response")
        continue
    if what == "answered":
        continue
    if what in ("result", "modern-result"):
        if "result" not in r:
            problems.append(f"id {key}: expected {what}, got error {json.dumps(r.get('error'))[:160]}")
        elif what == "modern-result" and (r["result"] or {}).get("resultType") != "complete":
            problems.append(f"id {key}: result lacks resultType \"complete\"")
        continue
    codes = [int(c) for c in what.split("|")]
    got = (r.get("error") or {}).get("code") if "error" in r else None
    if got not in codes:
        shown = f"error code {got}" if got is not None else "a result"
        problems.append(f"id {key}: expected error code {what}, got {shown}")
if expect_null is not None and sorted(c for c in null_codes if isinstance(c, int)) != expect_null:
    problems.append(f"errors with id null: expected codes {expect_null}, got {sorted(map(str, null_codes))}")

if problems:
    print(f"wire-probe {a.script}: {len(problems)} problem(s):")
    for pr in problems:
        print(f"  FAIL {pr}")
    sys.exit(1)
print(f"wire-probe {a.script}: all checks passed ({len(expect)} expectations)")
sys.exit(0)
