//! `on_input` for the run tools: a command or step whose program waits for someone to type is
//! stopped as at a timeout and reported `input`, instead of holding the call until its timeout.
//!
//! The rule itself (two agreeing looks at /proc, at once or after a quiet period) is
//! `pane::activity::InputWatch`; this file holds the argument, its schema, and the answer for a
//! stopped command.

use crate::error::Result;
use crate::pane::Pane;
use crate::pane::activity::InputWatch;
use crate::pane::budget::{self, Budget, Fitted};
use crate::pane::tail::alternate_rows;
use crate::tool::args::Args;
use crate::tool::choice::{Choice, choice_enum};
use serde_json::Value;
use std::time::Instant;

choice_enum! {
    /// The run tools' `on_input`: stop a program that asks, or let it wait until the timeout.
    enum OnInput {
        Stop = "stop",
        Wait = "wait",
    }
}

/// The `on_input` argument of `fugue_run_parallel` and `fugue_run_pipeline`, with its default.
pub(crate) fn schema() -> (&'static str, Value) {
    let description = "stop: end a program waiting for keyboard input, status input, program named";
    ("on_input", OnInput::schema(description))
}

/// Whether `on_input` says `stop`; checked before anything starts.
pub(crate) fn stops(args: &Args<'_>) -> Result<bool> {
    Ok(OnInput::parse(args, "on_input")? == OnInput::Stop)
}

/// When and where a program was found asking: the moment, and the end of the pane's output then,
/// so its `output_tail` ends with the question and not with what dying printed; and when the
/// program that asks is a full-screen one, what its screen showed then.
#[derive(Clone)]
pub(crate) struct Asked {
    pub(crate) at: Instant,
    pub(crate) end: u64,
    pub(crate) screen: Option<Fitted>,
    /// The name of the program that asks, when known.
    pub(crate) program: Option<String>,
}

impl Asked {
    pub(crate) fn now(pane: &Pane, watch: &InputWatch) -> Asked {
        let budget = Budget::whole(budget::default_bytes(), None);
        let screen = alternate_rows(pane).map(|rows| budget::screen(&rows, &budget));
        Asked { at: Instant::now(), end: pane.output().end(), screen, program: watch.program() }
    }

    /// Writes the question as the `output_tail` of an answer: the full-screen program's screen,
    /// marked `alternate_screen`, or else `tail` (the main screen's last lines up to `end`); and
    /// the `program` that asks.
    pub(crate) fn write_tail(&self, value: &mut Value, tail: Fitted) {
        if let Some(program) = &self.program {
            value["program"] = serde_json::json!(program);
        }
        match &self.screen {
            Some(screen) => {
                screen.write(value, "output_tail");
                value["alternate_screen"] = serde_json::json!(true);
            }
            None => write_tail(value, &tail),
        }
    }
}

/// Writes `tail` as the `output_tail` of an answer, unless there is none.
pub(crate) fn write_tail(value: &mut Value, tail: &Fitted) {
    if !tail.text.is_empty() {
        tail.write(value, "output_tail");
    }
}
