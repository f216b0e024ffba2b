//! Shared servers: one long-lived fugue per user and NAME that many MCP fronts use at once.
//!
//! `fugue serve --shared NAME` (or `FUGUE_SERVER=NAME`) is a front (`front`): a line pipe between
//! its stdin/stdout and the server's Unix socket, starting the server when none answers. The
//! server (`host`, started detached by `daemon`) owns the panes, sessions and agent pipelines, and
//! runs one MCP session per connection, so fronts come and go without taking anything with them.
//! This file holds what both sides agree on: the names and paths, the first exchange on every
//! connection (`Hello`, with versions and the wire protocol), and the lock files. `cli` has
//! `kill-server` and what `fugue ls` shows of shared servers.

pub(crate) mod cli;
pub(crate) mod daemon;
pub(crate) mod front;
pub(crate) mod host;

use crate::control::dir;
use crate::error::{Error, ErrorKind, Result};
use crate::files::{Existing, private_dir};
use crate::words::words;
// The lock and the error of a path live in `files`, shared with agent pipelines' state; named here
// too because every file of this module uses them.
pub(crate) use crate::files::{FileLock, io_error};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// The wire protocol spoken after the hello. Bump it on any change a peer of the other version
/// would misread; the hello itself (`Hello`) never changes shape.
/// 2: a front's hello names its directory, the base of its calls' paths (a server of 1 would
/// ignore it and start the front's panes in another front's directory).
pub(crate) const PROTO: u32 = 2;
/// The longest hello line either side reads: room for a front's directory of `PATH_MAX` (4096)
/// bytes even if every byte were escaped (`\u00XX`).
pub(crate) const MAX_HELLO: usize = 32 << 10;
/// How long a peer may take to say hello before it counts as unresponsive.
pub(crate) const HELLO_TIMEOUT: Duration = Duration::from_secs(3);

/// The wire protocol this binary speaks; `FUGUE_CLAIM_PROTO` (tests only) makes it claim another.
pub(crate) fn proto() -> u32 {
    std::env::var("FUGUE_CLAIM_PROTO").ok().and_then(|p| p.parse().ok()).unwrap_or(PROTO)
}

/// This binary's version; `FUGUE_CLAIM_VERSION` (tests only) makes it claim another.
pub(crate) fn version() -> String {
    std::env::var("FUGUE_CLAIM_VERSION")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_string())
}

words! {
    /// Why a peer connects.
    pub(crate) enum Role {
        /// An MCP session follows.
        Front = "front",
        /// Only the hello, for `fugue ls`.
        Probe = "probe",
        /// End the server and everything it started (`fugue kill-server`).
        Kill = "kill",
    }
}

/// The first line each side sends on every connection. Its shape is fixed for all versions, so
/// any two fugues can at least tell each other apart and a newer one can end an older server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Hello {
    /// Always "hello".
    pub(crate) fugue: String,
    pub(crate) proto: u32,
    pub(crate) version: String,
    pub(crate) pid: u32,
    /// Sent by the connecting side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) role: Option<Role>,
    /// Sent by a front: the directory it was started in, where its calls' panes start and from
    /// which their relative paths are taken, as in-process. Absent when it is not UTF-8 text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cwd: Option<String>,
    /// Sent by the server: what it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) state: Option<Census>,
    /// Sent by both sides: the sandbox policy in one line; absent when it is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sandbox: Option<String>,
}

/// What a server holds, as its hello tells it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Census {
    pub(crate) name: String,
    pub(crate) sessions: usize,
    pub(crate) panes: usize,
    pub(crate) fronts: usize,
    pub(crate) started_at: u64,
}

impl Hello {
    pub(crate) fn new(role: Option<Role>, state: Option<Census>) -> Hello {
        Hello {
            fugue: "hello".into(),
            proto: proto(),
            version: version(),
            pid: std::process::id(),
            role,
            cwd: None,
            state,
            sandbox: None,
        }
    }

    pub(crate) fn line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).unwrap_or_default();
        line.push(b'\n');
        line
    }

    pub(crate) fn parse(line: &[u8]) -> Option<Hello> {
        serde_json::from_slice::<Hello>(line).ok().filter(|h| h.fugue == "hello")
    }
}

/// A server name: what `--shared`, `FUGUE_SERVER` and `kill-server` take.
pub(crate) fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "server name {name:?} must be 1 to 64 letters, digits, '_' or '-'"
        )))
    }
}

/// The files of one shared server.
pub(crate) struct Paths {
    pub(crate) name: String,
    /// Where fronts connect.
    pub(crate) sock: PathBuf,
    /// Held by whoever is starting the server, so racing fronts start one.
    pub(crate) lock: PathBuf,
    /// Held by the server for its whole life; holds its pid.
    pub(crate) pid: PathBuf,
}

impl Paths {
    /// The paths for `name` in the private runtime directory, created if needed.
    pub(crate) fn new(name: &str) -> Result<Paths> {
        check_name(name)?;
        let base = shared_dir()?;
        Ok(Paths {
            name: name.to_string(),
            sock: base.join(format!("{name}.sock")),
            lock: base.join(format!("{name}.lock")),
            pid: base.join(format!("{name}.pid")),
        })
    }

    /// The server's pid, as its pid file says.
    pub(crate) fn read_pid(&self) -> Option<u32> {
        std::fs::read_to_string(&self.pid).ok()?.trim().parse().ok()
    }
}

/// `DIR/shared`, inside the private control directory and as private.
pub(crate) fn shared_dir() -> Result<PathBuf> {
    let dir = dir::create()?.join("shared");
    private_dir(&dir, Existing::Keep)?;
    dir::check(&dir, crate::procfs::euid())?;
    Ok(dir)
}

/// The names of the shared servers with files in the directory.
pub(crate) fn names() -> Vec<String> {
    let Ok(dir) = dir::existing().map(|d| d.join("shared")) else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let name = name.strip_suffix(".pid").or_else(|| name.strip_suffix(".sock"))?;
            check_name(name).ok().map(|()| name.to_string())
        })
        .collect();
    crate::sort::sort(&mut names);
    names.dedup();
    names
}

/// The log file of server `name`: `server/NAME.log` under `state_dir` (`FUGUE_STATE_DIR`, read at
/// start), or under `$XDG_STATE_HOME/fugue` (`~/.local/state/fugue`). Its directory is created
/// private.
pub(crate) fn log_path(state_dir: Option<&std::path::Path>, name: &str) -> Result<PathBuf> {
    let base = match state_dir {
        Some(dir) => dir.to_path_buf(),
        None => match std::env::var_os("XDG_STATE_HOME").map(PathBuf::from) {
            Some(dir) if dir.is_absolute() => dir.join("fugue"),
            _ => {
                let home = std::env::var_os("HOME").map(PathBuf::from).ok_or_else(|| {
                    Error::new(ErrorKind::InvalidState, "neither XDG_STATE_HOME nor HOME is set")
                })?;
                home.join(".local/state/fugue")
            }
        },
    };
    let dir = base.join("server");
    std::fs::create_dir_all(&base).map_err(|e| io_error(&base, &e))?;
    private_dir(&dir, Existing::Keep)?;
    Ok(dir.join(format!("{name}.log")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for good in ["default", "a", "build-2", "x_Y", &"n".repeat(64)] {
            check_name(good).unwrap();
        }
        for bad in ["", "a/b", "..", "a b", "é", &"n".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    /// The hello is the one thing every version must read: its text is fixed here.
    #[test]
    fn the_hello_keeps_its_shape() {
        let mut hello = Hello::new(Some(Role::Front), None);
        hello.version = "0.1.0".into();
        hello.pid = 7;
        hello.proto = 1;
        assert_eq!(
            String::from_utf8(hello.line()).unwrap(),
            "{\"fugue\":\"hello\",\"proto\":1,\"version\":\"0.1.0\",\"pid\":7,\"role\":\"front\"}\n"
        );
        // Since wire protocol 2 a front names its directory; the fields before it are unchanged.
        hello.proto = 2;
        hello.cwd = Some("/home/u/repo".into());
        assert_eq!(
            String::from_utf8(hello.line()).unwrap(),
            "{\"fugue\":\"hello\",\"proto\":2,\"version\":\"0.1.0\",\"pid\":7,\"role\":\"front\",\"cwd\":\"/home/u/repo\"}\n"
        );
        let front = Hello::parse(&hello.line()).unwrap();
        assert_eq!(front.cwd.as_deref(), Some("/home/u/repo"));
        let server = br#"{"fugue":"hello","proto":9,"version":"9.0","pid":3,"state":{"name":"d","sessions":1,"panes":2,"fronts":0,"started_at":5},"later":true}"#;
        let hello = Hello::parse(server).unwrap();
        assert_eq!(hello.proto, 9);
        assert_eq!(hello.state.unwrap().panes, 2);
        assert!(Hello::parse(br#"{"jsonrpc":"2.0"}"#).is_none());
    }

    /// The longest directory a front can be in (`PATH_MAX`), every byte escaped, still fits.
    #[test]
    fn a_front_in_the_longest_directory_fits_in_a_hello() {
        let mut hello = Hello::new(Some(Role::Front), None);
        hello.version = "x".repeat(100);
        hello.cwd = Some("\u{1}".repeat(4096));
        assert!(hello.line().len() <= MAX_HELLO, "{}", hello.line().len());
    }
}
