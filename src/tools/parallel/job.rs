//! One command of `fugue_run_parallel` and where it stands: refused (its pane never started), or
//! started and then running, ended on its own, timed out or stopped at its question. The steps
//! between those phases are pure (`JobPhase::next`), as are the status each
//! command's result gives and the run's status; the looks at the pane that feed them are
//! `StartedJob`'s.

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
pub(super) enum JobState {
    /// Its pane could not start: why.
    Refused(Error),
    /// Its pane started: the pane, what watches it (boxed: a refused one is an error's size),
    /// and its phase.
    Started(Box<StartedJob>, JobPhase),
}

/// A command whose pane started.
pub(super) struct StartedJob {
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
pub(super) enum JobPhase {
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
pub(super) enum JobLook {
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
pub(super) enum JobMove {
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

impl JobPhase {
    /// What a look that saw `saw` leads to. Only a running command moves: one that ended or was
    /// stopped stays as it is.
    pub(super) fn next(&self, saw: JobLook, stop_asking: bool) -> JobMove {
        match (self, saw) {
            (JobPhase::Running, JobLook::Exited) => JobMove::End,
            (JobPhase::Running, JobLook::Answered) => JobMove::Rewatch,
            (JobPhase::Running, JobLook::Asks) if stop_asking => JobMove::Stop,
            (JobPhase::Running, JobLook::Asks) => JobMove::Leave,
            _ => JobMove::Wait,
        }
    }

    /// When fugue stopped it, if it did.
    pub(super) fn stopped_at(&self) -> Option<Instant> {
        match self {
            JobPhase::TimedOut(at) => Some(*at),
            JobPhase::Asked(asked) => Some(asked.at),
            JobPhase::Running | JobPhase::Ended => None,
        }
    }

    /// How a started command ended: stopped, or as its exit says.
    pub(super) fn end(&self, exit: Option<Exit>) -> CommandEnd {
        match (self, exit) {
            (JobPhase::Asked(_), _) => CommandEnd::Input,
            (JobPhase::TimedOut(_), _) => CommandEnd::Timeout,
            (JobPhase::Running | JobPhase::Ended, Some(exit)) if exit.success() => CommandEnd::Ok,
            (JobPhase::Running | JobPhase::Ended, _) => CommandEnd::Failed,
        }
    }
}

impl JobState {
    /// Its phase, once started.
    pub(super) fn phase(&self) -> Option<&JobPhase> {
        match self {
            JobState::Refused(_) => None,
            JobState::Started(_, phase) => Some(phase),
        }
    }

    /// Whether its process runs, as the last look saw it.
    pub(super) fn running(&self) -> bool {
        matches!(self.phase(), Some(JobPhase::Running))
    }

    /// The question it was stopped at, if it was.
    pub(super) fn asked(&self) -> Option<&Asked> {
        match self.phase() {
            Some(JobPhase::Asked(asked)) => Some(asked),
            _ => None,
        }
    }
}

/// The status of a whole run: every command ended (`all_ended`; one stopped at its question
/// makes it `input`), or the deadline passed: `timeout` if it stopped every command, `partial` if
/// some had ended (or never started) before it. `phases` are the commands' (`None`: refused).
pub(super) fn run_status(all_ended: bool, phases: &[Option<&JobPhase>]) -> RunStatus {
    let asked = phases.iter().any(|p| matches!(p, Some(JobPhase::Asked(_))));
    let all_timed_out = phases.iter().all(|p| matches!(p, Some(JobPhase::TimedOut(_))));
    match (all_ended, asked, all_timed_out) {
        (true, true, _) => RunStatus::Input,
        (true, false, _) => RunStatus::Completed,
        (false, _, false) => RunStatus::Partial,
        (false, _, true) => RunStatus::Timeout,
    }
}

impl StartedJob {
    /// One look at the command: whether its process ended, and whether its program asks a
    /// question (the watch looks only when due). A question its responses answer is answered
    /// here.
    pub(super) fn look(&mut self) -> JobLook {
        if !self.pane.is_running() {
            return JobLook::Exited;
        }
        if !self.watch.as_mut().is_some_and(InputWatch::check) {
            return JobLook::Runs;
        }
        let answered = match (self.responder.as_mut(), self.watch.as_ref()) {
            (Some(responder), Some(watch)) => responder.reply(&self.pane, watch),
            _ => false,
        };
        if answered { JobLook::Answered } else { JobLook::Asks }
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
