//! The channel to a host's fugue: `fugue serve --shared NAME` run there over the master, a front
//! for the host's shared server (started by that front when none runs), spoken to in MCP lines.
//!
//! Any number of calls share the channel at once; answers are matched by request id, as the front
//! matches them. A call cancelled here sends `notifications/cancelled` there and ends at once, as a
//! local call does: its wait there ends, what it started goes on. A task's cancel (which stops
//! the work too) says so in the notification's `_meta` (`STOP_WORK`); the host's fugue then stops
//! the work as it would a task's and answers once it has, so the call here ends when the shell
//! there is back at its prompt, as a local task's does (at most `STOP_WAIT`). When the channel
//! closes — the master dropped the connection, or the front ended — every call waiting on it
//! answers `host_unreachable` at once; the host's server keeps its panes, and the next call opens
//! a new channel to it. Progress the host's fugue reports on a call is reported on the call here.

use super::ssh::{self, Master, Stderr};
use super::upload::Binary;
use crate::cancel::Cancel;
use crate::error::{Error, ErrorKind, Result};
use crate::tool::call::Progress;
use crossbeam_channel::{Receiver, Sender, select, unbounded};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// How long the host's fugue may take to answer `initialize` (starting its server included).
const HELLO_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a call whose work is stopped there waits for the host's fugue to say it has stopped.
const STOP_WAIT: Duration = Duration::from_secs(10);

type InFlight = Arc<Mutex<HashMap<u64, Sender<Value>>>>;

pub(crate) struct Link {
    host: String,
    stdin: Mutex<ChildStdin>,
    pending: InFlight,
    next: AtomicU64,
    closed: Arc<AtomicBool>,
    child: Mutex<Child>,
    stderr: Stderr,
}

impl Link {
    /// Starts the host's front for server `server` and says hello.
    pub(crate) fn open(master: &Master, binary: &Binary, server: &str) -> Result<Link> {
        let script = format!("exec {} serve --shared {server}", binary.remote_path());
        let mut cmd = ssh::remote(&master.host, &master.control, &script);
        cmd.stdin(Stdio::piped());
        let mut child = ssh::spawn(cmd)?;
        let stderr = Stderr::drain(child.stderr.take().expect("piped"));
        let pending = InFlight::default();
        let closed = Arc::new(AtomicBool::new(false));
        read_answers(child.stdout.take().expect("piped"), pending.clone(), closed.clone());
        let link = Link {
            host: master.host.clone(),
            stdin: Mutex::new(child.stdin.take().expect("piped")),
            pending,
            next: AtomicU64::new(1),
            closed,
            child: Mutex::new(child),
            stderr,
        };
        link.hello()?;
        Ok(link)
    }

    fn hello(&self) -> Result<()> {
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                            "clientInfo": {"name": "fugue-remote", "version": env!("CARGO_PKG_VERSION")}});
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let answer = self.send(id, "initialize", params)?;
        match answer.recv_timeout(HELLO_TIMEOUT) {
            Ok(message) if message.get("result").is_some() => {}
            Ok(message) => {
                return Err(Error::new(
                    ErrorKind::HostUnsupported,
                    format!("fugue on {} refused to start: {}", self.host, message["error"]),
                ));
            }
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                self.pending.lock().remove(&id);
                return Err(self.gone("fugue there did not answer its hello"));
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                let said = self.stderr.text();
                return Err(Error::new(
                    ErrorKind::HostUnsupported,
                    format!("fugue did not start on {}: {}", self.host, said.trim()),
                ));
            }
        }
        self.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    }

    /// Whether the channel is still open.
    pub(crate) fn alive(&self) -> bool {
        !self.closed.load(Ordering::SeqCst)
    }

    /// Calls `method` there and waits for its answer; `cancel` passes a cancel on, and the
    /// progress it reports (its token is the request's id) is reported here.
    pub(crate) fn request(
        &self,
        method: &str,
        mut params: Value,
        cancel: &Cancel,
        progress: &Progress,
    ) -> Result<Value> {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        if progress.is_wanted() {
            params["_meta"]["progressToken"] = json!(id);
        }
        let answer = self.send(id, method, params)?;
        loop {
            select! {
                recv(answer) -> message => match message {
                    Ok(message) if message.get("method").is_some() => {
                        let p = &message["params"];
                        let total = p["total"].as_f64();
                        let said = p["message"].as_str().unwrap_or("");
                        progress.report(p["progress"].as_f64().unwrap_or(0.0), total, said);
                    }
                    Ok(message) => return Ok(message),
                    Err(_) => return Err(self.gone("the connection dropped")),
                },
                recv(cancel.receiver()) -> _ => return self.cancel(id, &answer, cancel.stops_work()),
            }
        }
    }

    /// Cancels request `id` there; `stop` stops its work too, and waits until it has.
    fn cancel(&self, id: u64, answer: &Receiver<Value>, stop: bool) -> Result<Value> {
        let mut params = json!({"requestId": id});
        if stop {
            params["_meta"] = json!({super::wire::STOP_WORK: true});
        }
        let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params});
        let _ = self.write(&note);
        if stop {
            let deadline = std::time::Instant::now() + STOP_WAIT;
            // Progress may come first; the answer, or the channel's end, says the work stopped.
            while answer.recv_deadline(deadline).is_ok_and(|m| m.get("method").is_some()) {}
        }
        self.pending.lock().remove(&id);
        Err(Error::cancelled())
    }

    /// Sends request `id`; its answer, and before it its progress, come on the channel.
    fn send(&self, id: u64, method: &str, params: Value) -> Result<Receiver<Value>> {
        let (tx, rx) = unbounded();
        self.pending.lock().insert(id, tx);
        if !self.alive() {
            self.pending.lock().remove(&id);
            return Err(self.gone("the connection is closed"));
        }
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(rx)
    }

    fn write(&self, message: &Value) -> Result<()> {
        let mut line = serde_json::to_vec(message).unwrap_or_default();
        line.push(b'\n');
        let mut stdin = self.stdin.lock();
        stdin
            .write_all(&line)
            .and_then(|()| stdin.flush())
            .map_err(|_| self.gone("the connection is closed"))
    }

    /// `host_unreachable`, with what ssh said.
    fn gone(&self, what: &str) -> Error {
        let said = self.stderr.text();
        let said = said.lines().last().map(|l| format!(" ({l})")).unwrap_or_default();
        Error::new(
            ErrorKind::HostUnreachable,
            format!(
                "{}: {what}{said}; its panes live on there, and the next call reconnects",
                self.host
            ),
        )
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let mut child = self.child.lock();
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Reads the front's lines, handing each answer (and progress) to the call that waits for it;
/// at the end,
/// closes the link and wakes every call still waiting.
fn read_answers(stdout: ChildStdout, pending: InFlight, closed: Arc<AtomicBool>) {
    let _ = crate::threads::spawn(
        "remote-link",
        None,
        Box::new(move || {
            for line in BufReader::new(stdout).lines().map_while(std::result::Result::ok) {
                let Ok(message) = serde_json::from_slice::<Value>(line.as_bytes()) else {
                    continue;
                };
                let waiting = if message["method"] == "notifications/progress" {
                    let token = message["params"]["progressToken"].as_u64();
                    token.and_then(|t| pending.lock().get(&t).cloned())
                } else {
                    message
                        .get("id")
                        .and_then(Value::as_u64)
                        .and_then(|id| pending.lock().remove(&id))
                };
                if let Some(waiting) = waiting {
                    let _ = waiting.send(message);
                }
            }
            closed.store(true, Ordering::SeqCst);
            pending.lock().clear();
        }),
    );
}
