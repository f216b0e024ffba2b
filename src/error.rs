//! The one error type of fugue.
//!
//! Every failure a tool can report is an `Error` with a kind; the kind gives the stable `code` word
//! that clients see in `structuredContent.error.code`, and the message says what went wrong and what
//! to do about it. Protocol faults (bad JSON-RPC) never become an `Error`: `rpc` answers them with
//! JSON-RPC error codes directly.

use crate::words::{Words, words};
use std::fmt;

pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

words! {
    /// What kind of failure, with one stable code word per kind.
    pub(crate) enum ErrorKind {
        /// An argument has the wrong type, is out of range, or is unknown.
        InvalidArgument = "invalid_argument",
        PaneNotFound = "pane_not_found",
        WindowNotFound = "window_not_found",
        SessionNotFound = "session_not_found",
        PipelineNotFound = "pipeline_not_found",
        /// A regular expression did not compile or is over the size limit.
        InvalidRegex = "invalid_regex",
        /// The working directory does not exist or is not a directory.
        BadCwd = "bad_cwd",
        /// A process could not be started.
        SpawnFailed = "spawn_failed",
        /// A sandbox was asked for and this kernel cannot make it; nothing is run unsandboxed.
        SandboxUnavailable = "sandbox_unavailable",
        /// A hard limit (panes, sessions, calls, pipelines) is reached.
        LimitReached = "limit_reached",
        /// A name is already taken.
        NameTaken = "name_taken",
        /// The operation needs a running pane, and the pane has exited.
        PaneExited = "pane_exited",
        /// The pane was closed while the call waited on it.
        PaneClosed = "pane_closed",
        /// The pane's shell is running a command, so nothing is typed into it.
        PaneBusy = "pane_busy",
        /// The request was cancelled by the client.
        Cancelled = "cancelled",
        /// A git operation failed.
        Git = "git_failed",
        /// The operation is not allowed in the object's current state.
        InvalidState = "invalid_state",
        Io = "io_error",
        Internal = "internal",
        /// An ssh host cannot be reached (no route, refused, timed out, or the connection dropped).
        HostUnreachable = "host_unreachable",
        /// An ssh host's key is not in known_hosts (or differs): ssh asks, and fugue never answers.
        HostKeyUnknown = "host_key_unknown",
        /// An ssh login needs a password or a key ssh does not have: fugue never types one.
        HostAuth = "host_auth_needed",
        /// A host fugue cannot run on: another architecture and no binary configured for it.
        HostUnsupported = "host_unsupported",
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into() }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Internal, message)
    }

    pub(crate) fn cancelled() -> Error {
        Error::new(ErrorKind::Cancelled, "the request was cancelled")
    }

    /// The error a remote fugue answered, from its code; an unknown code is `internal`.
    pub(crate) fn from_code(code: &str, message: impl Into<String>) -> Error {
        let kind = ErrorKind::from_word(code);
        Error::new(kind.unwrap_or(ErrorKind::Internal), message)
    }

    pub(crate) fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub(crate) fn code(&self) -> &'static str {
        self.kind.name()
    }

    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Error {
        Error::new(ErrorKind::Io, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_words() {
        let mut codes = ErrorKind::names();
        assert!(codes.iter().all(|c| c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_')));
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), ErrorKind::VALUES.len());
    }
}
