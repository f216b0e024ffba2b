//! Logging to stderr, never stdout: stdout belongs to the protocol.
//!
//! `FUGUE_LOG` sets the level (`error`, `warn`, `info`, `debug`; default `warn`). Lines are short and
//! few, because a client that does not drain stderr would otherwise block the server.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// When stderr is a file (a shared server's log), its size cap in bytes; 0 for none.
static CAP: AtomicU64 = AtomicU64::new(0);

/// Caps stderr, a log file opened for appending, at `bytes`: past it, the file starts over.
pub(crate) fn cap(bytes: u64) {
    CAP.store(bytes, Ordering::Relaxed);
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

fn level() -> Level {
    // Process-wide: the level is read once from the environment, before any runtime.
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
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "fugue: {tag}: {message}");
        let cap = CAP.load(Ordering::Relaxed);
        if cap > 0 {
            // SAFETY: an all-zero stat is a valid value for fstat to fill in.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: fstat and ftruncate on stderr, under its lock; `st` outlives the call.
            unsafe {
                if libc::fstat(2, &raw mut st) == 0 && st.st_size.cast_unsigned() > cap {
                    libc::ftruncate(2, 0);
                }
            }
        }
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
