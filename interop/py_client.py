"""Drive any stdio MCP server with the official Python SDK client (mcp 2.x).

Usage:
  python py_client.py [options] -- SERVER_CMD [SERVER_ARGS...]

Options:
  --mode auto|legacy|2026-07-28   auto (default) = probe server/discover, fall back to initialize;
                                  legacy = initialize handshake only; 2026-07-28 = modern, no probe
  --tool NAME --args JSON         tool to call (default: first listed tool, args {})
  --timeout S                     per-request read timeout (SDK sends notifications/cancelled on expiry)
  --cancel-after S                abandon the call after S seconds (SDK sends notifications/cancelled),
                                  then check the server still answers tools/list; fails if the call
                                  ended before S, or if that tools/list takes longer than
                                  --after-cancel-timeout S (default 3)
  --expect-protocol V             fail unless the negotiated protocol version is V
  --parallel N                    issue the call N times concurrently (tests in-flight concurrency)
  --env K=V                       extra env for the server (the SDK passes only HOME, LOGNAME, PATH,
                                  SHELL, TERM, USER by default)
Exit status: 0 ok, 1 protocol/transport failure, 2 the tool result had isError=true.
"""

import argparse
import json
import sys
import time

import anyio
from mcp import Client, MCPError, StdioServerParameters


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="auto")
    p.add_argument("--tool")
    p.add_argument("--args", default="{}")
    p.add_argument("--timeout", type=float)
    p.add_argument("--cancel-after", type=float)
    p.add_argument("--parallel", type=int, default=1)
    p.add_argument("--after-cancel-timeout", type=float, default=3.0)
    p.add_argument("--expect-protocol")
    p.add_argument("--env", action="append", default=[])
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    if a.cmd and a.cmd[0] == "--":
        a.cmd = a.cmd[1:]
    if not a.cmd:
        p.error("missing server command after --")
    return a


async def main(a) -> int:
    env = dict(kv.split("=", 1) for kv in a.env)
    params = StdioServerParameters(command=a.cmd[0], args=a.cmd[1:], env=env or None)
    t0 = time.monotonic()

    async def on_progress(progress, total, message):
        print(f"  progress +{time.monotonic() - t0:5.2f}s: {progress}/{total} {message or ''}")

    async with Client(params, mode=a.mode, read_timeout_seconds=a.timeout, cache=None) as c:
        info = c.server_info
        print(f"protocol={c.protocol_version} server={info.name if info else None} "
              f"{info.version if info else ''}")
        if a.expect_protocol and c.protocol_version != a.expect_protocol:
            print(f"FAILED: negotiated protocol {c.protocol_version}, expected {a.expect_protocol}",
                  file=sys.stderr)
            return 1
        print(f"capabilities={c.server_capabilities.model_dump(exclude_none=True)}")
        print(f"instructions={c.instructions!r}")

        tools, cursor, pages = [], None, 0
        while True:  # follow nextCursor until absent
            page = await c.list_tools(cursor=cursor)
            pages += 1
            tools += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        print(f"tools ({len(tools)} in {pages} page(s)):")
        for t in tools:
            ann = t.annotations.model_dump(exclude_none=True) if t.annotations else {}
            print(f"  - {t.name} title={t.title!r} annotations={ann} "
                  f"outputSchema={'yes' if t.output_schema else 'no'}")

        name = a.tool or (tools[0].name if tools else None)
        if name is None:
            return 0
        args = json.loads(a.args)
        results = []

        async def one(i):
            t0_call = time.monotonic()
            try:
                r = await c.call_tool(name, args, progress_callback=on_progress)
            except MCPError as e:  # JSON-RPC error response (protocol error) or SDK timeout
                print(f"  call#{i} JSON-RPC error code={e.code} message={e.error.message!r}")
                results.append(None)
                return
            dt = time.monotonic() - t0_call
            text = " | ".join(getattr(b, "text", f"<{b.type}>") for b in r.content)
            print(f"  call#{i} {dt:.2f}s isError={r.is_error} content={text!r}")
            if r.structured_content is not None:
                print(f"  call#{i} structuredContent={json.dumps(r.structured_content)}")
            results.append(r)

        print(f"call {name} {args} x{a.parallel}")
        if a.cancel_after is not None:
            with anyio.move_on_after(a.cancel_after) as scope:
                await one(0)
            if not scope.cancelled_caught:
                print(f"  the call ended before --cancel-after {a.cancel_after}s: nothing was cancelled "
                      f"(use a slower tool)", file=sys.stderr)
                return 1
            print(f"  abandoned after {a.cancel_after}s -> SDK sent notifications/cancelled")
            t_list = time.monotonic()
            with anyio.fail_after(a.after_cancel_timeout):  # a serial server would stall here
                page = await c.list_tools(cache_mode="bypass")
            print(f"  server still answers tools/list after cancel: {len(page.tools)} tools "
                  f"in {time.monotonic() - t_list:.2f}s")
            return 0
        t_all = time.monotonic()
        async with anyio.create_task_group() as tg:
            for i in range(a.parallel):
                tg.start_soon(one, i)
        print(f"all calls done in {time.monotonic() - t_all:.2f}s")
        if any(r is None for r in results):
            return 1
        return 2 if any(r.is_error for r in results) else 0


if __name__ == "__main__":
    args = parse()
    try:
        sys.exit(anyio.run(main, args))
    except Exception as e:  # transport failure, handshake failure, validation error...
        while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]  # anyio wraps the real error in (nested) exception groups
        print(f"FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
