//! The control socket of a running `fugue serve`: a side door for `fugue ls` and `fugue attach`.
//!
//! One thread accepts connections on `DIR/PID.sock` (see `dir`); each connection gets a thread that
//! reads requests, one JSON line at a time, and answers them in order, plus a watcher thread once it
//! asks to watch a window. Connections are few (`MAX_CONNECTIONS`), only from our own uid, and a
//! client that stops reading is dropped after a write timeout. None of this shares a lock with the
//! stdin loop, and a pane's reader only ever sees one more subscriber on its watch.
//!
//! It speaks JSON-RPC as stdio does (`wire`). Methods: `hello` (declares `input`, answers `info`),
//! `info`, `tree`, `window` (a view: `session`, `window`, `rows`, `cols`, `watch`), `scrollback`
//! (`pane`, `lines`), `input` (`pane`, `data`; only after `hello` with `input: true`) and `resize`
//! (`session`, `window`, `rows`, `cols`). A failure is an `Error`, answered with its stable word.

use super::view::{self, WindowRef};
use super::watch::{self, Arm, Out};
use super::wire::{self, rpc_error};
use super::{THREAD_STACK, dir};
use crate::error::{Error, ErrorKind, Result};
use crate::ids::unix_ms;
use crate::jsonrpc::{self, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, RpcError};
use crate::line::{self, LineError};
use crate::mcp::Mcp;
use crate::pane::output::{ReadRequest, View};
use crate::tool::args::Args;
use crossbeam_channel::Sender;
use serde_json::{Map, Value, json};
use std::io::{BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

/// Connections served at once; one more is told the server is busy.
pub(crate) const MAX_CONNECTIONS: usize = 16;
/// How long a write to a client may block before the client is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// The pause after a failed accept (out of file descriptors, say), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// How much of an oversized request is read and dropped before its connection closes.
const MAX_DISCARD: u64 = 16 << 20;
/// How long each read of that waits.
const DISCARD_WAIT: Duration = Duration::from_secs(5);
/// The most lines of scrollback one request returns.
const MAX_SCROLLBACK_LINES: u64 = 10_000;

/// The running control socket; dropping it removes the socket file.
pub(crate) struct ControlSocket {
    path: PathBuf,
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What `info` says of the shared server this process is, if it is one: given by the caller, so
/// the control socket does not reach up into the shared server that starts it.
pub(crate) type HostInfo = Box<dyn Fn() -> Option<Value> + Send + Sync>;

/// What every connection of this server shares.
struct Shared {
    mcp: Arc<Mcp>,
    host: HostInfo,
    started: SystemTime,
    connections: AtomicUsize,
}

/// Creates the socket and starts accepting. Cleans up sockets that dead servers left behind.
pub(crate) fn start(mcp: Arc<Mcp>, host: HostInfo) -> Result<ControlSocket> {
    let dir = dir::create()?;
    dir::remove_stale(&dir);
    let path = dir::socket(&dir, std::process::id());
    // Only a dead process with our pid could have left this one.
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).map_err(|e| {
        Error::new(ErrorKind::Io, format!("cannot listen on {}: {e}", path.display()))
    })?;
    let control = ControlSocket { path };
    std::fs::set_permissions(&control.path, std::fs::Permissions::from_mode(0o600))?;
    let shared = Arc::new(Shared {
        mcp,
        host,
        started: SystemTime::now(),
        connections: AtomicUsize::new(0),
    });
    crate::threads::spawn(
        "control",
        Some(THREAD_STACK),
        Box::new(move || accept_loop(&listener, &shared)),
    )?;
    Ok(control)
}

fn accept_loop(listener: &UnixListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => admit(stream, shared),
            Err(e) => {
                crate::log::info(&format!("control socket: accept failed: {e}"));
                std::thread::sleep(ACCEPT_BACKOFF);
            }
        }
    }
}

/// Gives a connection from our own uid a thread of its own, if there is room.
fn admit(mut stream: UnixStream, shared: &Arc<Shared>) {
    let cred = peer_cred(&stream);
    if cred.map(|c| c.uid) != Some(crate::procfs::euid()) {
        crate::log::warn("control socket: refused a connection from another user");
        return;
    }
    if cred.is_some_and(|c| shared.mcp.runtime.refuses_peer(c.pid)) {
        crate::log::warn("control socket: refused a connection from a sandboxed pane");
        return;
    }
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    if shared.connections.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
        shared.connections.fetch_sub(1, Ordering::SeqCst);
        let busy = error_line(&rpc_error(&busy()));
        let _ = stream.write_all(&busy);
        return;
    }
    let slot = Permit(shared.clone());
    let started = crate::threads::spawn(
        "control-conn",
        Some(THREAD_STACK),
        Box::new(move || {
            let slot = slot;
            serve(stream, &slot.0);
        }),
    );
    if let Err(e) = started {
        crate::log::warn(&format!("control socket: cannot start a thread: {e}"));
    }
}

/// A held connection slot, given back when its thread ends (or never starts).
struct Permit(Arc<Shared>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One connection: its writer, whether it may type, and its watcher once it has one.
struct Conn<'a> {
    shared: &'a Shared,
    out: Arc<Out>,
    input: bool,
    watcher: Option<Sender<Arm>>,
    /// An arm to hand the watcher once the answer that it belongs to is written.
    arm: Option<Arm>,
}

fn serve(stream: UnixStream, shared: &Shared) {
    let Ok(read_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read_half);
    let mut conn =
        Conn { shared, out: Arc::new(Out::new(stream)), input: false, watcher: None, arm: None };
    loop {
        let line = match line::read_line(&mut reader, wire::MAX_REQUEST) {
            Ok(Some(line)) => line,
            Ok(None) | Err(LineError::Io(_)) => return,
            Err(LineError::TooLong) => {
                let message = format!("a request line is limited to {} bytes", wire::MAX_REQUEST);
                let error = RpcError::new(INVALID_REQUEST, message);
                let _ = conn.out.send(&jsonrpc::error(&Value::Null, &error));
                discard_line(&mut reader);
                return;
            }
        };
        if conn.answer(&line).is_err() {
            return;
        }
    }
}

impl Conn<'_> {
    /// Answers one request line; an error means the client is gone.
    fn answer(&mut self, line: &[u8]) -> std::io::Result<()> {
        let (id, outcome) = match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(request)) => {
                let id = request.get("id").cloned().unwrap_or(Value::Null);
                (id, self.handle(&request))
            }
            Ok(_) => (Value::Null, Err(RpcError::new(INVALID_REQUEST, "a request is an object"))),
            Err(e) => (Value::Null, Err(RpcError::new(PARSE_ERROR, format!("not JSON: {e}")))),
        };
        match outcome {
            Ok(value) => self.out.send(&jsonrpc::result(&id, value))?,
            Err(error) => self.out.send(&jsonrpc::error(&id, &error))?,
        }
        if let Some(arm) = self.arm.take() {
            self.arm_watcher(arm)?;
        }
        Ok(())
    }

    fn handle(&mut self, req: &Map<String, Value>) -> Result<Value, RpcError> {
        let method = req.get("method").and_then(Value::as_str).unwrap_or("");
        let empty = Map::new();
        let params = match req.get("params") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(params)) => params,
            Some(_) => return Err(RpcError::new(INVALID_REQUEST, "params is an object")),
        };
        if method.is_empty() {
            return Err(RpcError::new(INVALID_REQUEST, "a request needs a \"method\""));
        }
        self.method(method, &Args::new(params)).map_err(|e| match e {
            Unanswered::Unknown => RpcError::new(
                METHOD_NOT_FOUND,
                format!(
                    "unknown method {method:?}: hello, info, tree, window, scrollback, input, \
                     resize"
                ),
            ),
            Unanswered::Failed(e) => rpc_error(&e),
        })
    }

    /// One method's answer, with the same argument checks and errors as a tool call's.
    fn method(&mut self, method: &str, args: &Args<'_>) -> std::result::Result<Value, Unanswered> {
        match method {
            "hello" => {
                self.input = args.bool("input")?.unwrap_or(false);
                Ok(self.info())
            }
            "info" => Ok(self.info()),
            "tree" => Ok(view::tree(&self.shared.mcp.runtime.mux)),
            "window" => self.window(args),
            "scrollback" => self.scrollback(args),
            "input" => self.input(args),
            "resize" => self.resize(args),
            _ => return Err(Unanswered::Unknown),
        }
        .map_err(Unanswered::Failed)
    }

    fn info(&self) -> Value {
        let client =
            self.shared.mcp.client().map(|c| json!({"name": c.name, "version": c.version}));
        let mut info = json!({
            "pid": std::process::id(),
            "version": env!("CARGO_PKG_VERSION"),
            "started_at": unix_ms(self.shared.started),
            "cwd": self.shared.mcp.cwd,
            "client": client,
            "input": self.input,
            "shared": (self.shared.host)(),
        });
        // The hosts its calls reach, for `fugue ls` to list theirs over the same connections.
        let hosts = crate::remote::hosts::open();
        if !hosts.is_empty() {
            info["hosts"] = Value::Array(hosts);
        }
        info
    }

    fn window(&mut self, args: &Args<'_>) -> Result<Value> {
        let target = WindowRef {
            session: args.str("session")?.map(str::to_string),
            window: args.str("window")?.map(str::to_string),
        };
        let rows = args.u16("rows", 1, 1000)?.unwrap_or(24);
        let cols = args.u16("cols", 1, 1000)?.unwrap_or(80);
        let (value, print) = view::window(&self.shared.mcp.runtime.mux, &target, (rows, cols));
        if args.bool("watch")?.unwrap_or(false) {
            self.arm = Some(Arm { target, print });
        }
        Ok(value)
    }

    fn arm_watcher(&mut self, arm: Arm) -> std::io::Result<()> {
        if self.watcher.is_none() {
            self.watcher =
                Some(watch::start(self.shared.mcp.runtime.mux.clone(), self.out.clone())?);
        }
        if let Some(watcher) = &self.watcher {
            // Only a client that asks faster than the watcher takes arms fills the channel; the
            // newest arm wins soon enough, so a full channel just drops this one.
            let _ = watcher.try_send(arm);
        }
        Ok(())
    }

    fn scrollback(&self, args: &Args<'_>) -> Result<Value> {
        let pane = self.shared.mcp.runtime.mux.pane(args.required_str("pane")?)?;
        let lines = args.u64("lines", 1, MAX_SCROLLBACK_LINES)?.unwrap_or(1000);
        let read = pane.output().read(&ReadRequest {
            view: View::Text,
            lines: lines as usize,
            since: None,
            max_bytes: self.shared.mcp.runtime.config.max_output_bytes,
        })?;
        let lines: Vec<&str> =
            if read.output.is_empty() { Vec::new() } else { read.output.split('\n').collect() };
        Ok(json!({"lines": lines, "truncated": read.truncated}))
    }

    fn input(&self, args: &Args<'_>) -> Result<Value> {
        if !self.input {
            return Err(Error::new(
                ErrorKind::InvalidState,
                "this connection is read-only; say hello with \"input\": true (fugue attach --input)",
            ));
        }
        let pane = self.shared.mcp.runtime.mux.pane(args.required_str("pane")?)?;
        let data = args.required_str("data")?;
        let (offset, pending) = pane.send(&[data.as_bytes()])?;
        Ok(json!({"bytes": data.len(), "offset": offset, "pending": pending}))
    }

    fn resize(&self, args: &Args<'_>) -> Result<Value> {
        let session = args.required_str("session")?;
        let window = args.required_str("window")?;
        let rows = args.u16("rows", 2, 1000)?.ok_or_else(|| missing("rows"))?;
        let cols = args.u16("cols", 10, 1000)?.ok_or_else(|| missing("cols"))?;
        self.shared.mcp.runtime.mux.resize_window(session, window, rows, cols)?;
        Ok(json!({"rows": rows, "cols": cols}))
    }
}

/// Reads and drops the rest of an oversized line (a bounded amount, with a bounded wait), so the
/// connection closes with no unread input: closing a Unix socket that holds unread input resets
/// it, and the client could fail its write or lose the answer it was sent.
fn discard_line(reader: &mut BufReader<UnixStream>) {
    let _ = reader.get_ref().set_read_timeout(Some(DISCARD_WAIT));
    let _ = line::skip_line(reader, MAX_DISCARD);
}

/// Why a method gave no answer.
enum Unanswered {
    /// No method has that name.
    Unknown,
    Failed(Error),
}

impl From<Error> for Unanswered {
    fn from(e: Error) -> Unanswered {
        Unanswered::Failed(e)
    }
}

fn missing(key: &str) -> Error {
    Error::invalid(format!("argument '{key}' is required"))
}

fn busy() -> Error {
    Error::new(
        ErrorKind::LimitReached,
        format!("this fugue already serves {MAX_CONNECTIONS} control connections; close one"),
    )
}

fn error_line(error: &RpcError) -> Vec<u8> {
    let mut line = serde_json::to_vec(&jsonrpc::error(&Value::Null, error)).unwrap_or_default();
    line.push(b'\n');
    line
}

/// The pid and uid of the process at the other end of a Unix socket.
pub(crate) fn peer_cred(stream: &UnixStream) -> Option<libc::ucred> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, which is that large and lives
    // across the call.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &raw mut len,
        )
    };
    (r == 0).then_some(cred)
}
