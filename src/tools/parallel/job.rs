//! One command of `fugue_run_parallel` and where it stands: refused (its pane never started), or
//! started and then running, ended on its own, timed out or stopped at its question. The steps
//! between those phases are pure (`Phase::next`), as are the status each
//! command's result gives and the run's status; the looks at the pane that feed them are
//! `Started`'s.

use crate::error::Error;
use crate::pane::Pane;
use crate::pane::activity::InputWatch;
use crate::pane::exit::Exit;
use crate::tools::answer::{CommandEnd, RunStatus};
use crate::tools::common::asking::Asked;
use crate::tools::common::responses::Responder;
use crossbeam_channel::Receiver;
use std::sync::Arc;
use std::time::Instant;

/// Where one command stands.
pub(super) enum Job {
    /// Its pane could not start: why.
    Refused(Error),
    /// Its pane started: the pane, what watches it (boxed: a refused one is an error's size),
    /// and its phase.
    Started(Box<Started>, Phase),
}

/// A command whose pane started.
pub(super) struct Started {
    pub(super) pane: Arc<Pane>,
    /// Speaks when its process ends.
    pub(super) events: Receiver<()>,
    /// Watches for its program asking, with `on_input: stop` or `responses`; gone once it is
    /// left asking (`on_input: wait`).
    pub(super) watch: Option<InputWatch>,
    /// Answers its program's questions that a key matches.
    pub(super) responder: Option<Responder>,
}

/// The phase of a command that started.
pub(super) enum Phase {
    /// Its process runs.
    Running,
    /// Its process ended on its own.
    Ended,
    /// The deadline killed it, then.
    TimedOut(Instant),
    /// It was found asking a question its responses did not answer, and stopped.
    Asked(Asked),
}

/// What one look saw of a running command.
#[derive(Clone, Copy, Debug)]
pub(super) enum Saw {
    /// Its process runs and asks nothing the watch has seen.
    Runs,
    /// Its process ended.
    Exited,
    /// Its program asked, and its responses answered.
    Answered,
    /// Its program asks a question its responses do not answer.
    Asks,
}

/// What the call does with a command after a look.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Nothing: it runs on, or its phase is over.
    Wait,
    /// It ended on its own.
    End,
    /// Watch it anew from the answer just typed (which may still sit unread).
    Rewatch,
    /// Stop it at its question (`on_input: stop`).
    Stop,
    /// Leave it asking, unwatched (`on_input: wait`).
    Leave,
}

impl Phase {
    /// What a look that saw `saw` leads to. Only a running command moves: one that ended or was
    /// stopped stays as it is.
    pub(super) fn next(&self, saw: Saw, stop_asking: bool) -> Next {
        match (self, saw) {
            (Phase::Running, Saw::Exited) => Next::End,
            (Phase::Running, Saw::Answered) => Next::Rewatch,
            (Phase::Running, Saw::Asks) if stop_asking => Next::Stop,
            (Phase::Running, Saw::Asks) => Next::Leave,
            _ => Next::Wait,
        }
    }

    /// When fugue stopped it, if it did.
    pub(super) fn stopped_at(&self) -> Option<Instant> {
        match self {
            Phase::TimedOut(at) => Some(*at),
            Phase::Asked(asked) => Some(asked.at),
            Phase::Running | Phase::Ended => None,
        }
    }

    /// How a started command ended: stopped, or as its exit says.
    pub(super) fn end(&self, exit: Option<Exit>) -> CommandEnd {
        match (self, exit) {
            (Phase::Asked(_), _) => CommandEnd::Input,
            (Phase::TimedOut(_), _) => CommandEnd::Timeout,
            (Phase::Running | Phase::Ended, Some(exit)) if exit.success() => CommandEnd::Ok,
            (Phase::Running | Phase::Ended, _) => CommandEnd::Failed,
        }
    }
}

impl Job {
    /// Its phase, once started.
    pub(super) fn phase(&self) -> Option<&Phase> {
        match self {
            Job::Refused(_) => None,
            Job::Started(_, phase) => Some(phase),
        }
    }

    /// Whether its process runs, as the last look saw it.
    pub(super) fn running(&self) -> bool {
        matches!(self.phase(), Some(Phase::Running))
    }

    /// The question it was stopped at, if it was.
    pub(super) fn asked(&self) -> Option<&Asked> {
        match self.phase() {
            Some(Phase::Asked(asked)) => Some(asked),
            _ => None,
        }
    }
}

/// The status of a whole run: every command ended (`all_ended`; one stopped at its question
/// makes it `input`), or the deadline passed: `timeout` if it stopped every command, `partial` if
/// some had ended (or never started) before it. `phases` are the commands' (`None`: refused).
pub(super) fn run_status(all_ended: bool, phases: &[Option<&Phase>]) -> RunStatus {
    let asked = phases.iter().any(|p| matches!(p, Some(Phase::Asked(_))));
    let all_timed_out = phases.iter().all(|p| matches!(p, Some(Phase::TimedOut(_))));
    match (all_ended, asked, all_timed_out) {
        (true, true, _) => RunStatus::Input,
        (true, false, _) => RunStatus::Completed,
        (false, _, false) => RunStatus::Partial,
        (false, _, true) => RunStatus::Timeout,
    }
}

impl Started {
    /// One look at the command: whether its process ended, and whether its program asks a
    /// question (the watch looks only when due). A question its responses answer is answered
    /// here.
    pub(super) fn look(&mut self) -> Saw {
        if !self.pane.is_running() {
            return Saw::Exited;
        }
        if !self.watch.as_mut().is_some_and(InputWatch::check) {
            return Saw::Runs;
        }
        let answered = match (self.responder.as_mut(), self.watch.as_ref()) {
            (Some(responder), Some(watch)) => responder.reply(&self.pane, watch),
            _ => false,
        };
        if answered { Saw::Answered } else { Saw::Asks }
    }

    /// Watches anew from an answer just typed.
    pub(super) fn rewatch(&mut self) {
        let mut watch = InputWatch::new(&self.pane);
        watch.typed_at(Instant::now());
        self.watch = Some(watch);
    }

    /// When its watch should look next.
    pub(super) fn next_check(&self) -> Option<Instant> {
        self.watch.as_ref()?.next_check()
    }
}
