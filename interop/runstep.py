"""Run one interop step with a time limit, and make sure it leaves no process behind.

Usage: python runstep.py TIMEOUT_S CMD [ARGS...]

* The command runs in a new session/process group with stdin from /dev/null.
* This process becomes a Linux "child subreaper" (prctl PR_SET_CHILD_SUBREAPER), so
  every process the step starts and orphans -- including ones that called setsid,
  like supergateway's children or PTY shells -- is re-parented here, not to init.
* On TIMEOUT_S, or on SIGINT/SIGTERM/SIGHUP, the group gets SIGTERM, then SIGKILL 5 s later.
* After the command exits, any descendant still alive 3 s later is a leftover: it is
  listed on stderr ("LEFTOVER pid: cmdline"), terminated (TERM, then KILL) by pid,
  and the step fails.
Exit status: the command's; 124 on timeout; 3 if it passed but left processes behind;
128+N if interrupted by signal N.
"""

import ctypes
import os
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
GRACE = 3.0  # a server gets up to 2 s after stdin EOF (mcp-protocol.md §1.2), plus slack


def set_subreaper():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants():
    """Live descendants of this process (pid -> cmdline); zombies are reaped, not listed."""
    me, kids, info = os.getpid(), {}, {}
    try:
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
            state, ppid = stat.rsplit(")", 1)[1].split()[:2]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(int(ppid), []).append(pid)
        info[pid] = (state, cmd)
    out, todo = {}, list(kids.get(me, []))
    while todo:
        pid = todo.pop()
        todo += kids.get(pid, [])
        state, cmd = info[pid]
        if state != "Z":
            out[pid] = cmd
    return out


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    timeout, cmd = float(sys.argv[1]), sys.argv[2:]
    reaper = set_subreaper()
    got_signal = []

    def on_signal(signum, _frame):
        got_signal.append(signum)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as e:
        print(f"runstep: cannot start {cmd[0]}: {e}", file=sys.stderr)
        return 127
    deadline = time.monotonic() + timeout
    rc = None
    while rc is None:
        try:
            rc = proc.wait(timeout=0.1)
        except subprocess.TimeoutExpired:
            pass
        if rc is None and (got_signal or time.monotonic() > deadline):
            why = f"signal {got_signal[0]}" if got_signal else f"timeout after {timeout:g}s"
            print(f"runstep: stopping the step ({why})", file=sys.stderr)
            kill_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                kill_group(proc.pid, signal.SIGKILL)
                proc.wait()
            rc = 128 + got_signal[0] if got_signal else 124
    if not reaper:
        return rc
    t_end = time.monotonic() + (GRACE if not got_signal else 0.5)
    left = descendants()
    while left and time.monotonic() < t_end:
        time.sleep(0.1)
        reap()
        left = descendants()
    if left:
        for pid, c in sorted(left.items()):
            print(f"LEFTOVER {pid}: {c[:200]}", file=sys.stderr)
        for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 1.0)):
            for pid in descendants():
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            t_stop = time.monotonic() + wait
            while descendants() and time.monotonic() < t_stop:
                time.sleep(0.1)
                reap()
        if rc == 0:
            print("runstep: the step left processes behind", file=sys.stderr)
            rc = 3
    reap()
    return rc


if __name__ == "__main__":
    sys.exit(main())
