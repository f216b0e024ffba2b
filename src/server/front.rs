//! The front: `fugue serve --shared NAME` as a line pipe to the shared server NAME.
//!
//! `open` finds the server or starts it (tmux's rule: only on "no such socket" or "refused", and
//! only holding `NAME.lock`, after connecting once more), exchanges hellos, and replaces a server
//! of another wire protocol only when it holds nothing. Then two loops copy whole lines: stdin to
//! the socket, the socket to stdout. Each front connection is its own MCP session on the server,
//! so nothing is rewritten. The front only notes which requests await an answer, so that if the
//! server dies it can answer each with an error instead of leaving the client waiting.

use super::{Census, FileLock, HELLO_TIMEOUT, Hello, Paths, Role};
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::jsonrpc::{self, RpcError};
use crate::line::{self, LineError, Next};
use crate::mcp::Method;
use crate::sandbox::Policy;
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::io::{BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::Duration;

/// The JSON-RPC error code of an answer the front gives itself: the server is gone or unusable.
const SERVER_GONE: i64 = -32001;
/// How long a new server may take to say it is ready (it may first wait out an ending one).
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an ending server (killed for another protocol) may take to let go of its pid lock.
const END_PATIENCE: Duration = Duration::from_secs(30);
/// Connection attempts before giving up on a server that keeps closing on us.
const ATTEMPTS: usize = 5;
/// The smallest cap on a line from the server (see `max_answer`).
const MIN_ANSWER: usize = 64 << 20;

/// A connection past the hellos.
pub(crate) struct Greeted {
    pub(crate) stream: UnixStream,
    pub(crate) input: BufReader<UnixStream>,
    pub(crate) server: Hello,
}

/// What one connection attempt found.
enum Reached {
    /// No socket, or nobody listening on it.
    Nobody,
    /// The connection closed before the server's hello: it is ending, or full.
    Closed,
    /// Connected, but no hello in time.
    Unresponsive,
    /// Boxed: the server's hello is large beside the other variants.
    Server(Box<Greeted>),
}

/// `fugue serve --shared NAME`: connects (starting the server if needed, under `policy`) and
/// pipes until the client or the server is gone. `config` is the settings read at start.
pub(crate) fn serve(name: &str, policy: &Policy, config: &Config) -> ExitCode {
    let limits = LineLimits::of(config);
    match Paths::new(name).and_then(|paths| open(&paths, policy, config)) {
        Ok(link) => pipe(link, limits),
        Err(e) => {
            crate::log::error(e.message());
            answer_errors(e.message(), limits.max_line)
        }
    }
}

/// The front's limits on lines, given when it starts (from `Config`).
#[derive(Clone, Copy)]
struct LineLimits {
    /// The longest line taken from the client (`FUGUE_MAX_LINE_BYTES`, as the server takes it).
    max_line: usize,
    /// The longest line taken from the server (`max_answer`).
    max_answer: usize,
}

impl LineLimits {
    fn of(config: &Config) -> LineLimits {
        LineLimits {
            max_line: config.max_line_bytes,
            max_answer: max_answer(config.max_output_bytes),
        }
    }
}

/// Connects to server `paths.name` as a front that asks for `policy`, starting or replacing it
/// as needed (where `config.state_dir` says its log goes).
pub(crate) fn open(paths: &Paths, policy: &Policy, config: &Config) -> Result<Greeted> {
    for _ in 0..ATTEMPTS {
        match connect(paths, Role::Front)? {
            Reached::Server(link) if link.server.proto == super::proto() => {
                return same_sandbox(paths, *link, policy);
            }
            Reached::Server(link) => replace_or_refuse(paths, &link.server)?,
            Reached::Closed => {}
            Reached::Unresponsive => return Err(unresponsive(paths)),
            Reached::Nobody => {
                let _starting = FileLock::take(&paths.lock)?;
                match connect(paths, Role::Front)? {
                    Reached::Server(link) if link.server.proto == super::proto() => {
                        return same_sandbox(paths, *link, policy);
                    }
                    Reached::Server(link) => replace_or_refuse(paths, &link.server)?,
                    Reached::Closed => {}
                    Reached::Unresponsive => return Err(unresponsive(paths)),
                    Reached::Nobody => start(paths, policy, config)?,
                }
            }
        }
    }
    Err(Error::new(
        ErrorKind::InvalidState,
        format!(
            "fugue server {:?} keeps closing connections before its hello (it serves {} \
             connections at most); try again, or see `fugue ls`",
            paths.name,
            super::host::MAX_FRONTS
        ),
    ))
}

/// Connects and exchanges hellos.
fn connect(paths: &Paths, role: Role) -> Result<Reached> {
    let stream = match UnixStream::connect(&paths.sock) {
        Ok(stream) => stream,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ECONNREFUSED)) => {
            return Ok(Reached::Nobody);
        }
        Err(e) => return Err(super::io_error(&paths.sock, &e)),
    };
    let mut hello = Hello::new(Some(role), None);
    if role == Role::Front {
        hello.cwd = own_cwd();
    }
    if (&stream).write_all(&hello.line()).is_err() {
        return Ok(Reached::Closed);
    }
    let mut input =
        BufReader::new(stream.try_clone().map_err(|e| super::io_error(&paths.sock, &e))?);
    stream.set_read_timeout(Some(HELLO_TIMEOUT)).ok();
    let line = match line::read_line(&mut input, super::MAX_HELLO) {
        Ok(Some(line)) => line,
        Err(LineError::Io(e))
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            return Ok(Reached::Unresponsive);
        }
        Ok(None) | Err(_) => return Ok(Reached::Closed),
    };
    stream.set_read_timeout(None).ok();
    match Hello::parse(&line) {
        Some(server) => Ok(Reached::Server(Box::new(Greeted { stream, input, server }))),
        None => Ok(Reached::Unresponsive),
    }
}

/// The front's directory as its hello names it. One that cannot be read (removed) or is not
/// UTF-8 is left out, and the server takes its own, `/`, instead: a front never borrows another
/// front's directory.
fn own_cwd() -> Option<String> {
    let unusable = |why: String| {
        crate::log::warn(&format!("{why}; panes made without a cwd start in /"));
    };
    let dir = std::env::current_dir()
        .map_err(|e| unusable(format!("cannot read the current directory: {e}")))
        .ok()?;
    dir.into_os_string()
        .into_string()
        .map_err(|dir| {
            let shown = std::path::Path::new(&dir).display().to_string();
            unusable(format!("the current directory {shown} is not UTF-8 text"));
        })
        .ok()
}

/// The link, when the server's sandbox policy is the front's; a server's policy is fixed when it
/// starts, so a front can never loosen (or change) it.
fn same_sandbox(paths: &Paths, link: Greeted, policy: &Policy) -> Result<Greeted> {
    let ours = crate::sandbox::policy_line(policy);
    if link.server.sandbox == ours {
        return Ok(link);
    }
    let off = || "sandbox: off".to_string();
    Err(Error::new(
        ErrorKind::InvalidState,
        format!(
            "fugue server {name:?} (pid {pid}) runs with {theirs}; this front asks for {ours}. A \
             shared server's policy is fixed when it starts: use another server name, or end it \
             with `fugue kill-server {name}` (it ends every pane)",
            name = paths.name,
            pid = link.server.pid,
            theirs = link.server.sandbox.clone().unwrap_or_else(off),
            ours = ours.unwrap_or_else(off),
        ),
    ))
}

/// A server of another wire protocol: ended and replaced if it holds nothing, refused otherwise.
fn replace_or_refuse(paths: &Paths, server: &Hello) -> Result<()> {
    let state = server.state.clone().unwrap_or_default();
    if state.sessions > 0 || state.panes > 0 {
        return Err(skew(paths, server, &state));
    }
    crate::log::warn(&format!(
        "replacing fugue server {:?} (fugue {}, wire protocol {}; it holds no session) with fugue \
         {} (wire protocol {})",
        paths.name,
        server.version,
        server.proto,
        super::version(),
        super::proto()
    ));
    end_server(paths)
}

fn skew(paths: &Paths, server: &Hello, state: &Census) -> Error {
    Error::new(
        ErrorKind::InvalidState,
        format!(
            "fugue server {name:?} (pid {pid}) is fugue {theirs} (wire protocol {tp}); this is \
             fugue {ours} (wire protocol {op}). It has {sessions} session(s) and {panes} pane(s), \
             so it was left running. Finish with them and run `fugue kill-server {name}` (it ends \
             every pane), or use another server name, or run the old binary (/proc/{pid}/exe).",
            name = paths.name,
            pid = server.pid,
            theirs = server.version,
            tp = server.proto,
            ours = super::version(),
            op = super::proto(),
            sessions = state.sessions,
            panes = state.panes,
        ),
    )
}

fn unresponsive(paths: &Paths) -> Error {
    let pid = paths.read_pid().map_or_else(|| "?".to_string(), |p| p.to_string());
    Error::new(
        ErrorKind::InvalidState,
        format!(
            "fugue server {:?} (pid {pid}) accepts connections but does not answer within {} s; \
             `fugue kill-server {}` ends it",
            paths.name,
            HELLO_TIMEOUT.as_secs(),
            paths.name
        ),
    )
}

/// Asks the server to end (a `kill` hello, which every version understands) and waits until it
/// has let go of its pid lock, that is, until its last pane is gone.
pub(crate) fn end_server(paths: &Paths) -> Result<()> {
    if let Reached::Unresponsive = connect(paths, Role::Kill)?
        && let Some(pid) = paths.read_pid().and_then(|p| libc::pid_t::try_from(p).ok())
    {
        // SAFETY: kill with a pid read from the pid file, which the server holds locked.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    match FileLock::take_within(&paths.pid, END_PATIENCE)? {
        Some(_) => Ok(()),
        None => Err(Error::new(
            ErrorKind::InvalidState,
            format!(
                "fugue server {:?} did not end within {} s",
                paths.name,
                END_PATIENCE.as_secs()
            ),
        )),
    }
}

/// Starts the server detached and waits for its ready line. The caller holds `NAME.lock`.
fn start(paths: &Paths, policy: &Policy, config: &Config) -> Result<()> {
    let exe =
        std::env::current_exe().map_err(|e| Error::internal(format!("no current exe: {e}")))?;
    let mut child = Command::new(exe)
        .arg("__server")
        .arg(&paths.name)
        .args(crate::sandbox::flags_of(policy))
        .env_remove("FUGUE_SERVER")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| Error::new(ErrorKind::SpawnFailed, format!("cannot start the server: {e}")))?;
    let Some(mut ready) = child.stdout.take() else {
        return Err(Error::internal("the server's ready pipe is missing"));
    };
    // The first process forks and exits at once; the server is its grandchild.
    let _ = child.wait();
    let answer = read_ready(&mut ready);
    match answer.trim() {
        "ok" => Ok(()),
        "" => Err(Error::new(
            ErrorKind::SpawnFailed,
            format!(
                "the fugue server {:?} ended before it was ready; its log is {}",
                paths.name,
                super::log_path(config.state_dir.as_deref(), &paths.name)
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            ),
        )),
        other => Err(Error::new(
            ErrorKind::SpawnFailed,
            format!(
                "cannot start fugue server {:?}: {}",
                paths.name,
                other.trim_start_matches("error: ")
            ),
        )),
    }
}

/// The ready line, or nothing if the pipe closes or stays silent past `READY_TIMEOUT`.
fn read_ready(ready: &mut std::process::ChildStdout) -> String {
    let mut pfd = libc::pollfd { fd: ready.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ms = libc::c_int::try_from(READY_TIMEOUT.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: poll on one pollfd that lives across the call.
    if unsafe { libc::poll(&raw mut pfd, 1, ms) } <= 0 {
        return String::new();
    }
    let mut text = String::new();
    let _ = ready.take(4096).read_to_string(&mut text);
    text.lines().next().unwrap_or("").to_string()
}

/// Just enough of a JSON-RPC message to know whether it opens or closes a request.
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<PeekParams>,
}

#[derive(Deserialize)]
struct PeekParams {
    #[serde(default, rename = "requestId")]
    request_id: Option<Value>,
}

fn peek(line: &[u8]) -> Option<Peek> {
    serde_json::from_slice(line).ok()
}

/// Copies stdin to the server and the server to stdout until one of them ends.
fn pipe(link: Greeted, limits: LineLimits) -> ExitCode {
    let pending: Arc<Mutex<HashSet<String>>> = Arc::default();
    let to_server = link.stream;
    let from_server = link.input;
    let answers = pending.clone();
    let started = crate::threads::spawn(
        "front-out",
        None,
        Box::new(move || relay_answers(from_server, &answers, limits.max_answer)),
    );
    if let Err(e) = started {
        crate::log::error(&format!("cannot start the front's reader: {e}"));
        return ExitCode::FAILURE;
    }
    relay_requests(&to_server, &pending, limits.max_line);
    // The client is done: as in-process, its calls end with it (the server sees the connection
    // close and cancels them). Exiting now also keeps the reader from taking this for the
    // server's end.
    std::process::exit(0)
}

/// The client's lines, each capped at `FUGUE_MAX_LINE_BYTES` as the server caps them: an over-long
/// one is skipped without being stored and answered here, as the server would answer it.
fn relay_requests(mut server: &UnixStream, pending: &Mutex<HashSet<String>>, max_line: usize) {
    let mut stdin = std::io::stdin().lock();
    loop {
        match line::next_line(&mut stdin, max_line) {
            Next::End => return,
            Next::TooLong(n) => refuse_too_long(n, max_line),
            Next::Line(mut line) => {
                note_request(&line, pending);
                line.push(b'\n');
                if server.write_all(&line).is_err() {
                    return;
                }
            }
        }
    }
}

/// Answers a client line over `FUGUE_MAX_LINE_BYTES` (its id is unknown: it was not stored).
fn refuse_too_long(n: u64, max_line: usize) {
    let answer = jsonrpc::error(&Value::Null, &crate::rpc::too_long(n, max_line));
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{answer}").and_then(|()| stdout.flush());
}

/// The longest line taken from the server: an answer carries at most `FUGUE_MAX_OUTPUT_BYTES` of
/// a pane's output, which JSON may escape to six times its size (`\u001b`), so eight times that,
/// and never less than 64 MiB. Anything longer is not fugue's answer, and ends the connection.
fn max_answer(max_output_bytes: usize) -> usize {
    max_output_bytes.saturating_mul(8).max(MIN_ANSWER)
}

/// Remembers a request's id until it is answered; forgets a cancelled one (nothing will answer).
fn note_request(line: &[u8], pending: &Mutex<HashSet<String>>) {
    let Some(message) = peek(line) else { return };
    match (message.id, message.method.as_deref().map(Method::parse)) {
        (Some(id), Some(_)) => {
            pending.lock().insert(id.to_string());
        }
        (None, Some(Method::Cancelled)) => {
            if let Some(id) = message.params.and_then(|p| p.request_id) {
                pending.lock().remove(&id.to_string());
            }
        }
        _ => {}
    }
}

fn relay_answers(mut server: BufReader<UnixStream>, pending: &Mutex<HashSet<String>>, max: usize) {
    let why = loop {
        let mut line = match line::read_line(&mut server, max) {
            Ok(Some(line)) => line,
            Ok(None) | Err(LineError::Io(_)) => {
                break "fugue server exited: it closed the connection (it ended or was killed)"
                    .to_string();
            }
            Err(LineError::TooLong) => break too_long_answer(max),
        };
        if let Some(Peek { id: Some(id), method: None, .. }) = peek(&line) {
            pending.lock().remove(&id.to_string());
        }
        line.push(b'\n');
        // Locked per line: the request loop answers over-long requests on stdout too.
        let mut stdout = std::io::stdout().lock();
        if stdout.write_all(&line).and_then(|()| stdout.flush()).is_err() {
            std::process::exit(0); // nobody reads us any more
        }
    };
    // The server is gone (or unusable): every open request gets an answer, then the client sees
    // us end.
    crate::log::error(&why);
    let mut stdout = std::io::stdout().lock();
    for id in pending.lock().drain() {
        let id: Value = serde_json::from_slice(id.as_bytes()).unwrap_or(Value::Null);
        let answer = jsonrpc::error(&id, &RpcError::new(SERVER_GONE, why.as_str()));
        let _ = writeln!(stdout, "{answer}");
    }
    let _ = stdout.flush();
    std::process::exit(1)
}

fn too_long_answer(max: usize) -> String {
    format!(
        "the fugue server sent a line over {max} bytes (8 x FUGUE_MAX_OUTPUT_BYTES, at least 64 \
         MiB), which no answer of fugue's is; the connection is closed"
    )
}

/// No server to talk to: every request is answered with why, until the client gives up.
fn answer_errors(message: &str, max_line: usize) -> ExitCode {
    let mut stdin = std::io::stdin().lock();
    loop {
        let answer = match line::next_line(&mut stdin, max_line) {
            Next::End => break,
            Next::TooLong(n) => jsonrpc::error(&Value::Null, &crate::rpc::too_long(n, max_line)),
            Next::Line(line) => match peek(&line) {
                Some(Peek { id: Some(id), method: Some(_), .. }) => {
                    jsonrpc::error(&id, &RpcError::new(SERVER_GONE, message))
                }
                _ => continue,
            },
        };
        let mut stdout = std::io::stdout().lock();
        if writeln!(stdout, "{answer}").and_then(|()| stdout.flush()).is_err() {
            break;
        }
    }
    ExitCode::FAILURE
}

/// `fugue call --shared NAME TOOL JSON`: one tool call through the server; the `tools/call`
/// result, or the JSON-RPC error's message.
pub(crate) fn call(
    name: &str,
    tool: &str,
    arguments: &Value,
    policy: &Policy,
    config: &Config,
) -> std::result::Result<Value, String> {
    let paths = Paths::new(name).map_err(|e| e.message().to_string())?;
    let link = open(&paths, policy, config).map_err(|e| e.message().to_string())?;
    let Greeted { stream, mut input, .. } = link;
    let messages = [
        jsonrpc::request(
            &json!(1),
            Method::Initialize.name(),
            json!({"protocolVersion": crate::mcp::LEGACY[0], "capabilities": {},
                   "clientInfo": {"name": "fugue call", "version": env!("CARGO_PKG_VERSION")}}),
        ),
        jsonrpc::notification("notifications/initialized", Value::Null),
        jsonrpc::request(
            &json!(2),
            Method::ToolsCall.name(),
            json!({"name": tool, "arguments": arguments}),
        ),
    ];
    for message in messages {
        writeln!(&stream, "{message}").map_err(|e| format!("lost the server: {e}"))?;
    }
    let max = max_answer(config.max_output_bytes);
    loop {
        let line = match line::read_line(&mut input, max) {
            Ok(Some(line)) => line,
            Ok(None) | Err(LineError::Io(_)) => {
                return Err("the fugue server closed the connection".into());
            }
            Err(LineError::TooLong) => return Err(too_long_answer(max)),
        };
        let Ok(message) = serde_json::from_slice::<Value>(&line) else { continue };
        if message["id"] != json!(2) {
            continue;
        }
        if let Some(result) = message.get("result") {
            return Ok(result.clone());
        }
        return Err(message["error"]["message"].as_str().unwrap_or("unknown error").to_string());
    }
}
