//! Where a pipeline's run stands, and what it does at each look, as one pure function.
//!
//! A run starts (its first step typed before the shell's first prompt), types its steps one by
//! one, and is over when every step ran or the first failure stopped them, when its running step
//! was interrupted (at the deadline, or at a question with `on_input: stop`), or when its shell
//! ended. `Phase` holds only what each of those states has, so no run can be both done and
//! ended, or wait for a prompt's mark while a step runs; `Phase::next` is what a look decides from
//! what it saw. It does no I/O and reads no clock (the time comes in `Saw`), so every decision is
//! unit-tested here; `run.rs` does the looking and the typing.

use crate::pane::exit::Exit;
use crate::shell::PROMPT_DRAWN_WAIT;
use crate::tools::answer::CommandEnd;
use crate::tools::common::asking::Asked;
use std::time::Instant;

/// The running step was interrupted, as Ctrl-C would: at the deadline, or found asking with
/// `on_input: stop`.
pub(super) struct Stop {
    /// When, and the end of the output then: what the shell prints on the interrupt is not the
    /// step's.
    pub(super) at: Instant,
    pub(super) end: u64,
    /// The question it was stopped at; `None` at the deadline.
    pub(super) asked: Option<Asked>,
}

impl Stop {
    /// When it was, and the status it gives a step that had not ended by then.
    pub(super) fn says(&self) -> (Instant, CommandEnd) {
        (self.at, if self.asked.is_some() { CommandEnd::Input } else { CommandEnd::Timeout })
    }
}

/// How a step ended, from when its record came and the status it reported (`ended`), the run's
/// interrupt (`Stop::says`) and whether the shell ended.
pub(super) fn step_end(
    ended: Option<(Instant, i32)>,
    stopped: Option<(Instant, CommandEnd)>,
    shell_exited: bool,
) -> CommandEnd {
    // A step that had not ended when the deadline passed timed out, whatever it said after; one
    // that had not ended when it was found asking was stopped for its question.
    if let Some((at, says)) = stopped
        && ended.is_none_or(|(end, _)| end >= at)
    {
        return says;
    }
    match ended {
        Some((_, 0)) => CommandEnd::Ok,
        Some(_) => CommandEnd::Failed,
        None if shell_exited => CommandEnd::Exited,
        None => CommandEnd::Timeout,
    }
}

/// The last step typed, as the run's progress tells it.
pub(super) enum Latest<'a> {
    /// No step typed yet.
    None,
    /// Step `n` (from 1) runs, for `secs` so far.
    Running { n: usize, name: &'a str, secs: f64 },
    /// It ended with status `rc`.
    Ended { name: &'a str, rc: i32 },
}

/// The progress message of a run with `done` of `total` steps ended.
pub(super) fn progress_message(done: usize, total: usize, latest: Latest<'_>) -> String {
    match latest {
        Latest::Running { n, name, secs } => format!("step {n}/{total} {name} running {secs:.0}s"),
        Latest::Ended { name, rc } => format!("{done}/{total} steps done; {name} exit {rc}"),
        Latest::None => format!("0/{total} steps done"),
    }
}

/// Where a run stands.
pub(super) enum Phase {
    /// The shell has not shown its first prompt: the first step, typed at once, waits in the
    /// terminal.
    Starting,
    /// Steps remain. Between steps, `draw_by` is when the next is typed even if the prompt's mark
    /// has not come (set at the first look after the last step's record).
    Typing { draw_by: Option<Instant> },
    /// No step is left to type: all ran, or the first failure stopped them.
    Done,
    /// The running step was interrupted; its record may yet come.
    Stopped(Stop),
    /// The shell ended (how, if it was reaped in time), after an interrupt or not.
    Ended { exit: Option<Exit>, stopped: Option<Stop> },
}

/// What one look saw, and when.
pub(super) struct Saw<D: FnOnce() -> bool> {
    pub(super) now: Instant,
    pub(super) pane_running: bool,
    /// A step was typed and its record has not come.
    pub(super) step_running: bool,
    /// A step has been typed.
    pub(super) typed_any: bool,
    /// The shell has reported a prompt.
    pub(super) prompted: bool,
    /// Whether the last prompt's mark has been drawn: asked only when it decides.
    pub(super) drawn: D,
}

/// What a look does.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Act {
    /// Nothing yet: sleep until the next look.
    Wait,
    /// Type the next step.
    Type,
    /// The shell ended: take its exit (`Phase::end`); the run is over.
    End,
    /// The run is over.
    Over,
}

impl Phase {
    /// What a look does, from the phase and what it saw; sets the time the next step is typed by
    /// when its look is the first after the last step's record.
    pub(super) fn next<D: FnOnce() -> bool>(&mut self, saw: Saw<D>) -> Act {
        if !saw.pane_running {
            return Act::End;
        }
        if saw.step_running {
            return Act::Wait;
        }
        match self {
            Phase::Done | Phase::Stopped(_) | Phase::Ended { .. } => Act::Over,
            // The first step goes at once: the terminal holds it, ahead of anything typed for
            // the step to read (the shell reads its lines in order).
            Phase::Starting | Phase::Typing { .. } if !saw.typed_any => Act::Type,
            Phase::Starting => Act::Wait,
            // Each next one goes once the shell has drawn its prompt after the last one's
            // record, so that a person watching sees the prompt, the step's command once, and
            // its output; a prompt that lost its mark is waited for `PROMPT_DRAWN_WAIT`.
            Phase::Typing { .. } if !saw.prompted => Act::Wait,
            Phase::Typing { draw_by } => {
                let by = *draw_by.get_or_insert(saw.now + PROMPT_DRAWN_WAIT);
                if (saw.drawn)() || saw.now >= by { Act::Type } else { Act::Wait }
            }
        }
    }

    /// The shell showed its first prompt: says whether the run was starting, when the first
    /// step's time begins.
    pub(super) fn prompted(&mut self) -> bool {
        let starting = matches!(self, Phase::Starting);
        if starting {
            *self = Phase::Typing { draw_by: None };
        }
        starting
    }

    /// The next step was typed.
    pub(super) fn typed(&mut self) {
        if let Phase::Typing { draw_by } = self {
            *draw_by = None;
        }
    }

    /// The running step's record came; `last` when no step is left to type after it (all
    /// ran, or it failed with `stop_on_error`). An interrupted or ended run stays so.
    pub(super) fn step_ended(&mut self, last: bool) {
        if matches!(self, Phase::Starting | Phase::Typing { .. }) {
            *self = if last { Phase::Done } else { Phase::Typing { draw_by: None } };
        }
    }

    /// The running step was interrupted.
    pub(super) fn stop(&mut self, stop: Stop) {
        match self {
            Phase::Ended { stopped, .. } => *stopped = Some(stop),
            _ => *self = Phase::Stopped(stop),
        }
    }

    /// The shell ended, with `exit` if it was reaped in time.
    pub(super) fn end(&mut self, exit: Option<Exit>) {
        let stopped = match std::mem::replace(self, Phase::Done) {
            Phase::Stopped(stop) | Phase::Ended { stopped: Some(stop), .. } => Some(stop),
            _ => None,
        };
        *self = Phase::Ended { exit, stopped };
    }

    /// How the running step was interrupted, if it was.
    pub(super) fn stopped(&self) -> Option<&Stop> {
        match self {
            Phase::Stopped(stop) | Phase::Ended { stopped: Some(stop), .. } => Some(stop),
            _ => None,
        }
    }

    /// How the shell ended, if it ended before the steps were done and was reaped.
    pub(super) fn shell_exit(&self) -> Option<Exit> {
        match self {
            Phase::Ended { exit, .. } => *exit,
            _ => None,
        }
    }

    /// While the run waits for a prompt's mark between steps: the time it types by without it.
    pub(super) fn drawing_by(&self) -> Option<Instant> {
        match self {
            Phase::Typing { draw_by } => *draw_by,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
