//! Logging to stderr, never stdout: stdout belongs to the protocol.
//!
//! `FUGUE_LOG` sets the level (`error`, `warn`, `info`, `debug`; default `warn`). Lines are short and
//! few, because a client that does not drain stderr would otherwise block the server.

use std::io::Write;
use std::sync::OnceLock;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| match std::env::var("FUGUE_LOG").as_deref() {
        Ok("error") => Level::Error,
        Ok("info") => Level::Info,
        Ok("debug") => Level::Debug,
        _ => Level::Warn,
    })
}

fn emit(at: Level, tag: &str, message: &str) {
    if at <= level() {
        let _ = writeln!(std::io::stderr().lock(), "fugue: {tag}: {message}");
    }
}

pub(crate) fn error(message: &str) {
    emit(Level::Error, "error", message);
}

pub(crate) fn warn(message: &str) {
    emit(Level::Warn, "warning", message);
}

pub(crate) fn info(message: &str) {
    emit(Level::Info, "info", message);
}

pub(crate) fn debug(message: &str) {
    emit(Level::Debug, "debug", message);
}
