//! The one error type of fugue.
//!
//! Every failure a tool can report is an `Error` with a kind; the kind gives the stable `code` word
//! that clients see in `structuredContent.error.code`, and the message says what went wrong and what
//! to do about it. Protocol faults (bad JSON-RPC) never become an `Error`: `rpc` answers them with
//! JSON-RPC error codes directly.

use std::fmt;

pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of failure, with one stable code word per kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// An argument has the wrong type, is out of range, or is unknown.
    InvalidArgument,
    PaneNotFound,
    WindowNotFound,
    SessionNotFound,
    PipelineNotFound,
    /// A regular expression did not compile or is over the size limit.
    InvalidRegex,
    /// The working directory does not exist or is not a directory.
    BadCwd,
    /// A process could not be started.
    SpawnFailed,
    /// A sandbox was asked for and this kernel cannot make it; nothing is run unsandboxed.
    SandboxUnavailable,
    /// A hard limit (panes, sessions, calls, pipelines) is reached.
    LimitReached,
    /// A name is already taken.
    NameTaken,
    /// The operation needs a running pane, and the pane has exited.
    PaneExited,
    /// The pane was closed while the call waited on it.
    PaneClosed,
    /// The pane's shell is running a command, so nothing is typed into it.
    PaneBusy,
    /// The request was cancelled by the client.
    Cancelled,
    /// A git operation failed.
    Git,
    /// The operation is not allowed in the object's current state.
    InvalidState,
    Io,
    Internal,
    /// An ssh host cannot be reached (no route, refused, timed out, or the connection dropped).
    HostUnreachable,
    /// An ssh host's key is not in known_hosts (or differs): ssh asks, and fugue never answers.
    HostKeyUnknown,
    /// An ssh login needs a password or a key ssh does not have: fugue never types one.
    HostAuth,
    /// A host fugue cannot run on: another architecture and no binary configured for it.
    HostUnsupported,
}

impl ErrorKind {
    pub(crate) fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::PaneNotFound => "pane_not_found",
            ErrorKind::WindowNotFound => "window_not_found",
            ErrorKind::SessionNotFound => "session_not_found",
            ErrorKind::PipelineNotFound => "pipeline_not_found",
            ErrorKind::InvalidRegex => "invalid_regex",
            ErrorKind::BadCwd => "bad_cwd",
            ErrorKind::SpawnFailed => "spawn_failed",
            ErrorKind::SandboxUnavailable => "sandbox_unavailable",
            ErrorKind::LimitReached => "limit_reached",
            ErrorKind::NameTaken => "name_taken",
            ErrorKind::PaneExited => "pane_exited",
            ErrorKind::PaneClosed => "pane_closed",
            ErrorKind::PaneBusy => "pane_busy",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Git => "git_failed",
            ErrorKind::InvalidState => "invalid_state",
            ErrorKind::Io => "io_error",
            ErrorKind::Internal => "internal",
            ErrorKind::HostUnreachable => "host_unreachable",
            ErrorKind::HostKeyUnknown => "host_key_unknown",
            ErrorKind::HostAuth => "host_auth_needed",
            ErrorKind::HostUnsupported => "host_unsupported",
        }
    }
}

/// Every kind, for reading a code back (`Error::from_code`).
const ALL_KINDS: [ErrorKind; 23] = [
    ErrorKind::InvalidArgument,
    ErrorKind::PaneNotFound,
    ErrorKind::WindowNotFound,
    ErrorKind::SessionNotFound,
    ErrorKind::PipelineNotFound,
    ErrorKind::InvalidRegex,
    ErrorKind::BadCwd,
    ErrorKind::SpawnFailed,
    ErrorKind::SandboxUnavailable,
    ErrorKind::LimitReached,
    ErrorKind::NameTaken,
    ErrorKind::PaneExited,
    ErrorKind::PaneClosed,
    ErrorKind::PaneBusy,
    ErrorKind::Cancelled,
    ErrorKind::Git,
    ErrorKind::InvalidState,
    ErrorKind::Io,
    ErrorKind::Internal,
    ErrorKind::HostUnreachable,
    ErrorKind::HostKeyUnknown,
    ErrorKind::HostAuth,
    ErrorKind::HostUnsupported,
];

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
        let kind = ALL_KINDS.iter().copied().find(|k| k.code() == code);
        Error::new(kind.unwrap_or(ErrorKind::Internal), message)
    }

    pub(crate) fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub(crate) fn code(&self) -> &'static str {
        self.kind.code()
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
        let kinds = ALL_KINDS;
        let mut codes: Vec<_> = kinds.iter().map(|k| k.code()).collect();
        assert!(codes.iter().all(|c| c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_')));
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), kinds.len());
    }
}
