//! `fugue attach`: watch one window of a running fugue, live, from a terminal.
//!
//! It finds the server through its control socket (the newest one, or `--server PID`, or the one
//! that has the named session), takes the terminal (`term`), and runs one loop that waits on four
//! things at once: keys from the terminal, lines from the server, signals, and the app's next
//! deadline. Each wakes the app (`app`), and a changed app is drawn (`draw`). It ends on detach, on
//! a signal, or when the server goes away; in every case the terminal is restored before the last
//! message is printed. `fugue ls` (`ls`) shares the discovery.

mod app;
mod draw;
mod focus;
mod keys;
pub(crate) mod ls;
mod scroll;
mod term;
mod width;

use crate::control::dir;
use crate::control::view::WindowRef;
use crate::control::wire::{Client, Incoming};
use crate::usage::{print_out, usage_error};
use app::{App, Leave};
use crossbeam_channel::{Receiver, select};
use serde_json::{Value, json};
use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

/// How long a server may take to answer the first questions.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// `AttachArgs` with a shared server's name resolved to its pid.
struct Resolved {
    server: Option<u32>,
    input: bool,
    spec: Option<String>,
}

/// `fugue attach`'s options, as `cli` reads them.
pub(crate) struct AttachArgs {
    /// `--server PID|NAME`.
    pub(crate) server: Option<Server>,
    /// `--input`.
    pub(crate) input: bool,
    /// `SESSION[:WINDOW]` or `HOST:SESSION[:WINDOW]`.
    pub(crate) spec: Option<String>,
}

/// The server `--server` names: a pid, or a shared server's name.
pub(crate) enum Server {
    Pid(u32),
    Name(String),
}

/// The options with a shared server's name resolved to its pid.
fn resolve_server(args: AttachArgs) -> Result<Resolved, String> {
    let server = match args.server {
        None => None,
        Some(Server::Pid(pid)) => Some(pid),
        Some(Server::Name(name)) => Some(crate::server::cli::pid_of(&name)?),
    };
    Ok(Resolved { server, input: args.input, spec: args.spec })
}

pub(crate) const USAGE: &str = "\
Usage: fugue attach [--server PID] [--input] [SESSION[:WINDOW]]
       fugue attach [--input] HOST:SESSION[:WINDOW]

Watches one window of a running fugue live in this terminal: the newest server (or --server PID,
or the newest that has SESSION), the named window or the first. Read-only unless --input, which
sends what is typed to the focused pane. C-b d detaches; C-b ? lists the keys. HOST:SESSION (when
no fugue here has a session HOST) watches a session on that host, over ssh.
";

pub(crate) fn run(args: AttachArgs) -> ExitCode {
    let options = match resolve_server(args) {
        Ok(options) => options,
        Err(e) => return usage_error(&e),
    };
    if let Some((host, spec)) = remote_spec(&options) {
        return crate::remote::cli::attach(host, spec, options.input);
    }
    let (client, info, target) = match connect(&options) {
        Ok(found) => found,
        Err(e) => return fail(&e),
    };
    let signals = [libc::SIGWINCH, libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];
    let started = term::signals(&signals).and_then(|signals| {
        let (sender, incoming) = client.split()?;
        Ok((signals, sender, incoming))
    });
    let (signals, sender, incoming) = match started {
        Ok(started) => started,
        Err(e) => return fail(&format!("cannot start: {e}")),
    };
    let terminal = match term::RawMode::enter() {
        Ok(terminal) => terminal,
        Err(e) => return fail(&e.to_string()),
    };
    let keys = read_keys();
    let size = term::size().unwrap_or((24, 80));
    let mut app = App::new(Box::new(sender), &info, (options.input, target), size);
    let leave = run_loop(&mut app, &keys, &incoming, &signals);
    drop(terminal);
    goodbye(&app, leave)
}

/// `HOST:SPEC` when it names a host: no server is given and no fugue here has a session `HOST`.
fn remote_spec(options: &Resolved) -> Option<(&str, &str)> {
    let (host, spec) = options.spec.as_deref()?.split_once(':')?;
    let here = Resolved { server: None, input: false, spec: Some(host.to_string()) };
    (options.server.is_none() && connect(&here).is_err()).then_some((host, spec))
}

fn run_loop(
    app: &mut App,
    keys: &Receiver<Vec<u8>>,
    incoming: &Receiver<Incoming>,
    signals: &Receiver<libc::c_int>,
) -> Leave {
    let mut painter = draw::Painter::default();
    loop {
        app.tick();
        if let Some(leave) = app.leave {
            return leave;
        }
        if app.dirty {
            app.dirty = false;
            let (rows, cursor) = draw::frame(app);
            if term::write_out(&painter.paint(rows, cursor, app.size)).is_err() {
                return Leave::Signal(libc::SIGHUP); // the terminal is gone
            }
        }
        let timer = app.deadline().map_or_else(crossbeam_channel::never, crossbeam_channel::at);
        select! {
            recv(keys) -> bytes => match bytes {
                Ok(bytes) => app.keys(&bytes),
                Err(_) => return Leave::Detached, // end of input: nobody is typing any more
            },
            recv(incoming) -> message => match message {
                Ok(message) => app.incoming(message),
                Err(_) => return Leave::ServerGone,
            },
            recv(signals) -> signal => {
                if let Ok(signal) = signal {
                    app.signal(signal, term::size());
                }
            },
            recv(timer) -> _ => {},
        }
    }
}

/// Reads the terminal on a thread of its own; the channel disconnects at end of input.
fn read_keys() -> Receiver<Vec<u8>> {
    let (tx, rx) = crossbeam_channel::bounded(64);
    let spawned = crate::threads::spawn(
        "keys",
        None,
        Box::new(move || {
            let mut buf = [0u8; 4096];
            let mut stdin = std::io::stdin();
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            return;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => return,
                }
            }
        }),
    );
    if spawned.is_err() {
        crate::log::error("cannot start the key reader; attach stops");
    }
    rx
}

/// The server to attach to, its info, and the window to show.
fn connect(options: &Resolved) -> Result<(Client, Value, WindowRef), String> {
    let dir = dir::existing().map_err(|e| e.to_string())?;
    let pids: Vec<u32> = match options.server {
        Some(pid) => vec![pid],
        None => dir::sockets(&dir)
            .into_iter()
            .map(|(pid, _)| pid)
            .filter(|p| crate::procfs::alive(*p))
            .collect(),
    };
    let mut servers: Vec<(Client, Value)> = pids
        .into_iter()
        .filter_map(|pid| {
            let mut client =
                Client::connect(&dir::socket(&dir, pid), Some(CONNECT_TIMEOUT)).ok()?;
            let info = client.call("hello", json!({"input": options.input})).ok()?;
            Some((client, info))
        })
        .collect();
    if servers.is_empty() {
        return Err(match options.server {
            Some(pid) => format!("no fugue server with pid {pid} is running; fugue ls lists them"),
            None => "no fugue server is running".to_string(),
        });
    }
    // The newest server first: it is most likely the agent the person just started.
    crate::sort::sort_by_key(&mut servers, |(_, info)| {
        std::cmp::Reverse(info["started_at"].as_u64().unwrap_or(0))
    });
    let Some(spec) = &options.spec else {
        let (client, info) = servers.remove(0);
        return Ok((client, info, WindowRef::default()));
    };
    for (mut client, info) in servers {
        let tree = client.call("tree", json!({})).map_err(|e| e.to_string())?;
        if let Some(target) = resolve(spec, &tree) {
            return Ok((client, info, target));
        }
    }
    Err(format!("no session or window {spec:?} (SESSION or SESSION:WINDOW); fugue ls lists them"))
}

/// `SESSION` or `SESSION:WINDOW`, by name or id, against a server's tree. The whole text is tried
/// as a session first, since a session's name may hold a colon.
fn resolve(spec: &str, tree: &Value) -> Option<WindowRef> {
    let sessions = tree["sessions"].as_array()?;
    let find = |list: &[Value], key: &str| {
        let by_id = list.iter().find(|v| v["id"] == key);
        by_id.or_else(|| list.iter().find(|v| v["name"] == key)).cloned()
    };
    let id = |v: &Value| v["id"].as_str().map(str::to_string);
    if let Some(session) = find(sessions, spec) {
        return Some(WindowRef { session: id(&session), window: None });
    }
    let (session, window) = spec.rsplit_once(':')?;
    let session = find(sessions, session)?;
    let window = find(session["windows"].as_array()?, window)?;
    Some(WindowRef { session: id(&session), window: id(&window) })
}

fn goodbye(app: &App, leave: Leave) -> ExitCode {
    let (message, code) = match leave {
        Leave::Detached => (format!("[detached from fugue {}, {}]", app.pid, app.place()), 0),
        Leave::ServerGone => (format!("[fugue {} has exited; nothing left to watch]", app.pid), 1),
        Leave::Signal(signal) => (
            format!("[fugue attach ended by {}]", crate::pane::exit::signal_name(signal)),
            128 + signal,
        ),
    };
    print_out(&format!("{message}\n"));
    ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(u8::MAX))
}

pub(crate) fn fail(message: &str) -> ExitCode {
    eprintln!("fugue: {message}");
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_resolve_by_name_or_id_and_colons_in_names_work() {
        let tree = json!({"sessions": [
            {"id": "s1", "name": "build", "windows": [{"id": "w1", "name": "0"}, {"id": "w2", "name": "logs"}]},
            {"id": "s2", "name": "a:b", "windows": [{"id": "w3", "name": "0"}]},
        ]});
        let target = |s: &str, w: Option<&str>| WindowRef {
            session: Some(s.to_string()),
            window: w.map(str::to_string),
        };
        assert_eq!(resolve("build", &tree), Some(target("s1", None)));
        assert_eq!(resolve("build:logs", &tree), Some(target("s1", Some("w2"))));
        assert_eq!(resolve("s1:w1", &tree), Some(target("s1", Some("w1"))));
        assert_eq!(resolve("a:b", &tree), Some(target("s2", None)));
        assert_eq!(resolve("a:b:0", &tree), Some(target("s2", Some("w3"))));
        assert_eq!(resolve("build:nope", &tree), None);
        assert_eq!(resolve("nope", &tree), None);
    }
}
