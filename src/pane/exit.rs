//! How a pane's process ended, and the one way fugue reports it: as the result fields `exit_code`
//! and `signal`, and in words for a reason or a prompt.

use serde::{Deserialize, Serialize};

/// How a process or a command ended: the one outcome every answer reports, a pane's process as
/// `waitpid` tells it and a shell's command as its prompt record does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Exit {
    /// It exited with this code (a shell's command: the status the shell reported).
    Code(i32),
    /// This signal killed it.
    Signal(i32),
    /// Someone else reaped it, and with it the status.
    Unknown,
}

impl Exit {
    pub(crate) fn success(self) -> bool {
        self == Exit::Code(0)
    }

    /// The exit code, when it exited by itself.
    pub(crate) fn code(self) -> Option<i32> {
        match self {
            Exit::Code(code) => Some(code),
            Exit::Signal(_) | Exit::Unknown => None,
        }
    }

    /// How it ended, in words: "exited with code 3", "was killed by SIGKILL".
    pub(crate) fn describe(self) -> String {
        match self {
            Exit::Code(code) => format!("exited with code {code}"),
            Exit::Signal(signal) => format!("was killed by {}", signal_name(signal)),
            Exit::Unknown => "ended with an unknown status".into(),
        }
    }
}

/// Whether a result has a `signal` field when no signal ended the process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum SignalField {
    /// Always, null unless a signal killed it: a pane's status has a fixed set of fields.
    #[default]
    Always,
    /// Only when a signal killed it: a command's result in a run names what happened.
    WhenSignalled,
}

/// How a process ended, as the result fields `exit_code` and `signal`: one struct, so that every
/// answer names them alike and renaming one is a compile error, not a grep.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct ExitFields {
    /// Null while it runs, when a signal killed it, or when unknown.
    pub(crate) exit_code: Option<i32>,
    /// The signal's name (`SIGKILL`).
    #[serde(default)]
    pub(crate) signal: Option<String>,
    /// Whether `signal` is written when it is null; not itself on the wire.
    #[serde(skip)]
    pub(crate) field: SignalField,
}

impl ExitFields {
    pub(crate) fn new(exit: Option<Exit>, field: SignalField) -> ExitFields {
        let signal = match exit {
            Some(Exit::Signal(signal)) => Some(signal_name(signal)),
            _ => None,
        };
        ExitFields { exit_code: exit.and_then(Exit::code), signal, field }
    }
}

// By hand for the one thing a derive cannot say: `signal` is left out or written null, as `field`
// says. The names are the struct's own, written here once.
impl Serialize for ExitFields {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let shown = self.signal.is_some() || self.field == SignalField::Always;
        let mut map = serializer.serialize_map(Some(1 + usize::from(shown)))?;
        map.serialize_entry("exit_code", &self.exit_code)?;
        if shown {
            map.serialize_entry("signal", &self.signal)?;
        }
        map.end()
    }
}

/// Whether a pane's process runs, as its views say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PaneStatus {
    Running,
    Exited,
}

/// A pane's state as its views give it: `status` (`running` or `exited`) and how it ended, with
/// `signal` always present.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PaneState {
    pub(crate) status: PaneStatus,
    #[serde(flatten)]
    pub(crate) exit: ExitFields,
}

impl PaneState {
    pub(crate) fn new(exit: Option<Exit>) -> PaneState {
        let status = if exit.is_some() { PaneStatus::Exited } else { PaneStatus::Running };
        PaneState { status, exit: ExitFields::new(exit, SignalField::Always) }
    }
}

/// The name of a signal, for messages: `SIGKILL` for 9.
pub(crate) fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exits_are_written_the_same_way_everywhere() {
        let killed = Some(Exit::Signal(libc::SIGKILL));
        let exited = Some(Exit::Code(3));
        let fields = |exit, field| serde_json::to_value(ExitFields::new(exit, field)).unwrap();
        for field in [SignalField::Always, SignalField::WhenSignalled] {
            assert_eq!(fields(killed, field), json!({"exit_code": null, "signal": "SIGKILL"}));
        }
        assert_eq!(fields(exited, SignalField::Always), json!({"exit_code": 3, "signal": null}));
        assert_eq!(fields(exited, SignalField::WhenSignalled), json!({"exit_code": 3}));
        assert_eq!(Exit::Code(3).describe(), "exited with code 3");
        assert_eq!(Exit::Signal(9).describe(), "was killed by SIGKILL");
        let states = [PaneState::new(None), PaneState::new(killed)];
        assert_eq!(
            serde_json::to_value(states).unwrap(),
            json!([{"status": "running", "exit_code": null, "signal": null},
                   {"status": "exited", "exit_code": null, "signal": "SIGKILL"}])
        );
    }
}
