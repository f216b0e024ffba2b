//! How a pane's process ended, and the one way fugue reports it: as the result fields `exit_code`
//! and `signal`, and in words for a reason or a prompt.

use serde_json::{Value, json};

/// How a pane's process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Exit {
    /// The exit code when the process exited normally.
    pub(crate) code: Option<i32>,
    /// The signal number when a signal killed it.
    pub(crate) signal: Option<i32>,
}

impl Exit {
    pub(crate) fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// How it ended, in words: "exited with code 3", "was killed by SIGKILL".
    pub(crate) fn describe(&self) -> String {
        match (self.code, self.signal) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(signal)) => format!("was killed by {}", signal_name(signal)),
            (None, None) => "ended with an unknown status".into(),
        }
    }
}

/// Whether a result has a `signal` field when no signal ended the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SignalField {
    /// Always, null unless a signal killed it: a pane's status has a fixed set of fields.
    Always,
    /// Only when a signal killed it: a command's result in a run names what happened.
    WhenSignalled,
}

/// Writes `exit_code` (null while running or when unknown) and `signal` (its name, such as
/// `SIGKILL`) into a result.
pub(crate) fn write_exit(value: &mut Value, exit: Option<Exit>, field: SignalField) {
    value["exit_code"] = json!(exit.and_then(|e| e.code));
    let signal = exit.and_then(|e| e.signal).map(signal_name);
    if signal.is_some() || field == SignalField::Always {
        value["signal"] = json!(signal);
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

    #[test]
    fn exits_are_written_the_same_way_everywhere() {
        let killed = Some(Exit { code: None, signal: Some(libc::SIGKILL) });
        let exited = Some(Exit { code: Some(3), signal: None });
        for field in [SignalField::Always, SignalField::WhenSignalled] {
            let mut value = json!({});
            write_exit(&mut value, killed, field);
            assert_eq!(value, json!({"exit_code": null, "signal": "SIGKILL"}));
        }
        let mut value = json!({});
        write_exit(&mut value, exited, SignalField::Always);
        assert_eq!(value, json!({"exit_code": 3, "signal": null}));
        let mut value = json!({});
        write_exit(&mut value, exited, SignalField::WhenSignalled);
        assert_eq!(value, json!({"exit_code": 3}));
        assert_eq!(Exit { code: Some(3), signal: None }.describe(), "exited with code 3");
        assert_eq!(Exit { code: None, signal: Some(9) }.describe(), "was killed by SIGKILL");
    }
}
