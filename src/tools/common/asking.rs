//! `on_input` for the run tools: a command or step whose program waits for someone to type is
//! stopped as at a timeout and reported `input`, instead of holding the call until its timeout.
//!
//! The rule itself (two agreeing looks at /proc, at once or after a quiet period) is
//! `pane::activity::InputWatch`; this file holds the argument, its schema, and the answer's
//! fields for a stopped command (`Told`).

use crate::pane::Pane;
use crate::pane::activity::InputWatch;
use crate::pane::budget::{self, Budget, Fitted, Omitted};
use crate::pane::tail::alternate_rows;
use crate::tool::params::Spec;
use crate::words::words;
use serde::Serialize;
use std::time::Instant;

words! {
    /// The run tools' `on_input`: stop a program that asks, or let it wait until the timeout.
    pub(crate) enum OnInput {
        Stop = "stop",
        Wait = "wait",
    }
}

/// The `on_input` row of `fugue_run_parallel` and `fugue_run_pipeline`.
pub(crate) const ON_INPUT: Spec = Spec::new("What a question does (see the description)");

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
    /// What `pane` shows as `watch` finds it asking; a screen within `bytes`.
    pub(crate) fn now(pane: &Pane, watch: &InputWatch, bytes: usize) -> Asked {
        let budget = Budget::whole(bytes, None);
        let screen = alternate_rows(pane).map(|rows| budget::screen(&rows, &budget));
        Asked { at: Instant::now(), end: pane.output().end(), screen, program: watch.program() }
    }

    /// The question as the `output_tail` of an answer: the full-screen program's screen, marked
    /// `alternate_screen`, or else `tail` (the main screen's last lines up to `end`; none when
    /// the call asked for no lines); and the `program` that asks.
    pub(crate) fn told(&self, tail: Option<Fitted>) -> Told {
        let told = match &self.screen {
            Some(screen) => Told {
                tail: Some(Tail::from(screen.clone())),
                alternate_screen: true,
                ..Told::default()
            },
            None => told(tail),
        };
        Told { program: self.program.clone(), ..told }
    }
}

/// A command's last lines, as an answer's `output_tail` with what it left out.
#[derive(Serialize)]
pub(crate) struct Tail {
    pub(crate) output_tail: String,
    #[serde(flatten)]
    pub(crate) omitted: Omitted,
}

impl From<Fitted> for Tail {
    fn from(fitted: Fitted) -> Tail {
        let omitted = fitted.omitted();
        Tail { output_tail: fitted.text, omitted }
    }
}

/// What an answer says of a command's last lines: its `output_tail`, and for a program found
/// asking, the `program` and whether the tail is its screen (`alternate_screen`).
#[derive(Default, Serialize)]
pub(crate) struct Told {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) program: Option<String>,
    #[serde(flatten)]
    pub(crate) tail: Option<Tail>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) alternate_screen: bool,
}

impl Told {
    /// The tail's text, if there is one.
    pub(crate) fn text(&self) -> Option<&str> {
        self.tail.as_ref().map(|t| t.output_tail.as_str())
    }
}

/// `tail` as the `output_tail` of an answer: `""` for a command that printed nothing, so that it
/// differs from a tail not shown (none: `tail_lines` 0).
pub(crate) fn told(tail: Option<Fitted>) -> Told {
    Told { tail: tail.map(Tail::from), ..Told::default() }
}
