//! The words and shapes the tools' answers share: one status vocabulary per meaning, and one
//! result per command for the run tools.
//!
//! Where a command waited on stands when the wait ends (`Stand`, whose status words are
//! `ExecStatus`) is what `fugue_exec`, `fugue_send_input`'s wait and `fugue_wait`'s results report; how a run's command or step ended
//! (`CommandEnd`), what the run tools' results report; a wait's outcome is what `fugue_wait`
//! (`WaitStatus`) and `fugue_expect` (`ExpectStatus`) end with; a run's (`RunStatus`), what the
//! run tools end with.
//! Each is a `words!`: serialized by its wire names, and listed by the same names in the
//! output schemas (`Choice::words`), so an answer and its schema cannot name different words.

use crate::ids::PaneId;
use crate::pane::Pane;
use crate::pane::exit::{Exit, ExitFields, SignalField};
use crate::pane::search::Found;
use crate::tool::choice::Choice;
use crate::tool::schema::result;
use crate::tools::common::asking::Told;
use crate::tools::common::responses::Answered;
use crate::words::words;
use serde::Serialize;
use serde_json::{Value, json};

words! {
    /// Where a command waited on stands when the wait ends: it ended (`ok`, `failed`), the pane's
    /// process ended (`exited`), its program waits for the terminal (`input`), or it goes on
    /// (`running`; `ready`, `matched`: a pattern matched its output; `quiet`: it printed nothing
    /// for `quiet_ms`).
    pub(crate) enum ExecStatus {
        Ok = "ok",
        Failed = "failed",
        Input = "input",
        Running = "running",
        Exited = "exited",
        Ready = "ready",
        Matched = "matched",
        Quiet = "quiet",
    }
}

words! {
    /// How a command or step of a run ended: by itself (`ok`, `failed`; `exited`: it ended the
    /// shell), stopped at the deadline (`timeout`) or because its program asked (`input`), or it
    /// never started (`error`).
    pub(crate) enum CommandEnd {
        Ok = "ok",
        Failed = "failed",
        Timeout = "timeout",
        Input = "input",
        Exited = "exited",
        Error = "error",
    }
}

words! {
    /// How a wait on panes ended: enough of them had an outcome (`done`), or the deadline passed.
    pub(crate) enum WaitStatus {
        Done = "done",
        Timeout = "timeout",
    }
}

words! {
    /// How a wait for a pattern ended: it matched, the deadline passed, the program asks, or the
    /// pane's process ended.
    pub(crate) enum ExpectStatus {
        Matched = "matched",
        Timeout = "timeout",
        Input = "input",
        Exited = "exited",
    }
}

words! {
    /// How a run ended: every command or step ran (`completed`), a step failed, the deadline
    /// stopped some (`partial`) or all of what still ran, or a program asks.
    pub(crate) enum RunStatus {
        Completed = "completed",
        Failed = "failed",
        Partial = "partial",
        Timeout = "timeout",
        Input = "input",
    }
}

/// Where a command waited on stands when the wait ends, with what each status carries: the
/// status of `fugue_exec`'s answer, of `fugue_send_input`'s wait and of each `fugue_wait` result.
/// Serialized as `status` (an `ExecStatus` word) first, then the status's own fields; a status
/// cannot carry another's (no exit code while it runs, no match unless one matched).
#[derive(Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub(crate) enum Stand {
    /// It ended with exit code 0.
    Ok(Ended),
    /// It ended otherwise: another code, a signal, or a status lost.
    Failed(Ended),
    /// The pane's own process ended: its program, or the shell a command ended.
    Exited(Ended),
    /// Its program waits for the terminal: named when known; `line` is its question, where the
    /// answer does not end its `output` with it.
    Input {
        #[serde(skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        program: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        line: Option<String>,
    },
    /// The deadline passed.
    Running {
        #[serde(skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
    },
    /// It printed nothing for `quiet_ms` and does not ask.
    Quiet {
        #[serde(skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
    },
    /// `fugue_exec`'s `until` matched its output; it goes on.
    Ready {
        #[serde(skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        #[serde(flatten)]
        found: Found,
    },
    /// `fugue_wait`'s `until` matched what the pane printed.
    Matched {
        #[serde(flatten)]
        found: Found,
    },
}

/// How a command or the pane's process ended, and the directory it left.
#[derive(Serialize)]
pub(crate) struct Ended {
    #[serde(flatten)]
    exit: ExitFields,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
}

impl Stand {
    /// A command that ended with `exit` (`None`: how is unknown): `ok` for exit code 0, else
    /// `failed`.
    pub(crate) fn ended(exit: Option<Exit>, cwd: Option<String>) -> Stand {
        let ended = Ended { exit: ExitFields::new(exit, SignalField::WhenSignalled), cwd };
        if exit.is_some_and(Exit::success) { Stand::Ok(ended) } else { Stand::Failed(ended) }
    }

    /// The pane's own process ended with `exit`.
    pub(crate) fn exited(exit: Option<Exit>, cwd: Option<String>) -> Stand {
        Stand::Exited(Ended { exit: ExitFields::new(exit, SignalField::WhenSignalled), cwd })
    }

    /// Its status word, as the output schemas list it.
    #[cfg(test)]
    fn status(&self) -> ExecStatus {
        match self {
            Stand::Ok(_) => ExecStatus::Ok,
            Stand::Failed(_) => ExecStatus::Failed,
            Stand::Exited(_) => ExecStatus::Exited,
            Stand::Input { .. } => ExecStatus::Input,
            Stand::Running { .. } => ExecStatus::Running,
            Stand::Quiet { .. } => ExecStatus::Quiet,
            Stand::Ready { .. } => ExecStatus::Ready,
            Stand::Matched { .. } => ExecStatus::Matched,
        }
    }

    /// Whether what it shows is a full-screen program's screen because the match was found there.
    pub(crate) fn found_on_screen(&self) -> bool {
        matches!(self, Stand::Ready { found, .. } | Stand::Matched { found } if found.screen)
    }
}

/// One command of `fugue_run_parallel` or one step of `fugue_run_pipeline`, as its answer lists it.
#[derive(Serialize)]
pub(crate) struct CommandResult {
    pub(crate) name: String,
    pub(crate) command: String,
    pub(crate) status: CommandEnd,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pane_id: Option<PaneId>,
    #[serde(flatten)]
    pub(crate) exit: ExitFields,
    pub(crate) duration_ms: u64,
    /// Why it never started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) answered: Option<Vec<Answered>>,
    #[serde(flatten)]
    pub(crate) told: Told,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sandbox_denied: Option<String>,
}

/// The schema of a `CommandResult`, for the run tools' output schemas: its status words. Its other
/// keys are named in the tools' descriptions; `tools/list` has no room to declare them all.
pub(crate) fn command_result_schema() -> Value {
    json!({"type": "array", "items": result(&[("status", CommandEnd::words())])})
}

/// For a failed command whose output shows the sandbox refused something: the line that says so.
pub(crate) fn denied(pane: &Pane, failed: bool, output: Option<&str>) -> Option<String> {
    if !failed {
        return None;
    }
    crate::sandbox::denied(&pane.sandbox, output?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::Words;

    #[test]
    fn every_word_is_serialized_as_its_schema_lists_it() {
        let words = |schema: Value| schema["enum"].as_array().unwrap().clone();
        for (name, status) in ExecStatus::VALUES {
            assert_eq!(serde_json::to_value(status).unwrap(), json!(name));
            assert!(words(ExecStatus::words()).contains(&json!(name)));
        }
        for (name, end) in CommandEnd::VALUES {
            assert_eq!(serde_json::to_value(end).unwrap(), json!(name));
        }
        assert_eq!(words(RunStatus::words()).len(), RunStatus::VALUES.len());
    }

    #[test]
    fn each_stand_is_written_as_its_status_word_then_its_own_fields() {
        let found = || Found {
            matched: "go".into(),
            line: "go on".into(),
            groups: vec![json!("o")],
            offset: 9,
            screen: false,
        };
        let cwd = || Some("/tmp".to_string());
        let cases = [
            (
                Stand::ended(Some(Exit::Code(0)), cwd()),
                r#"{"status":"ok","exit_code":0,"cwd":"/tmp"}"#,
            ),
            (Stand::ended(Some(Exit::Code(2)), None), r#"{"status":"failed","exit_code":2}"#),
            (
                Stand::ended(Some(Exit::Signal(9)), None),
                r#"{"status":"failed","exit_code":null,"signal":"SIGKILL"}"#,
            ),
            (Stand::exited(Some(Exit::Code(3)), None), r#"{"status":"exited","exit_code":3}"#),
            (
                Stand::Input { cwd: None, program: Some("cat".into()), line: Some("q?".into()) },
                r#"{"status":"input","program":"cat","line":"q?"}"#,
            ),
            (Stand::Running { cwd: cwd() }, r#"{"status":"running","cwd":"/tmp"}"#),
            (Stand::Quiet { cwd: None }, r#"{"status":"quiet"}"#),
            (
                Stand::Ready { cwd: cwd(), found: found() },
                r#"{"status":"ready","cwd":"/tmp","match":"go","line":"go on","groups":["o"]}"#,
            ),
            (
                Stand::Matched { found: found() },
                r#"{"status":"matched","match":"go","line":"go on","groups":["o"]}"#,
            ),
        ];
        for (stand, written) in cases {
            assert_eq!(serde_json::to_string(&stand).unwrap(), written);
            let word = serde_json::to_value(stand.status()).unwrap();
            assert_eq!(serde_json::from_str::<Value>(written).unwrap()["status"], word);
        }
    }

    #[test]
    fn a_command_that_never_started_says_why_and_nothing_else() {
        let result = CommandResult {
            name: "task-1".into(),
            command: "make".into(),
            status: CommandEnd::Error,
            pane_id: None,
            exit: ExitFields::new(None, SignalField::WhenSignalled),
            duration_ms: 0,
            error: Some("no such directory".into()),
            answered: None,
            told: Told::default(),
            sandbox_denied: None,
        };
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({"name": "task-1", "command": "make", "status": "error", "exit_code": null,
                   "duration_ms": 0, "error": "no such directory"})
        );
    }
}
