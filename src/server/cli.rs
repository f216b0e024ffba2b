//! The commands around shared servers: `fugue kill-server [NAME]`, what `fugue ls` says of each
//! name, and `fugue attach --server NAME`.
//!
//! A name's state comes from its files: live (it says hello), unresponsive (it accepts but stays
//! silent; never touched), busy (it closes before its hello: ending, or full), incompatible
//! (another wire protocol), or stale (a socket or pid file left by a server that died). Stale files are removed only under the start lock and only when
//! nobody holds the pid lock, so a starting or ending server is never mistaken for a dead one.

use super::front::end_server;
use super::{FileLock, Hello, Paths, Role};
use crate::usage::usage_error;
use serde_json::{Value, json};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

pub(crate) const USAGE: &str = "\
Usage: fugue kill-server [NAME]

Ends shared server NAME (default: default) and every process it started, as stopping fugue does,
and waits until they are gone. Exits 1 when no server of that name is running.
";

/// `fugue kill-server [NAME]`.
pub(crate) fn kill_server(name: &str) -> ExitCode {
    let paths = match Paths::new(name) {
        Ok(paths) => paths,
        Err(e) => return usage_error(e.message()),
    };
    if let Some("stale" | "none") = status(&paths)["state"].as_str() {
        let _ = writeln!(std::io::stderr(), "fugue: no server named {name:?} is running");
        return ExitCode::FAILURE;
    }
    match end_server(&paths) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "fugue: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What is known of server `paths.name`: `state` (live, unresponsive, incompatible, stale,
/// none), and for a live one its hello. Removes a stale socket on the way.
pub(crate) fn status(paths: &Paths) -> Value {
    let hello = probe(paths);
    let mut out = json!({"name": paths.name, "pid": paths.read_pid()});
    match hello {
        Probed::Hello(hello) => {
            let state = if hello.proto == super::proto() { "live" } else { "incompatible" };
            out["state"] = json!(state);
            out["version"] = json!(hello.version);
            out["proto"] = json!(hello.proto);
            out["pid"] = json!(hello.pid);
            if let Some(s) = hello.state {
                out["fronts"] = json!(s.fronts);
                out["sessions"] = json!(s.sessions);
                out["panes"] = json!(s.panes);
            }
        }
        Probed::Silent => out["state"] = json!("unresponsive"),
        Probed::Closed => out["state"] = json!("busy"),
        Probed::Nobody => out["state"] = json!(if wipe(paths) { "stale" } else { "none" }),
    }
    out
}

/// What a probe of a shared server's socket found.
enum Probed {
    Nobody,
    /// Connected, no hello in time.
    Silent,
    /// Closed before its hello: the server is ending, or serves all the connections it can.
    Closed,
    Hello(Hello),
}

fn probe(paths: &Paths) -> Probed {
    let Ok(stream) = UnixStream::connect(&paths.sock) else { return Probed::Nobody };
    let _ = stream.set_read_timeout(Some(super::HELLO_TIMEOUT));
    if (&stream).write_all(&Hello::new(Some(Role::Probe), None).line()).is_err() {
        return Probed::Closed;
    }
    let mut input = std::io::BufReader::new(stream);
    match crate::line::read_line(&mut input, super::MAX_HELLO) {
        Ok(Some(line)) => Hello::parse(&line).map_or(Probed::Silent, Probed::Hello),
        Err(crate::line::LineError::Io(e))
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Probed::Silent
        }
        Ok(None) | Err(_) => Probed::Closed,
    }
}

/// Removes what a dead server left; true if there was something. Only under the start lock (a
/// front starting the server holds it: then nothing is touched) and only when no process holds the
/// pid lock.
fn wipe(paths: &Paths) -> bool {
    let Ok(Some(_starting)) = FileLock::try_take(&paths.lock) else { return false };
    let Ok(Some(_free)) = FileLock::try_take(&paths.pid) else { return false };
    let had = paths.sock.exists() || paths.read_pid().is_some();
    let _ = std::fs::remove_file(&paths.sock);
    let _ = std::fs::write(&paths.pid, "");
    had
}

/// The shared servers by name, for `fugue ls`.
pub(crate) fn list() -> Vec<Value> {
    super::names().iter().filter_map(|name| Paths::new(name).ok()).map(|p| status(&p)).collect()
}

/// The pid of live server `name`, for `fugue attach --server NAME`.
pub(crate) fn pid_of(name: &str) -> Result<u32, String> {
    let paths = Paths::new(name).map_err(|e| e.message().to_string())?;
    match probe(&paths) {
        Probed::Hello(hello) => Ok(hello.pid),
        Probed::Silent => Err(format!("fugue server {name:?} does not answer")),
        Probed::Closed => Err(format!("fugue server {name:?} is ending or full; try again")),
        Probed::Nobody => Err(format!("no fugue server named {name:?} is running")),
    }
}
