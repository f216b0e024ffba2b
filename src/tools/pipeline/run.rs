//! A pipeline in progress: the shell that runs the steps, fed one step at a time.
//!
//! `Run::drive` types each step when the shell reports the last one done and has drawn its
//! prompt, answers or stops a step whose program asks, and interrupts the running step at the
//! deadline; it sleeps in the one `Waiter` on the shell's records, the pane's end, the prompt's
//! mark while one is drawn, the input watch's next look, the heartbeat and the call's cancel. What
//! it records — each step's exec, offsets and prompt, and how the run was stopped — is what the
//! tool's answer (`pipeline.rs`) is built from: `status` and `range` say how a step ended and
//! where its output lies.

use super::phase::{Act, Latest, Phase, Saw, Stop, progress_message, step_end};
use super::plan::PipelinePlan;
use crate::error::{Error, Result};
use crate::pane::Pane;
use crate::pane::activity::InputWatch;
use crate::pane::mark::{self, CATCH_UP};
use crate::runtime::Runtime;
use crate::shell::live::{Live, Typed};
use crate::shell::{Launch, PROMPT_DRAWN_WAIT, Prompt, Shell};
use crate::tool::{Ctx, call::Progress};
use crate::tools::answer::CommandEnd;
use crate::tools::common::asking::Asked;
use crate::tools::common::responses::{Responder, Responses};
use crate::waiter::{Drove, Look, Waiter};
use crossbeam_channel::Receiver;
use std::sync::Arc;
use std::time::Instant;

/// What fugue saw of one step.
pub(super) struct Record {
    pub(super) started: Instant,
    /// The step's exec id in the shell, and the output offset where its line was typed.
    pub(super) exec: u64,
    pub(super) typed: u64,
    /// The output offset when its record arrived: a stand-in if the end mark is missing.
    pub(super) end: u64,
    /// When its record arrived, and the prompt it reported.
    pub(super) ended: Option<(Instant, Prompt)>,
    /// Answers its program's questions that a key of its `responses` matches.
    pub(super) responder: Option<Responder>,
    /// Found asking a question its responses do not answer, with `on_input: wait`: left so.
    pub(super) held: bool,
}

/// Why one drive of the run's loop ended.
enum Over {
    /// The run is over: the shell ended, every step ran, the first failure stopped them, or a
    /// step was interrupted and is back.
    Done,
    /// The running step was found asking and interrupted (`on_input: stop`).
    Asked,
}

/// A pipeline in progress.
pub(super) struct Run<'a> {
    pub(super) plan: &'a PipelinePlan,
    pub(super) pane: Arc<Pane>,
    /// The integration of the shell that runs the steps (see `live`).
    pub(super) shell: Arc<Shell>,
    pub(super) records: Vec<Record>,
    /// Where the run stands (see `phase`).
    pub(super) phase: Phase,
    /// Each step's `responses`, until it is typed.
    pub(super) responses: Vec<Option<Responses>>,
    /// The shell's directory after the last step that ended.
    pub(super) cwd: Option<String>,
}

impl Run<'_> {
    /// Types the steps one by one as the shell reports the last one done, until they are done,
    /// the shell ends, or the deadline's interrupt and grace have passed. `Err` only for a
    /// cancelled call.
    pub(super) fn drive(&mut self, ctx: &Ctx<'_, Runtime>, deadline: Instant) -> Result<()> {
        // The shell's records and its exit, not its output, are what the run waits on.
        let wakes = [self.shell.subscribe(), self.pane.output().subscribe_status()];
        let mut waiter = Waiter::new()
            .cancel(ctx.cancel.receiver())
            .until(deadline)
            .heartbeat(ctx.progress.heartbeat());
        let watched = self.plan.stop_asking || self.responses.iter().any(Option::is_some);
        let watch = watched.then(|| InputWatch::new(&self.pane));
        let mut run = (self, watch);
        loop {
            let look = |(run, watch): &mut (&mut Self, Option<InputWatch>)| {
                run.look(watch, &wakes, ctx.progress)
            };
            let progress = |(run, _): &(&mut Self, Option<InputWatch>)| run.report(ctx.progress);
            match waiter.drive(&mut run, look, progress) {
                Drove::Done(Ok(Over::Done)) => return Ok(()),
                Drove::Done(Err(e)) => return Err(e),
                // Stopped as at the deadline: the step's record, if the interrupt brought the
                // prompt back, is taken at the next look; a step not back is killed with the pane.
                Drove::Done(Ok(Over::Asked)) => waiter.set_deadline(Some(Instant::now())),
                Drove::Deadline => run.0.overtime(&mut waiter),
                Drove::Cancelled => return Err(Error::cancelled()),
            }
        }
    }

    /// One look of the run: takes in what the shell reported and types the next step when it
    /// may, looks for a question, and says what to sleep on until the next look: the shell's
    /// records and end (`wakes`), the prompt's mark while one is drawn, the input watch's next
    /// look.
    fn look(
        &mut self,
        watch: &mut Option<InputWatch>,
        wakes: &[Receiver<()>; 2],
        progress: &Progress,
    ) -> Look<Result<Over>> {
        match self.advance(progress) {
            Ok(true) => return Look::Done(Ok(Over::Done)),
            Ok(false) => {}
            Err(e) => return Look::Done(Err(e)),
        }
        let typed = self.typed_at();
        if let Some(typed) = typed
            && self.look_for_question(watch, typed)
        {
            return Look::Done(Ok(Over::Asked));
        }
        // Between steps nothing is watched; the next step's line is typed on the record.
        let check = watch.as_ref().filter(|_| typed.is_some()).and_then(InputWatch::next_check);
        // While a prompt is being drawn, its mark is what the loop waits for.
        let drawn_at = self.phase.drawing_by().filter(|_| !self.step_running());
        let drawing = drawn_at.is_some();
        let mut on = wakes.to_vec();
        if drawing {
            on.push(self.pane.output().subscribe());
            // The mark may have come between the look at it above and the subscription.
            if self.live().prompt_drawn() {
                return Look::Again(Some(Instant::now()));
            }
        }
        Look::AgainOn([check, drawn_at].into_iter().flatten().min(), on)
    }

    /// One step of the run: takes in the shell's records and types the next step when the last
    /// one is done and the prompt is drawn. Says whether the run is over: the shell ended, every
    /// step ran or the first failure stopped them, or a step was interrupted.
    fn advance(&mut self, progress: &Progress) -> Result<bool> {
        self.take_records(progress);
        let saw = Saw {
            now: Instant::now(),
            pane_running: self.pane.is_running(),
            step_running: self.step_running(),
            typed_any: !self.records.is_empty(),
            prompted: self.shell.with(|s| s.prompts) > 0,
            drawn: || Live::new(&self.pane, &self.shell).prompt_drawn(),
        };
        match self.phase.next(saw) {
            Act::Wait => Ok(false),
            Act::Type => self.type_next(progress).map(|()| false),
            Act::End => {
                self.phase.end(self.pane.wait_exit(Instant::now() + CATCH_UP));
                Ok(true)
            }
            Act::Over => Ok(true),
        }
    }

    /// When the running step was last given input — its line, or an answer from its responses —
    /// which may still sit unread in the terminal while the shell's last print is long past.
    /// `None` between steps and for a step held asking (`on_input: wait`): only a running step is
    /// watched.
    fn typed_at(&self) -> Option<Instant> {
        let record = self.records.last().filter(|r| r.ended.is_none() && !r.held)?;
        let answered = record.responder.as_ref().and_then(Responder::answered_at);
        Some(record.started.max(answered.unwrap_or(record.started)))
    }

    /// The watch's look, when due: a question the step's responses answer is answered and
    /// watched for anew; one they do not stops the step (`on_input: stop`, then `true`) or holds
    /// it (`wait`).
    fn look_for_question(&mut self, watch: &mut Option<InputWatch>, typed: Instant) -> bool {
        let Some(check) = watch.as_mut() else { return false };
        check.typed_at(typed);
        if !check.check() {
            return false;
        }
        if self.respond(check) {
            *watch = Some(InputWatch::new(&self.pane));
        } else if self.plan.stop_asking {
            let asked = Asked::now(&self.pane, check, self.plan.tails.bytes);
            *watch = None;
            self.interrupt(Some(asked));
            return true;
        } else {
            if let Some(record) = self.records.last_mut() {
                record.held = true;
            }
        }
        false
    }

    /// The deadline passed: the running step is interrupted, with the interrupt's own wait as its
    /// grace; past that, the pane is closed, and its end is what the loop waits for.
    fn overtime(&mut self, waiter: &mut Waiter) {
        if self.phase.stopped().is_some() {
            self.pane.close();
            waiter.set_deadline(None);
        } else {
            self.interrupt(None);
            waiter.set_deadline(Some(Instant::now()));
        }
    }

    /// The running step's program asks: answers it from the step's responses, if a key matches.
    fn respond(&mut self, watch: &InputWatch) -> bool {
        let Some(record) = self.records.last_mut() else { return false };
        let Some(responder) = record.responder.as_mut() else { return false };
        let begin = mark::locate(&self.pane, &self.shell.begin_mark(record.exec), record.typed);
        if let Some((_, begin)) = begin {
            responder.begins_at(begin);
        }
        responder.reply(&self.pane, watch)
    }

    /// Whether a step was typed and its record has not come: only then can a question be the
    /// step's.
    fn step_running(&self) -> bool {
        self.records.last().is_some_and(|r| r.ended.is_none())
    }

    /// Takes in the record of the running step, if the shell has written it.
    fn take_records(&mut self, progress: &Progress) {
        // The first step, typed while the shell started, begins when the shell's first prompt
        // reads it: its duration is its own, not the start-up files'.
        if self.shell.with(|s| s.prompts) > 0
            && self.phase.prompted()
            && let [first] = self.records.as_mut_slice()
        {
            first.started = Instant::now();
        }
        let Some(record) = self.records.last_mut().filter(|r| r.ended.is_none()) else { return };
        let exec = record.exec;
        let Some(prompt) =
            self.shell.with(|s| s.recent.iter().rev().find(|p| p.exec == exec).cloned())
        else {
            return;
        };
        record.end = self.pane.output().end();
        self.cwd = Some(prompt.cwd.clone());
        let failed = prompt.status != 0;
        record.ended = Some((Instant::now(), prompt));
        self.shell.forget_exec(exec);
        let last = self.records.len() == self.plan.steps.len();
        self.phase.step_ended(last || (failed && self.plan.stop_on_error));
        self.report(progress);
    }

    /// Types the next step.
    fn type_next(&mut self, progress: &Progress) -> Result<()> {
        self.phase.typed();
        let step = &self.plan.steps[self.records.len()].command;
        let started = Instant::now();
        let Typed { id: exec, at: typed } = self.live().run_step(step)?;
        let responder = self.responses[self.records.len()].take().map(|r| Responder::new(r, typed));
        let record =
            Record { started, exec, typed, end: typed, ended: None, responder, held: false };
        self.records.push(record);
        self.report(progress);
        Ok(())
    }

    /// The deadline, or a question: interrupt the running step, as Ctrl-C would, and wait for
    /// the shell's prompt (see `Live::interrupt`); a step not back by then is killed with the
    /// pane when the loop next looks.
    fn interrupt(&mut self, asked: Option<Asked>) {
        let end = self.pane.output().end();
        self.phase.stop(Stop { at: Instant::now(), end, asked });
        self.live().interrupt();
    }

    /// The question the running step was stopped at, if it was.
    pub(super) fn asked(&self) -> Option<&Asked> {
        self.phase.stopped().and_then(|stop| stop.asked.as_ref())
    }

    /// The pane and the shell that runs the steps.
    fn live(&self) -> Live<'_> {
        Live::new(&self.pane, &self.shell)
    }

    /// Replaces the steps' shell with the user's, interactive, in a kept pane, and waits until
    /// the shell has read that line, since the steps' integration (the file it reads) goes when
    /// the call ends.
    pub(super) fn hand_over(&self, user: &str, launch: Launch) {
        if !self.pane.is_running() || self.step_running() {
            return;
        }
        self.live().wait_prompt_drawn(Instant::now() + PROMPT_DRAWN_WAIT);
        if let Ok(typed) = self.live().replace(user, &launch) {
            mark::find(&self.pane, &self.shell.begin_mark(typed.id), typed.at);
        }
    }

    /// Waits until the output of the last step that ended is in the pane's output state, so that
    /// an answer saying a step is done means its output is readable: the hooks print the end mark
    /// to the terminal before they write the record, but the record can arrive first, and the
    /// terminal's bytes may still be on their way through the reader.
    pub(super) fn settle(&self) {
        if let Some(i) = self.records.iter().rposition(|r| r.ended.is_some()) {
            self.range(i);
        }
    }

    fn report(&self, progress: &Progress) {
        if !progress.is_wanted() {
            return;
        }
        let total = self.plan.steps.len();
        let done = self.records.iter().filter(|r| r.ended.is_some()).count();
        let n = self.records.len();
        let latest = match self.records.last() {
            None => Latest::None,
            Some(record) => {
                let name = &self.plan.steps[n - 1].name;
                match &record.ended {
                    None => {
                        Latest::Running { n, name, secs: record.started.elapsed().as_secs_f64() }
                    }
                    Some((_, prompt)) => Latest::Ended { name, rc: prompt.status },
                }
            }
        };
        progress.report(done as f64, Some(total as f64), &progress_message(done, total, latest));
    }

    pub(super) fn status(&self, i: usize) -> CommandEnd {
        let ended = self.records[i].ended.as_ref().map(|(at, prompt)| (*at, prompt.status));
        let stopped = self.phase.stopped().map(Stop::says);
        step_end(ended, stopped, self.phase.shell_exit().is_some())
    }

    /// The output offsets of step `i`: from its begin mark to its end mark (or to the end of the
    /// output, when the step never finished).
    pub(super) fn range(&self, i: usize) -> (u64, u64) {
        let record = &self.records[i];
        let from = mark::find(&self.pane, &self.shell.begin_mark(record.exec), record.typed)
            .map_or(record.typed, |(_, end)| end);
        let mut to = match &record.ended {
            Some((_, prompt)) => mark::find(&self.pane, &self.shell.end_mark(prompt), from)
                .map_or(record.end, |(start, _)| start),
            None => self.pane.output().end(),
        };
        if let Some(stop) = self.phase.stopped()
            && matches!(self.status(i), CommandEnd::Timeout | CommandEnd::Input)
        {
            to = to.min(stop.end);
        }
        (from, to.max(from))
    }
}
