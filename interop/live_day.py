"""A day in one live shell pane, driven as an agent would through the official Python SDK client.

Usage:
  python live_day.py [--env K=V ...] -- SERVER_CMD [SERVER_ARGS...]

One bash pane made by fugue_create_session (no command), then: cd into a fresh git repository
holding a tiny Makefile project, build it, run its failing test, `git commit` with vim as the
editor (answered through fugue_send_input), `rm -i` (answered `y`), and a long build that answers
`running` and is then waited for with fugue_send_input `wait_ms` alone. Each answer's fields
(status, exit_code, cwd, output, pane_id, offset) are checked as an agent would rely on them.

Prints one line per call (tool, key arguments, status, exit_code, a snippet of output); exits 0
when every answer was right, 1 on the first wrong one (with the whole answer), 77 when git, make,
vim or bash is missing (interop/run.sh then reports the step skipped, not passed).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import anyio
from mcp import Client, StdioServerParameters

MAKEFILE = """\
all: hello

hello: hello.sh
\tcp hello.sh hello
\tchmod +x hello

test: hello
\t@out="$$(./hello)"; [ "$$out" = "Hello, world" ] || { echo "FAIL: greeting: want 'Hello, world', got '$$out'"; exit 1; }
"""
HELLO = "#!/bin/sh\necho 'Hello, World'\n"


class Mismatch(Exception):
    pass


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--env", action="append", default=[])
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    if a.cmd and a.cmd[0] == "--":
        a.cmd = a.cmd[1:]
    if not a.cmd:
        p.error("missing server command after --")
    return a


def make_repo() -> str:
    """A fresh repository with the project's files, nothing committed yet."""
    repo = os.path.realpath(tempfile.mkdtemp(prefix="fugue-day."))
    with open(os.path.join(repo, "Makefile"), "w") as f:
        f.write(MAKEFILE)
    with open(os.path.join(repo, "hello.sh"), "w") as f:
        f.write(HELLO)
    with open(os.path.join(repo, "notes.txt"), "w") as f:
        f.write("scratch notes\n")
    with open(os.path.join(repo, ".gitignore"), "w") as f:
        f.write("hello\n")
    git = ["git", "-C", repo]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["config", "user.name", "Day Agent"], check=True)
    subprocess.run(git + ["config", "user.email", "agent@example.invalid"], check=True)
    subprocess.run(git + ["config", "commit.gpgsign", "false"], check=True)
    return repo


def snippet(text, n=60) -> str:
    text = (text or "").replace("\n", "⏎")
    return text if len(text) <= n else text[: n // 2 - 2] + " … " + text[-(n // 2 - 2):]


class Day:
    def __init__(self, client, t0):
        self.c = client
        self.t0 = t0
        self.pane = None
        self.offset = -1

    async def call(self, tool, args, shown):
        r = await self.c.call_tool(tool, args)
        ans = r.structured_content
        if ans is None:
            ans = json.loads(r.content[0].text)
        dt = time.monotonic() - self.t0
        status = ans.get("status", "error" if r.is_error else "-")
        print(f"{dt:6.2f}s {tool:<17} {shown:<44} -> {status:<7} exit={ans.get('exit_code', '-')!s:<4} "
              f"{snippet(ans.get('output'))!r}", flush=True)
        if r.is_error:
            raise Mismatch(f"{tool} answered an error: {json.dumps(ans)}")
        return ans

    def check(self, ans, what, status, exit_code=None, cwd=None, has=(), lacks=(), ends=None):
        """Asserts what an agent relies on; any extra key the answer carries is fine."""
        bad = []
        if ans.get("status") != status:
            bad.append(f"status {ans.get('status')!r}, want {status!r}")
        if exit_code is not None and ans.get("exit_code") != exit_code:
            bad.append(f"exit_code {ans.get('exit_code')!r}, want {exit_code!r}")
        if exit_code is None and "exit_code" in ans and status in ("input", "running"):
            bad.append(f"exit_code {ans['exit_code']!r} while it still runs")
        if cwd is not None and ans.get("cwd") != cwd:
            bad.append(f"cwd {ans.get('cwd')!r}, want {cwd!r}")
        if ans.get("pane_id") not in (None, self.pane):
            bad.append(f"pane_id {ans.get('pane_id')!r}, want {self.pane!r}")
        out = ans.get("output")
        if not isinstance(out, str):
            bad.append("no output string")
            out = ""
        for s in has:
            if s not in out:
                bad.append(f"{s!r} not in output")
        for s in lacks:
            if s in out:
                bad.append(f"{s!r} in output")
        if ends is not None and not out.rstrip().endswith(ends):
            bad.append(f"output does not end with {ends!r}")
        off = ans.get("offset")
        if not isinstance(off, int) or off < self.offset:
            bad.append(f"offset {off!r} not at or past the last one ({self.offset})")
        else:
            self.offset = off
        if bad:
            raise Mismatch(f"{what}: " + "; ".join(bad) + f"\n  answer: {json.dumps(ans)}")

    async def exec(self, command, **kw):
        args = {"pane_id": self.pane, "command": command, **kw}
        extra = "".join(f" {k}={v}" for k, v in kw.items())
        return await self.call("fugue_exec", args, f"{command!r}{extra}")

    async def send(self, **kw):
        args = {"pane_id": self.pane, **kw}
        shown = " ".join(f"{k}={v!r}" for k, v in kw.items())
        return await self.call("fugue_send_input", args, shown)


async def day(client, repo):
    d = Day(client, time.monotonic())
    name = f"day-{os.getpid()}"  # unique on a shared server too
    made = await d.call("fugue_create_session", {"name": name}, f"name={name!r} (bash, no command)")
    d.pane = made["pane_id"]
    try:
        await work(d, repo)
    finally:  # a failed day leaves no pane behind, even on a shared server
        with anyio.CancelScope(shield=True):
            await d.call("fugue_close_session", {"session_id": made["session_id"]}, name)


async def work(d, repo):

    a = await d.exec(f"cd {repo}")
    d.check(a, "cd", "ok", 0, cwd=repo)
    if a["output"] != "":
        raise Mismatch(f"cd printed {a['output']!r}: the output holds more than the command's own")

    a = await d.exec("make")
    d.check(a, "build", "ok", 0, cwd=repo, has=["cp hello.sh hello", "chmod +x hello"],
            lacks=["__fugue", "\x1b"])

    a = await d.exec("make test")
    d.check(a, "failing test", "failed", 2, cwd=repo,
            has=["FAIL: greeting: want 'Hello, world', got 'Hello, World'", "Error 1"])

    # git commit opens vim, which waits for the terminal: fugue says so instead of hanging.
    a = await d.exec("git add Makefile hello.sh .gitignore && GIT_EDITOR=vim git commit",
                     timeout_ms=20000)
    d.check(a, "git commit opens vim", "input", cwd=repo)
    a = await d.send(input="iAdd the greeting and its test", keys=["Escape"])
    if "status" in a:
        raise Mismatch(f"fugue_send_input without wait_ms answered a status: {json.dumps(a)}")
    a = await d.send(input=":wq", submit=True, wait_ms=20000)
    d.check(a, "vim :wq ends git commit", "ok", 0, cwd=repo,
            has=["Add the greeting and its test", "3 files changed"])
    a = await d.exec("git log --oneline")
    d.check(a, "git log", "ok", 0, cwd=repo, has=["Add the greeting and its test"])
    if len(a["output"].strip().splitlines()) != 1:
        raise Mismatch(f"git log: want one commit, got {a['output']!r}")

    # rm -i asks; the question ends the output; the answer is typed and waited on in one call.
    a = await d.exec("rm -i notes.txt", timeout_ms=20000)
    d.check(a, "rm -i asks", "input", cwd=repo, ends="remove regular file 'notes.txt'?")
    a = await d.send(input="y", submit=True, wait_ms=20000)
    d.check(a, "rm -i answered", "ok", 0, cwd=repo)
    if os.path.exists(os.path.join(repo, "notes.txt")):
        raise Mismatch("notes.txt is still there after rm -i answered y")
    a = await d.exec("test -e notes.txt")
    d.check(a, "notes.txt is gone", "failed", 1, cwd=repo)

    # A long build: the call answers `running` at its timeout, the agent then only waits.
    a = await d.exec("sleep 3; echo built", timeout_ms=500)
    d.check(a, "long build answers running", "running", cwd=None, lacks=["built"])
    a = await d.send(wait_ms=20000)
    d.check(a, "long build waited for", "ok", 0, cwd=repo, has=["built"])
    a = await d.exec("pwd")
    d.check(a, "the pane is free again", "ok", 0, cwd=repo)
    if a["output"] != repo:
        raise Mismatch(f"pwd printed {a['output']!r}, want {repo!r}")


async def main(a) -> int:
    missing = [p for p in ("git", "make", "vim", "bash") if shutil.which(p) is None]
    if missing:
        print(f"skipped: {', '.join(missing)} not installed")
        return 77
    env = {"FUGUE_SHELL": shutil.which("bash")}
    env.update(kv.split("=", 1) for kv in a.env)
    repo = make_repo()
    try:
        params = StdioServerParameters(command=a.cmd[0], args=a.cmd[1:], env=env)
        async with Client(params, mode="auto", cache=None) as c:
            print(f"protocol={c.protocol_version} repo={repo}")
            await day(c, repo)
        print("a day in one shell pane: every answer as expected")
        return 0
    except Mismatch as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(repo, ignore_errors=True)


if __name__ == "__main__":
    args = parse()
    try:
        sys.exit(anyio.run(main, args))
    except Exception as e:  # transport failure, handshake failure, validation error...
        while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        print(f"FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
