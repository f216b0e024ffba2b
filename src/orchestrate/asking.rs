//! `on_input` for the run tools: a command or step whose program waits for someone to type is
//! stopped as at a timeout and reported `input`, instead of holding the call until its timeout.
//!
//! The rule itself (quiet, then two agreeing looks at /proc) is `pane::activity::InputWatch`; this
//! file holds the argument, its schema, and the answer for a stopped command.

use crate::error::{Error, Result};
use crate::pane::Pane;
use crate::pane::activity::InputWatch;
use crate::tool::args::Args;
use crate::tool::schema::choice;
use serde_json::Value;
use std::time::Instant;

/// The `on_input` choices; the default is the first.
const ON_INPUT: [&str; 2] = ["stop", "wait"];

/// The `on_input` argument of `fugue_run_parallel` and `fugue_run_pipeline`, with its default.
pub(crate) fn schema() -> (&'static str, Value) {
    let description = "stop: end a program waiting for keyboard input, status input";
    ("on_input", choice(description, &ON_INPUT, ON_INPUT[0]))
}

/// Whether `on_input` says `stop`; checked before anything starts.
pub(crate) fn stops(args: &Args<'_>) -> Result<bool> {
    match args.str("on_input")?.unwrap_or(ON_INPUT[0]) {
        "stop" => Ok(true),
        "wait" => Ok(false),
        other => Err(Error::invalid(format!("on_input {other:?} is not one of stop, wait"))),
    }
}

/// When and where a program was found asking: the moment, and the end of the pane's output then,
/// so its `output_tail` ends with the question and not with what dying printed.
#[derive(Clone, Copy)]
pub(crate) struct Asked {
    pub(crate) at: Instant,
    pub(crate) end: u64,
}

impl Asked {
    pub(crate) fn now(pane: &Pane) -> Asked {
        Asked { at: Instant::now(), end: pane.output().end() }
    }
}

/// The earliest of the watches' next checks.
pub(crate) fn next_check<'a>(watches: impl Iterator<Item = &'a InputWatch>) -> Option<Instant> {
    watches.filter_map(InputWatch::next_check).min()
}
