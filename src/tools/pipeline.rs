//! `fugue_run_pipeline`: run steps one after another in one pane, in one shell.
//!
//! The steps run in a live shell, through the same integration as `fugue_exec` (`crate::shell`):
//! the pane starts an interactive shell with fugue's hooks, and each step goes into a 0600 file
//! that a fixed typed line reads and `eval`s in the shell itself, so `cd` and `export` carry over
//! and the terminal stays the steps' stdin. The shell's prompt record after a step, written to a
//! FIFO only fugue reads, gives its exit status and directory: the status never passes through the
//! terminal, so no output can fake it. The marks the hooks print, tagged with a secret nonce, tell
//! fugue exactly where the step's output begins and ends, so the `output_tail` of a failed step is
//! that step's output and nothing else.
//!
//! The steps run in the user's shell when it speaks the POSIX language, else in /bin/sh (fish);
//! a kept pane then becomes the user's shell when the steps are done. fugue types the next step
//! only once the previous one's record has come, and stops typing at the first failure
//! (`stop_on_error`). The call blocks in `select!` on the shell's records, the pane's end, the
//! cancel channel, the deadline and a heartbeat. At the deadline it interrupts the running step as
//! every interrupt of a command goes (`shell::Live::interrupt`: SIGINT to the terminal's
//! foreground, as Ctrl-C): an interactive shell survives it and shows its prompt again; what does
//! not stop within a grace is killed. A step whose program — or the shell itself, in
//! `read` — waits for someone to type is answered from the step's `responses` when a key matches
//! the question, and otherwise interrupted the same way when the next look at /proc finds it asking
//! (unless `on_input: wait`) and reported `input`.

mod plan;

use crate::error::{Error, ErrorKind, Result};
use crate::ids::{new_id, short_id};
use crate::mux::{ORCHESTRATION_SESSION, PaneArgs, Place};
use crate::orchestrate::asking::{self, Asked, Told};
use crate::orchestrate::responses::{self, Responder, Responses};
use crate::orchestrate::{run_schema, tail};
use crate::pane::Pane;
use crate::pane::activity::{InputWatch, quiet_period};
use crate::pane::budget::Fitted;
use crate::pane::exit::{Exit, ExitFields, SignalField};
use crate::pane::mark::{self, CATCH_UP};
use crate::runtime::{Ctx, Tool};
use crate::shell::live::{Live, Typed};
use crate::shell::{Launch, PROMPT_DRAWN_WAIT, Prompt, Shell};
use crate::tempdir::PrivateDir;
use crate::tool::args::Args;
use crate::tool::call::Progress;
use crate::tool::choice::Choice;
use crate::tool::{Answer, RUNS, schema::*};
use crate::tools::answer::{CommandEnd, CommandResult, RunStatus, command_result_schema};
use crate::waiter::{Waiter, Woke};
use crossbeam_channel::never;
use plan::{CLEANUP, MAX_STEPS, Plan, STOP_ON_ERROR, TIMEOUT_MS, parse_plan};
use serde::Serialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

pub(crate) const TOOL: Tool = Tool {
    name: "fugue_run_pipeline",
    title: "Run a command pipeline",
    description: "Run steps one after another in one pane and one shell (cd, export carry over). \
                  Per step: exact exit_code, duration_ms, status (exited: it ended \
                  the shell). failed_at names the first failure, \
                  output_tail holds its last lines + errors; tails=all gives every step its \
                  output_tail. timeout_ms interrupts the running step; so does a step waiting for \
                  keyboard input its responses do not answer (status input, program, its \
                  question in output_tail; on_input=wait lets it wait). cwd: the shell's \
                  directory after the last step. The pane stays, with an interactive shell for \
                  follow-ups, unless cleanup.",
    hints: RUNS,
    input: || {
        let step = object(
            &[
                ("command", typed("string")),
                ("name", string("Default step-N")),
                responses::schema_ref("As fugue_exec's"),
            ],
            &["command"],
        );
        let [timeout, tail_lines, tails, keep] = run_schema(TIMEOUT_MS);
        object(
            &[
                (
                    "commands",
                    json!({"type": "array", "items": step, "minItems": 1, "maxItems": MAX_STEPS}),
                ),
                ("cwd", typed("string")),
                ("env", env()),
                ("stop_on_error", boolean_or("Stop at the first failing step", STOP_ON_ERROR)),
                timeout,
                ("cleanup", boolean_or("Close the pane at the end", CLEANUP)),
                ("sandbox", super::sandbox_arg()),
                tail_lines,
                tails,
                keep,
                asking::schema(),
            ],
            &["commands"],
        )
    },
    output: || {
        result(&[
            ("status", RunStatus::words()),
            ("pane_id", typed("string")),
            ("steps", command_result_schema()),
            ("cwd", typed("string")),
            ("program", typed("string")),
            ("total_duration_ms", typed("integer")),
        ])
    },
    durable: true,
    asks: false,
    call: run_pipeline,
};

/// What fugue saw of one step.
struct Record {
    started: Instant,
    /// The step's exec id in the shell, and the output offset where its line was typed.
    exec: u64,
    typed: u64,
    /// The output offset when its record arrived: a stand-in if the end mark is missing.
    end: u64,
    /// When its record arrived, and the prompt it reported.
    ended: Option<(Instant, Prompt)>,
    /// Answers its program's questions that a key of its `responses` matches.
    responder: Option<Responder>,
}

/// A pipeline in progress.
struct Run<'a> {
    plan: &'a Plan,
    pane: Arc<Pane>,
    /// The integration of the shell that runs the steps (see `live`).
    shell: Arc<Shell>,
    records: Vec<Record>,
    /// The shell has shown its first prompt.
    prompted: bool,
    /// When the next step is typed even if the prompt's mark has not come.
    typed_on: Option<Instant>,
    /// No step is left to type: all ran, or the first failure stopped them.
    done: bool,
    /// The shell ended before the steps were done: a step exited it or something killed it.
    shell_exit: Option<Exit>,
    /// When the deadline passed (or a question was found) and the running step was interrupted,
    /// and the end of the output then: what the shell prints on the interrupt is not the step's.
    interrupted: Option<Instant>,
    interrupted_end: u64,
    /// When a step was found asking and interrupted.
    asked: Option<Asked>,
    /// Each step's `responses`, until it is typed.
    responses: Vec<Option<Responses>>,
    /// The step (its exec id) left waiting at a question, with `on_input: wait`.
    held: Option<u64>,
    /// The shell's directory after the last step that ended.
    cwd: Option<String>,
}

fn run_pipeline(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Answer> {
    let started = Instant::now();
    let mut plan = parse_plan(args, ctx.cwd)?;
    let responses: Vec<Option<Responses>> =
        plan.steps.iter_mut().map(|s| s.responses.take()).collect();
    let sandbox = super::asked_sandbox(args)?;
    let user = &ctx.config.shell;
    let runs_steps = crate::shell::posix(user);
    // The call's own directory, holding its steps as they were given, for the call's lifetime.
    let dir = PrivateDir::create(&ctx.temp_dirs)?;
    for (i, step) in plan.steps.iter().enumerate() {
        dir.write(&(i + 1).to_string(), &step.command)?;
    }
    let (shell, launch) = Shell::prepare(runs_steps, &plan.env, &ctx.temp_dirs)?
        .ok_or_else(|| Error::internal(format!("no shell integration for {runs_steps}")))?;
    // A kept pane becomes the user's shell; when that is not the one that runs the steps, it is
    // started at the end, with fugue's integration made now so the pane owns it from its start.
    let handover = !plan.cleanup && runs_steps != user.as_str();
    let kept = match handover {
        true if ctx.config.shell_integration => Shell::prepare(user, &plan.env, &ctx.temp_dirs)?,
        _ => None,
    };
    let owned = match (&kept, handover) {
        (Some((kept, _)), _) => Some(kept.clone()),
        (None, false) if ctx.config.shell_integration => Some(shell.clone()),
        _ => None,
    };
    // Reachable from inside a sandbox: the steps and the integrations' records.
    let keep = [Some(dir.path.clone()), shell.dir(), kept.as_ref().and_then(|(k, _)| k.dir())];
    let keep = keep.into_iter().flatten();
    let pane = start_pane(ctx, &plan, runs_steps, &launch, owned, keep, sandbox)?;
    let mut run = Run {
        plan: &plan,
        pane,
        shell,
        records: Vec::new(),
        prompted: false,
        typed_on: None,
        done: false,
        shell_exit: None,
        interrupted: None,
        interrupted_end: 0,
        asked: None,
        responses,
        held: None,
        cwd: None,
    };
    let outcome = run.drive(ctx, started + plan.timeout);
    if outcome.is_err() {
        let _ = ctx.mux.close_pane(&run.pane.id);
    }
    outcome?;
    run.settle();
    let answer = run.answer(started).map(|mut answer| {
        if answer.status == RunStatus::Failed {
            let output = answer.told.text().unwrap_or_default();
            answer.sandbox_denied = crate::sandbox::denied(run.pane.sandbox, output);
        }
        answer
    });
    // A shell that never ran a step leaves nothing worth inspecting.
    if plan.cleanup || answer.is_err() {
        let _ = ctx.mux.close_pane(&run.pane.id);
    } else if handover {
        run.hand_over(user, kept.map(|(_, launch)| launch).unwrap_or_default());
    }
    Answer::of(&answer?)
}

/// `fugue_run_pipeline`'s answer.
#[derive(Serialize)]
struct PipelineAnswer {
    status: RunStatus,
    pane_id: String,
    steps: Vec<CommandResult>,
    total_duration_ms: u64,
    /// The shell's directory after the last step that ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
    /// The first step that did not end `ok`, and its last lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    failed_at: Option<String>,
    #[serde(flatten)]
    told: Told,
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox_denied: Option<String>,
}

/// The pipeline's pane: a window of its own in the orchestration session, running the steps'
/// shell, interactive and with fugue's integration.
fn start_pane(
    ctx: &Ctx<'_>,
    plan: &Plan,
    shell: &str,
    launch: &Launch,
    owned: Option<Arc<Shell>>,
    keep: impl Iterator<Item = std::path::PathBuf>,
    sandbox: Option<crate::sandbox::Mode>,
) -> Result<Arc<Pane>> {
    let session = ctx.mux.ensure_session(ORCHESTRATION_SESSION)?;
    // The pane runs the line with the user's shell.
    let mut env = plan.env.clone();
    let command = launch.start_line(&ctx.config.shell, shell, &mut env);
    let args = PaneArgs {
        name: None,
        command: Some(command),
        cwd: plan.cwd.clone(),
        env,
        integration: false,
        sandbox,
        roots: None,
    };
    let window = format!("run-pipeline-{}", short_id(&new_id()));
    let place = Place::NewWindow { session: &session, name: Some(window) };
    let mut reserved = ctx
        .mux
        .reserve(&place, &[args])
        .pop()
        .ok_or_else(|| Error::internal("no reservation for the pipeline's pane"))??;
    reserved.show_as(plan.shown());
    keep.for_each(|dir| reserved.keep(dir));
    if let Some(shell) = owned {
        reserved.with_shell(shell);
    }
    ctx.mux.start(reserved)
}

impl Run<'_> {
    /// Types the steps one by one as the shell reports the last one done, until they are done,
    /// the shell ends, or the deadline's interrupt and grace have passed. `Err` only for a
    /// cancelled call.
    fn drive(&mut self, ctx: &Ctx<'_>, deadline: Instant) -> Result<()> {
        let records = self.shell.subscribe();
        // The shell's exit, not its output, is what the loop condition needs to see.
        let ending = self.pane.output().subscribe_status();
        let mut waiter = Waiter::new()
            .cancel(ctx.cancel.receiver())
            .until(deadline)
            .heartbeat(ctx.progress.heartbeat());
        let watched = self.plan.stop_asking || self.responses.iter().any(Option::is_some);
        let mut watch = watched.then(|| InputWatch::new(&self.pane, quiet_period()));
        loop {
            if self.advance(ctx.progress)? {
                return Ok(());
            }
            let typed = self.typed_at();
            if let Some(typed) = typed
                && self.look_for_question(&mut watch, typed)
            {
                // Stopped as at the deadline: the step's record, if the interrupt brought the
                // prompt back, is taken at the top; a step not back is killed with the pane.
                waiter.set_deadline(Some(Instant::now()));
                continue;
            }
            // Between steps nothing is watched; the next step's line is typed on the record.
            let check = watch.as_ref().filter(|_| typed.is_some()).and_then(InputWatch::next_check);
            // While a prompt is being drawn, its mark is what the loop waits for.
            let drawing = !self.step_running() && self.typed_on.is_some();
            let printed = if drawing { self.pane.output().subscribe() } else { never() };
            // The mark may have come between the look at it above and the subscription.
            if drawing && self.live().prompt_drawn() {
                continue;
            }
            let drawn_at = self.typed_on.filter(|_| drawing);
            let look = [check, drawn_at].into_iter().flatten().min();
            match waiter.sleep_on(&[&records, &ending, &printed], look) {
                Woke::Look => {}
                Woke::Heartbeat => self.report(ctx.progress),
                Woke::Cancelled => return Err(Error::cancelled()),
                Woke::Deadline => self.overtime(&mut waiter),
            }
        }
    }

    /// One step of the run: takes in the shell's records and types the next step when the last
    /// one is done and the prompt is drawn. Says whether the run is over: the shell ended, every
    /// step ran or the first failure stopped them, or a step was interrupted.
    fn advance(&mut self, progress: &Progress) -> Result<bool> {
        self.take_records(progress);
        if !self.pane.is_running() {
            self.shell_exit = self.pane.wait_exit(Instant::now() + CATCH_UP);
            return Ok(true);
        }
        if self.step_running() {
            return Ok(false);
        }
        if self.done || self.interrupted.is_some() {
            return Ok(true);
        }
        // The first step is typed at once, before the shell's first prompt: the terminal holds
        // it, ahead of anything typed for the step to read (the shell reads its lines in order).
        // Each next one goes once the shell has drawn its prompt after the last one's record, so
        // that a person watching sees the prompt, the step's command once, and its output.
        if self.records.is_empty() || self.prompt_ready() {
            self.type_next(progress)?;
        }
        Ok(false)
    }

    /// When the running step was last given input — its line, or an answer from its responses —
    /// which may still sit unread in the terminal while the shell's last print is long past.
    /// `None` between steps and for a step held asking (`on_input: wait`): only a running step is
    /// watched.
    fn typed_at(&self) -> Option<Instant> {
        let record =
            self.records.last().filter(|r| r.ended.is_none() && self.held != Some(r.exec))?;
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
        if self.respond() {
            *watch = Some(InputWatch::new(&self.pane, quiet_period()));
        } else if self.plan.stop_asking {
            self.asked = Some(Asked::now(&self.pane, check));
            *watch = None;
            self.interrupt();
            return true;
        } else {
            self.held = self.records.last().map(|r| r.exec);
        }
        false
    }

    /// The deadline passed: the running step is interrupted, with the interrupt's own wait as its
    /// grace; past that, the pane is closed, and its end is what the loop waits for.
    fn overtime(&mut self, waiter: &mut Waiter) {
        if self.interrupted.is_some() {
            self.pane.close();
            waiter.set_deadline(None);
        } else {
            self.interrupt();
            waiter.set_deadline(Some(Instant::now()));
        }
    }

    /// The running step's program asks: answers it from the step's responses, if a key matches.
    fn respond(&mut self) -> bool {
        let Some(record) = self.records.last_mut() else { return false };
        let Some(responder) = record.responder.as_mut() else { return false };
        let begin = mark::locate(&self.pane, &self.shell.begin_mark(record.exec), record.typed);
        if let Some((_, begin)) = begin {
            responder.begins_at(begin);
        }
        responder.reply(&self.pane)
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
        if !self.prompted && self.shell.with(|s| s.prompts) > 0 {
            self.prompted = true;
            if let [first] = self.records.as_mut_slice() {
                first.started = Instant::now();
            }
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
        if self.records.len() == self.plan.steps.len() || (failed && self.plan.stop_on_error) {
            self.done = true;
        }
        self.report(progress);
    }

    /// Whether the next step can be typed: the shell reported a prompt and drew it (its mark came),
    /// or `PROMPT_DRAWN_WAIT` passed since the report for a prompt that lost its mark.
    fn prompt_ready(&mut self) -> bool {
        if self.shell.with(|s| s.prompts) == 0 {
            return false;
        }
        let by = *self.typed_on.get_or_insert_with(|| Instant::now() + PROMPT_DRAWN_WAIT);
        self.live().prompt_drawn() || Instant::now() >= by
    }

    /// Types the next step.
    fn type_next(&mut self, progress: &Progress) -> Result<()> {
        self.typed_on = None;
        let step = &self.plan.steps[self.records.len()].command;
        let started = Instant::now();
        let Typed { id: exec, at: typed } = self.live().run_step(step)?;
        let responder = self.responses[self.records.len()].take().map(|r| Responder::new(r, typed));
        self.records.push(Record { started, exec, typed, end: typed, ended: None, responder });
        self.report(progress);
        Ok(())
    }

    /// The deadline, or a question: interrupt the running step, as Ctrl-C would, and wait for
    /// the shell's prompt (see `Live::interrupt`); a step not back by then is killed with the
    /// pane when the loop next looks.
    fn interrupt(&mut self) {
        self.interrupted = Some(Instant::now());
        self.interrupted_end = self.pane.output().end();
        self.live().interrupt();
    }

    /// The pane and the shell that runs the steps.
    fn live(&self) -> Live<'_> {
        Live::new(&self.pane, &self.shell)
    }

    /// Replaces the steps' shell with the user's, interactive, in a kept pane, and waits until
    /// the shell has read that line, since the steps' integration (the file it reads) goes when
    /// the call ends.
    fn hand_over(&self, user: &str, launch: Launch) {
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
    fn settle(&self) {
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
        let message = match self.records.last() {
            Some(record) if record.ended.is_none() => format!(
                "step {}/{total} {} running {:.0}s",
                self.records.len(),
                self.plan.steps[self.records.len() - 1].name,
                record.started.elapsed().as_secs_f64()
            ),
            Some(record) => {
                let rc = record.ended.as_ref().map_or(0, |(_, p)| p.status);
                let name = &self.plan.steps[self.records.len() - 1].name;
                format!("{done}/{total} steps done; {name} exit {rc}")
            }
            None => format!("0/{total} steps done"),
        };
        progress.report(done as f64, Some(total as f64), &message);
    }

    /// The answer: one entry per step that ran, the first failure, and its output.
    fn answer(&self, started: Instant) -> Result<PipelineAnswer> {
        if self.records.is_empty() && self.interrupted.is_none() {
            return Err(self.no_start());
        }
        let statuses: Vec<CommandEnd> = (0..self.records.len()).map(|i| self.status(i)).collect();
        let steps = (0..self.records.len()).map(|i| self.step(i, statuses[i])).collect();
        let failed = statuses.iter().position(|s| *s != CommandEnd::Ok);
        let status = if self.asked.is_some() {
            RunStatus::Input
        } else if self.interrupted.is_some() {
            RunStatus::Timeout
        } else if failed.is_some() || self.records.len() < self.plan.steps.len() {
            RunStatus::Failed
        } else {
            RunStatus::Completed
        };
        let mut answer = PipelineAnswer {
            status,
            pane_id: self.pane.id.clone(),
            steps,
            total_duration_ms: started.elapsed().as_millis() as u64,
            cwd: self.cwd.clone(),
            failed_at: None,
            told: Told::default(),
            sandbox_denied: None,
        };
        if let Some(i) = failed {
            answer.failed_at = Some(self.plan.steps[i].name.clone());
            let (from, mut to) = self.range(i);
            let asked = self.asked.as_ref().filter(|_| statuses[i] == CommandEnd::Input);
            if let Some(asked) = asked {
                // The question, not what the interrupted program printed as it went.
                to = asked.end.clamp(from, to);
            }
            let tail = self.tail((from, to));
            answer.told = match asked {
                Some(asked) => asked.told(tail),
                None => asking::told(tail),
            };
        }
        Ok(answer)
    }

    fn status(&self, i: usize) -> CommandEnd {
        let ended = self.records[i].ended.as_ref().map(|(at, prompt)| (*at, prompt.status));
        // A step that had not ended when the deadline passed timed out, whatever it said after;
        // one that had not ended when it was found asking was stopped for its question.
        if let Some(at) = self.interrupted
            && ended.is_none_or(|(end, _)| end >= at)
        {
            return if self.asked.is_some() { CommandEnd::Input } else { CommandEnd::Timeout };
        }
        match ended {
            Some((_, 0)) => CommandEnd::Ok,
            Some(_) => CommandEnd::Failed,
            None if self.shell_exit.is_some() => CommandEnd::Exited,
            None => CommandEnd::Timeout,
        }
    }

    fn step(&self, i: usize, status: CommandEnd) -> CommandResult {
        let record = &self.records[i];
        let step = &self.plan.steps[i];
        let stopped = matches!(status, CommandEnd::Timeout | CommandEnd::Input);
        let (exit, ended_at) = match &record.ended {
            Some((at, prompt)) => {
                let code = (!stopped).then_some(prompt.status);
                let exit =
                    ExitFields { exit_code: code, signal: None, field: SignalField::WhenSignalled };
                (exit, *at)
            }
            None => {
                let exit = if status == CommandEnd::Exited { self.shell_exit } else { None };
                let at = self.pane.output().with(|s| s.exited_at).unwrap_or_else(Instant::now);
                (ExitFields::new(exit, SignalField::WhenSignalled), at)
            }
        };
        CommandResult {
            name: step.name.clone(),
            command: step.command.clone(),
            status,
            pane_id: None,
            exit,
            duration_ms: ended_at.saturating_duration_since(record.started).as_millis() as u64,
            error: None,
            answered: record.responder.as_ref().map(Responder::answered),
            told: if self.plan.tails.all {
                asking::told(self.tail(self.range(i)))
            } else {
                Told::default()
            },
            sandbox_denied: None,
        }
    }

    /// The `output_tail` of the output between two offsets: one of as many as the answer shows
    /// (every step's with `tails: all`, plus the failed step's).
    fn tail(&self, range: (u64, u64)) -> Fitted {
        let shown = if self.plan.tails.all { self.records.len() + 1 } else { 1 };
        self.plan.tails.of(&self.pane, range, shown, !self.plan.cleanup)
    }

    /// The output offsets of step `i`: from its begin mark to its end mark (or to the end of the
    /// output, when the step never finished).
    fn range(&self, i: usize) -> (u64, u64) {
        let record = &self.records[i];
        let from = mark::find(&self.pane, &self.shell.begin_mark(record.exec), record.typed)
            .map_or(record.typed, |(_, end)| end);
        let mut to = match &record.ended {
            Some((_, prompt)) => mark::find(&self.pane, &self.shell.end_mark(prompt), from)
                .map_or(record.end, |(start, _)| start),
            None => self.pane.output().end(),
        };
        if matches!(self.status(i), CommandEnd::Timeout | CommandEnd::Input) {
            to = to.min(self.interrupted_end);
        }
        (from, to.max(from))
    }

    /// The error for a shell that ended before its first step.
    fn no_start(&self) -> Error {
        let end = self.pane.output().end();
        let said = tail(&self.pane, 0, end, 5);
        let how = match self.shell_exit {
            Some(Exit { code: Some(code), .. }) => format!("with exit code {code}"),
            Some(Exit { signal: Some(signal), .. }) => {
                format!("by {}", crate::pane::exit::signal_name(signal))
            }
            _ => "unexpectedly".to_string(),
        };
        Error::new(
            ErrorKind::SpawnFailed,
            format!("the pipeline's shell ended {how} before its first step: {said:?}"),
        )
    }
}
