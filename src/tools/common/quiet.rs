//! The watchdog for silent work (`quiet_ms` of `fugue_exec`, `fugue_send_input`'s wait and
//! `fugue_wait`): a command that has printed nothing for the period and does not ask is `quiet`,
//! so "this test hangs" is one call's answer and not a guessed timeout.
//!
//! In: the pane, the period, and when the call began (silence counts from the later of the pane's
//! last print and that). Out: `due`, when the waiter must look next, and `check`, true once the
//! silence has lasted the period and one look at /proc finds the program not waiting for the
//! terminal. A program that waits for the terminal is the input watch's to call a question: the
//! watchdog stays silent about it.

use crate::pane::Pane;
use crate::pane::activity::{self, Foreground};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The shortest `quiet_ms`: a silence shorter than this is a program between two prints.
pub(crate) const MIN_QUIET_MS: u64 = 100;

/// How long after a look that found the program waiting for the terminal the next one comes.
const RELOOK: Duration = Duration::from_millis(500);

pub(crate) struct Quiet {
    pane: Arc<Pane>,
    period: Duration,
    /// Silence counts from here at the earliest: the call's start.
    from: Instant,
    /// The earliest next look at /proc.
    next_look: Instant,
}

impl Quiet {
    pub(crate) fn new(pane: &Arc<Pane>, period: Duration, from: Instant) -> Quiet {
        Quiet { pane: pane.clone(), period, from, next_look: from }
    }

    /// When the silence will have lasted the period, if nothing is printed meanwhile.
    pub(crate) fn due(&self) -> Instant {
        let silent_from = self.pane.output().last_print().max(self.from);
        (silent_from + self.period).max(self.next_look)
    }

    /// True once the pane's program has printed nothing for the period and is not waiting for
    /// the terminal.
    pub(crate) fn check(&mut self) -> bool {
        if !self.pane.is_running() || Instant::now() < self.due() {
            return false;
        }
        self.next_look = Instant::now() + RELOOK;
        matches!(activity::look(&self.pane), Foreground::Busy)
    }
}
