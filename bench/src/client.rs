//! A minimal MCP client that runs the fugue binary as a child and talks to it over stdio.
//!
//! Requests go out as JSON lines on the child's stdin; a reader thread stamps every stdout line with
//! the monotonic clock the moment it is read, so latencies are measured where an agent would see
//! them. Responses are matched by id; anything else waits in a backlog. Every wait has a deadline,
//! so a hung server fails a figure instead of hanging the run.

use crate::clock::now_ns;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

pub type R<T> = Result<T, String>;

/// The longest one answer may take before the figure is reported as failed.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// One message read from fugue, with the monotonic time (ns) at which its line was read.
pub struct Message {
    pub value: Value,
    pub at: u64,
}

pub struct Fugue {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Message>,
    backlog: Vec<Message>,
    next_id: u64,
}

impl Fugue {
    /// Starts fugue (with `/bin/sh` as its shell, like the baselines) without a handshake.
    pub fn spawn(bin: &Path, env: &[(&str, &str)]) -> R<Fugue> {
        Fugue::spawn_counting(bin, env, None)
    }

    /// Like `spawn`; with `count`, fugue logs at debug level and every line of its stderr that
    /// holds the needle adds one to the counter.
    pub fn spawn_counting(
        bin: &Path,
        env: &[(&str, &str)],
        count: Option<(&'static str, Arc<AtomicU64>)>,
    ) -> R<Fugue> {
        let mut cmd = Command::new(bin);
        let stderr = if count.is_some() { Stdio::piped() } else { Stdio::null() };
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(stderr);
        cmd.env("SHELL", "/bin/sh").env_remove("FUGUE_SHELL").env_remove("FUGUE_LOG");
        if count.is_some() {
            cmd.env("FUGUE_LOG", "debug");
        }
        for (key, value) in env {
            cmd.env(key, value);
        }
        let mut child = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        if let (Some((needle, counter)), Some(stderr)) = (count, child.stderr.take()) {
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if line.contains(needle) {
                        counter.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let at = now_ns();
                let value = serde_json::from_str(&line).unwrap_or(Value::Null);
                if tx.send(Message { value, at }).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Ok(Fugue { child, stdin, lines: rx, backlog: Vec::new(), next_id: 1 })
    }

    /// Starts fugue and completes the MCP handshake.
    pub fn start(bin: &Path) -> R<Fugue> {
        Fugue::start_with(bin, &[])
    }

    pub fn start_with(bin: &Path, env: &[(&str, &str)]) -> R<Fugue> {
        Fugue::start_counting(bin, env, None)
    }

    /// Starts fugue with a stderr counter (see `spawn_counting`) and completes the handshake.
    pub fn start_counting(
        bin: &Path,
        env: &[(&str, &str)],
        count: Option<(&'static str, Arc<AtomicU64>)>,
    ) -> R<Fugue> {
        let mut fugue = Fugue::spawn_counting(bin, env, count)?;
        fugue.initialize()?;
        fugue.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(fugue)
    }

    pub fn initialize(&mut self) -> R<Message> {
        let id = self.submit(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "fugue-bench", "version": "0"}}),
        )?;
        self.wait(id)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send(&mut self, message: &Value) -> R<()> {
        let stdin = self.stdin.as_mut().ok_or("stdin already closed")?;
        let mut line = message.to_string();
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .and_then(|_| stdin.flush())
            .map_err(|e| format!("cannot write to fugue: {e}"))
    }

    /// Sends a request without waiting; returns its id.
    pub fn submit(&mut self, method: &str, params: Value) -> R<u64> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// Sends a `tools/call` without waiting; returns its id.
    pub fn submit_tool(&mut self, tool: &str, arguments: Value) -> R<u64> {
        self.submit("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Waits for the response to `id`.
    pub fn wait(&mut self, id: u64) -> R<Message> {
        let is_it = |m: &Message| m.value.get("id") == Some(&json!(id));
        if let Some(i) = self.backlog.iter().position(is_it) {
            return Ok(self.backlog.remove(i));
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(m) if is_it(&m) => return Ok(m),
                Ok(m) => self.backlog.push(m),
                Err(RecvTimeoutError::Timeout) => return Err(format!("no answer to id {id}")),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("fugue closed stdout before answering id {id}"));
                }
            }
        }
    }

    /// Waits for a tool call's answer and returns its structured result, or the tool's error.
    pub fn wait_tool(&mut self, id: u64) -> R<(Value, u64)> {
        let m = self.wait(id)?;
        Ok((tool_result(&m.value)?, m.at))
    }

    /// Calls a tool and returns its structured result.
    pub fn call(&mut self, tool: &str, arguments: Value) -> R<Value> {
        let id = self.submit_tool(tool, arguments)?;
        Ok(self.wait_tool(id)?.0)
    }

    /// Calls a tool and returns its result with the time from sending to the answer.
    pub fn call_timed(&mut self, tool: &str, arguments: Value) -> R<(Value, Duration)> {
        let sent = now_ns();
        let id = self.submit_tool(tool, arguments)?;
        let (value, at) = self.wait_tool(id)?;
        Ok((value, Duration::from_nanos(at.saturating_sub(sent))))
    }

    /// Closes stdin (fugue then ends everything it started) and waits for the process to exit.
    /// Returns how long the shutdown took.
    pub fn close(mut self) -> R<Duration> {
        let started = Instant::now();
        drop(self.stdin.take());
        let deadline = started + Duration::from_secs(30);
        loop {
            if let Some(_status) = self.child.try_wait().map_err(|e| e.to_string())? {
                return Ok(started.elapsed());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err("fugue did not exit within 30 s of stdin closing".into());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Fugue {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if matches!(self.child.try_wait(), Ok(None)) {
            // Closing stdin is enough; give it a moment before insisting.
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The structured result of a `tools/call` response, or its error as text.
fn tool_result(response: &Value) -> R<Value> {
    if let Some(err) = response.get("error") {
        return Err(format!("protocol error: {err}"));
    }
    let result = &response["result"];
    if result["isError"] == json!(true) {
        return Err(format!("tool error: {}", result["structuredContent"]["error"]));
    }
    Ok(result["structuredContent"].clone())
}

/// A `/proc/PID/status` field in its own unit (kB for memory, a count for threads).
pub fn proc_status(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line =
        status.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    line[field.len() + 1..].split_whitespace().next()?.parse().ok()
}

/// Resident memory of `pid` in bytes.
pub fn rss(pid: u32) -> u64 {
    proc_status(pid, "VmRSS").unwrap_or(0) * 1024
}

pub fn threads(pid: u32) -> u64 {
    proc_status(pid, "Threads").unwrap_or(0)
}

pub fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// CPU time `pid` has used so far, all its threads (dead ones too), without its children.
pub fn cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rfind(')').map_or("", |i| &stat[i + 1..]);
    // After the name: state is the first field, utime the 12th and stime the 13th.
    let ticks: u64 =
        rest.split_whitespace().skip(11).take(2).filter_map(|f| f.parse::<u64>().ok()).sum();
    // SAFETY: sysconf only reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_nanos(ticks * 1_000_000_000 / hz)
}

/// CPU time the calling thread has used so far.
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes only to `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// How many read(2) calls `pid` has made so far, all its threads (`syscr` in /proc/PID/io).
pub fn read_calls(pid: u32) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    io.lines().find_map(|l| l.strip_prefix("syscr:"))?.trim().parse().ok()
}
