//! The shared server itself: one registry of panes, one MCP session per connected front.
//!
//! One thread accepts on `NAME.sock`. Every connection from our own uid is counted at once (so the
//! server never ends while one is being set up) and gets a thread that exchanges hellos and then,
//! for a front, runs the ordinary JSON-RPC loop (`rpc::Connection`) over the socket with an `Mcp` of
//! its own on the shared `Mux`, working in the directory the front's hello names: both MCP eras,
//! progress and cancellation work as over stdio, paths are the front's, and ids never cross
//! between fronts. A front that goes away — however it goes — is an end of input:
//! its calls in flight are cancelled, and nothing else changes. A janitor ends the server once it
//! holds no session, no front and no running agent pipeline (tmux's exit-empty); a signal or a
//! `kill` hello ends it at once. Ending is one ordered path: stop taking fronts, remove the socket,
//! cancel every call, stop the pipelines, end every pane.

use super::{Census, FileLock, Hello, Paths, Role};
use crate::ids::unix_ms;
use crate::line;
use crate::mcp::Mcp;
use crate::mux::ORCHESTRATION_SESSION;
use crate::rpc::{Bounds, Connection, StopCause, Writer};
use crate::runtime::Runtime;
use crate::waiter::{Drove, Look, Waiter};
use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::Shutdown;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Connections served at once; one more is closed before the hello.
pub(crate) const MAX_FRONTS: usize = 128;
/// How long the server must stay empty before it ends: a host restarting its MCP servers
/// reconnects well within it.
const EXIT_GRACE: Duration = Duration::from_secs(1);
/// How long a write to a front may block before the front is dropped: a front that stops reading
/// must not hold worker threads for ever.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Stack of the connection threads (the calls themselves run on the rpc workers).
const CONN_STACK: usize = 512 << 10;

/// Why the server ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Signal,
    Kill,
    Empty,
}

/// One connection, from its accept to its end.
struct Front {
    pid: u32,
    since: SystemTime,
    /// Set once the hello says this is an MCP front.
    connection: Option<(Arc<Mcp>, Arc<Connection>)>,
    stream: Option<UnixStream>,
}

#[derive(Default)]
struct Fronts {
    next: u64,
    live: HashMap<u64, Front>,
    /// Set when the server has decided to end: no connection is taken after it.
    closing: bool,
}

pub(crate) struct Host {
    paths: Paths,
    runtime: Arc<Runtime>,
    started: SystemTime,
    fronts: Mutex<Fronts>,
    /// Wakes the janitor when a front comes or goes.
    wake: Sender<()>,
    end: Sender<End>,
}

impl Host {
    /// What `fugue ls` shows of this shared server.
    fn info(&self) -> Value {
        let fronts = self.fronts.lock();
        let mut list: Vec<Value> = fronts
        .live
        .values()
        .filter_map(|f| {
            let (mcp, _) = f.connection.as_ref()?;
            let client = mcp.client().map(|c| json!({"name": c.name, "version": c.version}));
            Some(json!({"pid": f.pid, "since": unix_ms(f.since), "client": client, "cwd": mcp.cwd}))
        })
        .collect();
        crate::sort::sort_by_key(&mut list, |f| f["since"].as_u64());
        json!({"name": self.paths.name, "proto": super::proto(), "fronts": list})
    }
}

/// Runs the server, under the sandbox `policy` it was started with, until it ends; never returns
/// to the caller's caller in practice.
pub(crate) fn run(
    paths: Paths,
    listener: UnixListener,
    (pid_lock, sandbox): (FileLock, Arc<crate::sandbox::Policy>),
    mut ready: std::fs::File,
) -> ExitCode {
    let (end_tx, end_rx) = crossbeam_channel::bounded::<End>(8);
    let on_signal = end_tx.clone();
    if let Err(e) = ctrlc::set_handler(move || {
        let _ = on_signal.try_send(End::Signal);
    }) {
        crate::log::warn(&format!("cannot install the signal handler: {e}"));
    }
    let runtime = Arc::new(Runtime::start(true, sandbox));
    let (wake_tx, wake_rx) = crossbeam_channel::bounded(1);
    let host = Arc::new(Host {
        paths,
        runtime,
        started: SystemTime::now(),
        fronts: Mutex::new(Fronts::default()),
        wake: wake_tx,
        end: end_tx,
    });
    // The control socket makes no tool calls; its `cwd` (in `fugue ls`) is the server's own.
    let mcp = Arc::new(Mcp::new(host.runtime.clone(), "/".into()));
    let about = host.clone();
    let control = crate::control::socket::start(mcp, Box::new(move || Some(about.info())))
        .map_err(|e| crate::log::warn(&format!("no control socket: {e}")))
        .ok();
    let accepting = host.clone();
    let janitor = host.clone();
    let started = crate::threads::spawn(
        "shared-accept",
        None,
        Box::new(move || accepting.accept_loop(&listener)),
    )
    .and_then(|()| {
        crate::threads::spawn("shared-janitor", None, Box::new(move || janitor.janitor(&wake_rx)))
    });
    if let Err(e) = started {
        let _ = writeln!(ready, "error: cannot start a thread: {e}");
        return ExitCode::FAILURE;
    }
    let _ = writeln!(ready, "ok");
    drop(ready);
    let why = end_rx.recv().unwrap_or(End::Signal);
    crate::log::warn(&format!("server {:?} ending: {why:?}", host.paths.name));
    host.shutdown(control);
    drop(pid_lock);
    std::process::exit(0)
}

impl Host {
    fn accept_loop(self: &Arc<Host>, listener: &UnixListener) {
        for stream in listener.incoming() {
            match stream {
                Ok(stream) => self.admit(stream),
                Err(e) => {
                    crate::log::info(&format!("shared socket: accept failed: {e}"));
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    /// Counts a connection from our own uid and gives it a thread.
    fn admit(self: &Arc<Host>, stream: UnixStream) {
        let Some(cred) = crate::control::socket::peer_cred(&stream) else { return };
        if cred.uid != crate::procfs::euid() {
            crate::log::warn("shared socket: refused a connection from another user");
            return;
        }
        if self.runtime.refuses_peer(cred.pid) {
            crate::log::warn("shared socket: refused a connection from a sandboxed pane");
            return;
        }
        let id = {
            let mut fronts = self.fronts.lock();
            // Turned away, the front sees the connection close before a hello: an ending server
            // makes it start a new one, a full one makes it give up with a clear error.
            if fronts.closing || fronts.live.len() >= MAX_FRONTS {
                return;
            }
            fronts.next += 1;
            let id = fronts.next;
            let front = Front {
                pid: u32::try_from(cred.pid).unwrap_or(0),
                since: SystemTime::now(),
                connection: None,
                stream: stream.try_clone().ok(),
            };
            fronts.live.insert(id, front);
            id
        };
        let host = self.clone();
        let started = crate::threads::spawn(
            "shared-front",
            Some(CONN_STACK),
            Box::new(move || {
                host.connection(stream, id);
                host.forget(id);
            }),
        );
        if let Err(e) = started {
            crate::log::warn(&format!("shared socket: cannot start a thread: {e}"));
            self.forget(id);
        }
    }

    fn forget(&self, id: u64) {
        self.fronts.lock().live.remove(&id);
        let _ = self.wake.try_send(());
    }

    /// Hellos, then the MCP session of a front until it goes away.
    fn connection(&self, stream: UnixStream, id: u64) {
        let Ok(read_half) = stream.try_clone() else { return };
        let mut input = BufReader::new(read_half);
        let _ = stream.set_read_timeout(Some(super::HELLO_TIMEOUT));
        let Ok(Some(line)) = line::read_line(&mut input, super::MAX_HELLO) else { return };
        let Some(theirs) = Hello::parse(&line) else { return };
        let _ = stream.set_read_timeout(None);
        let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
        let role = theirs.role.unwrap_or(Role::Probe);
        let mut ours = Hello::new(None, Some(self.census()));
        ours.sandbox = crate::sandbox::policy_line(&self.runtime.sandbox);
        if (&stream).write_all(&ours.line()).is_err() {
            return;
        }
        match role {
            Role::Probe => {}
            Role::Kill => {
                let _ = self.end.try_send(End::Kill);
            }
            Role::Front if theirs.proto != super::proto() => {}
            Role::Front => self.run_front(&stream, input, id, front_cwd(theirs.cwd)),
        }
    }

    /// One front's MCP session: its calls work in its directory `cwd`, as in-process.
    fn run_front(&self, stream: &UnixStream, input: BufReader<UnixStream>, id: u64, cwd: PathBuf) {
        let Ok(out) = stream.try_clone() else { return };
        let mcp = Arc::new(Mcp::new(self.runtime.clone(), cwd));
        // Nobody listens for the writer's stop: a failed write shuts the socket down instead,
        // which ends the read loop below.
        let (stop, _) = crossbeam_channel::bounded::<StopCause>(1);
        let writer = Arc::new(Writer::new(Box::new(SocketOut(out)), stop.clone()));
        let connection = Connection::new(mcp.clone(), writer, Bounds::of(&self.runtime.config));
        if let Some(front) = self.fronts.lock().live.get_mut(&id) {
            front.connection = Some((mcp, connection.clone()));
        }
        connection.read_loop(input, stop);
        connection.cancel_all();
        let _ = stream.shutdown(Shutdown::Both);
    }

    fn census(&self) -> Census {
        let (sessions, panes) = self.runtime.mux.with_sessions(|sessions, _| {
            let panes = sessions.iter().flat_map(|s| &s.windows).map(|w| w.panes.len()).sum();
            (held(sessions), panes)
        });
        let fronts = self.fronts.lock().live.values().filter(|f| f.connection.is_some()).count();
        Census {
            name: self.paths.name.clone(),
            sessions,
            panes,
            fronts,
            started_at: unix_ms(self.started),
        }
    }

    /// Ends the server once it has stayed empty for `EXIT_GRACE`: no session, no connection, no
    /// agent pipeline running. Any change restarts the wait.
    fn janitor(&self, wake: &Receiver<()>) {
        let mut waiter = Waiter::new()
            .on(wake.clone())
            .on(self.runtime.mux.subscribe())
            .on(self.runtime.agents.subscribe());
        // Since when the server has been empty, at the last look.
        let look = |empty_since: &mut Option<Instant>| {
            let now = Instant::now();
            let grace_over = empty_since.is_some_and(|since| now >= since + EXIT_GRACE);
            if grace_over && self.close_if_empty() {
                return Look::Done(());
            }
            // Any change restarts the wait: this look follows a wake, or the grace found work.
            *empty_since = self.is_empty().then_some(now);
            Look::Again(empty_since.map(|since| since + EXIT_GRACE))
        };
        if let Drove::Done(()) = waiter.drive(&mut None, look) {
            let _ = self.end.try_send(End::Empty);
        }
    }

    fn is_empty(&self) -> bool {
        self.fronts.lock().live.is_empty()
            && self.census().sessions == 0
            && !self.pipelines_running()
    }

    /// Whether an agent pipeline driven here is running: the server does not end under it.
    fn pipelines_running(&self) -> bool {
        self.runtime.agents.all().iter().any(|h| {
            h.is_driven_here()
                && h.snapshot().status == crate::agent::record::PipelineStatus::Running
        })
    }

    /// Decides to end, under the fronts lock so no connection slips in between. The socket goes
    /// at once: a front arriving now finds no server and starts the next one (which waits for
    /// this one's pid lock) instead of being turned away.
    fn close_if_empty(&self) -> bool {
        let mut fronts = self.fronts.lock();
        let sessions = self.runtime.mux.with_sessions(|sessions, _| held(sessions));
        if fronts.live.is_empty() && sessions == 0 && !self.pipelines_running() {
            fronts.closing = true;
            let _ = std::fs::remove_file(&self.paths.sock);
            return true;
        }
        false
    }

    /// The one way the server ends, in order.
    fn shutdown(&self, control: Option<crate::control::socket::ControlSocket>) {
        let fronts: Vec<Front> = {
            let mut fronts = self.fronts.lock();
            if !fronts.closing {
                fronts.closing = true;
                let _ = std::fs::remove_file(&self.paths.sock);
            }
            fronts.live.drain().map(|(_, f)| f).collect()
        };
        for front in fronts {
            if let Some((_, connection)) = &front.connection {
                connection.cancel_all();
            }
            if let Some(stream) = &front.stream {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
        // Gone from `fugue ls` at once; then the runtime's own ordered stop.
        drop(control);
        self.runtime.shutdown();
    }
}

/// The directory a front's calls work in: the one its hello names; the server's own (`/`) when
/// it names none (it could not read its own, or not as text) or names a relative one.
fn front_cwd(named: Option<String>) -> PathBuf {
    match named.map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        _ => PathBuf::from("/"),
    }
}

/// The sessions that keep a server alive. The orchestration session outlives its last run's
/// window; empty, it holds nothing, so a server whose fronts only ran commands still ends.
fn held(sessions: &[crate::mux::Session]) -> usize {
    sessions.iter().filter(|s| !(s.name == ORCHESTRATION_SESSION && s.windows.is_empty())).count()
}

/// The socket as the rpc writer's output: a failed or timed-out write ends the connection.
struct SocketOut(UnixStream);

impl Write for SocketOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).inspect_err(|_| {
            let _ = self.0.shutdown(Shutdown::Both);
        })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
