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
//! (`stop_on_error`); the run itself, and how it sleeps between looks, is `pipeline/run.rs`, its
//! arguments turned into a plan `pipeline/plan.rs`, and this file the tool and its answer. At the
//! deadline it interrupts the running step as
//! every interrupt of a command goes (`shell::Live::interrupt`: SIGINT to the terminal's
//! foreground, as Ctrl-C): an interactive shell survives it and shows its prompt again; what does
//! not stop within a grace is killed. A step whose program — or the shell itself, in
//! `read` — waits for someone to type is answered from the step's `responses` when a key matches
//! the question, and otherwise interrupted the same way when the next look at /proc finds it asking
//! (unless `on_input: wait`) and reported `input`.

mod phase;
mod plan;
mod run;

use crate::error::{Error, ErrorKind, Result};
use crate::ids::{PaneId, new_id, short_id};
use crate::mux::{ORCHESTRATION_SESSION, PaneArgs, Place};
use crate::pane::Pane;
use crate::pane::budget::Fitted;
use crate::pane::exit::{Exit, ExitFields, SignalField};
use crate::runtime::Runtime;
use crate::shell::{Launch, Shell};
use crate::tempdir::PrivateDir;
use crate::tool::params::Params;
use crate::tool::{Answer, RUNS, schema::*};
use crate::tool::{Ctx, Tool, choice::Choice};
use crate::tools::answer::{CommandEnd, CommandResult, RunStatus, command_result_schema};
use crate::tools::common::asking::{self, Told};
use crate::tools::common::responses::{Responder, Responses};
use crate::tools::common::tail;
use phase::Phase;
use plan::{PipelineParams, PipelinePlan, parse_plan};
use run::Run;
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

pub(crate) const TOOL: Tool<Runtime> = Tool {
    name: "fugue_run_pipeline",
    title: "Run a command pipeline",
    description: "Run steps one after another in one pane and one shell (cd, export carry over). \
                  Per step: exact exit_code, duration_ms, status (exited: it ended \
                  the shell). failed_at names the first failure, \
                  output_tail its end. timeout_ms interrupts the running step; so does a step waiting for \
                  keyboard input its responses do not answer (status input, program, its \
                  question in output_tail; on_input=wait lets it wait). cwd: where the shell \
                  ended. The pane stays, its shell open for follow-ups, unless cleanup.",
    hints: RUNS,
    input: || super::with_host(PipelineParams::schema(), false, false),
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
    call: |ctx, args| run_pipeline(ctx, Params::read(args)?),
};

fn run_pipeline(ctx: &Ctx<'_, Runtime>, args: PipelineParams) -> Result<Answer> {
    let started = Instant::now();
    let (mut plan, sandbox) = parse_plan(args, ctx.cwd, &ctx.config)?;
    let responses: Vec<Option<Responses>> =
        plan.steps.iter_mut().map(|s| s.responses.take()).collect();
    let sandbox = super::policy(sandbox.as_ref(), ctx.cwd, &ctx.sandbox)?;
    let asked = sandbox.is_some();
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
        phase: Phase::Starting,
        responses,
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
            answer.sandbox_denied = crate::sandbox::denied(&run.pane.sandbox, output);
        }
        answer.sandbox = asked.then(|| crate::sandbox::view(&run.pane.sandbox)).flatten();
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
    pane_id: PaneId,
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
    /// The pane's whole sandbox policy, when the call asked for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox_denied: Option<String>,
}

/// The pipeline's pane: a window of its own in the orchestration session, running the steps'
/// shell, interactive and with fugue's integration.
fn start_pane(
    ctx: &Ctx<'_, Runtime>,
    plan: &PipelinePlan,
    shell: &str,
    launch: &Launch,
    owned: Option<Arc<Shell>>,
    keep: impl Iterator<Item = std::path::PathBuf>,
    sandbox: Option<Arc<crate::sandbox::Policy>>,
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
        // A sandboxed pane keeps the shell's private directory reachable.
        shell.dir().into_iter().for_each(|dir| reserved.keep(dir));
        reserved.with_above(shell);
    }
    ctx.mux.start(reserved)
}

impl Run<'_> {
    /// The answer: one entry per step that ran, the first failure, and its output.
    fn answer(&self, started: Instant) -> Result<PipelineAnswer> {
        if self.records.is_empty() && self.phase.stopped().is_none() {
            return Err(self.no_start());
        }
        let statuses: Vec<CommandEnd> = (0..self.records.len()).map(|i| self.status(i)).collect();
        let steps = (0..self.records.len()).map(|i| self.step(i, statuses[i])).collect();
        let failed = statuses.iter().position(|s| *s != CommandEnd::Ok);
        let status = if self.asked().is_some() {
            RunStatus::Input
        } else if self.phase.stopped().is_some() {
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
            sandbox: None,
            sandbox_denied: None,
        };
        if let Some(i) = failed {
            answer.failed_at = Some(self.plan.steps[i].name.clone());
            let (from, mut to) = self.range(i);
            let asked = self.asked().filter(|_| statuses[i] == CommandEnd::Input);
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

    fn step(&self, i: usize, status: CommandEnd) -> CommandResult {
        let record = &self.records[i];
        let step = &self.plan.steps[i];
        let stopped = matches!(status, CommandEnd::Timeout | CommandEnd::Input);
        let (exit, ended_at) = match &record.ended {
            Some((at, prompt)) => {
                let exit = (!stopped).then_some(Exit::Code(prompt.status));
                (ExitFields::new(exit, SignalField::WhenSignalled), *at)
            }
            None => {
                let exit =
                    if status == CommandEnd::Exited { self.phase.shell_exit() } else { None };
                let at =
                    self.pane.output().with(|s| s.life.exited_at()).unwrap_or_else(Instant::now);
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
    fn tail(&self, range: (u64, u64)) -> Option<Fitted> {
        let shown = if self.plan.tails.all { self.records.len() + 1 } else { 1 };
        self.plan.tails.of(&self.pane, range, shown, !self.plan.cleanup)
    }

    /// The error for a shell that ended before its first step.
    fn no_start(&self) -> Error {
        let end = self.pane.output().end();
        let said = tail(&self.pane, 0, end, 5);
        let how = match self.phase.shell_exit() {
            Some(Exit::Code(code)) => format!("with exit code {code}"),
            Some(Exit::Signal(signal)) => format!("by {}", crate::pane::exit::signal_name(signal)),
            Some(Exit::Unknown) | None => "unexpectedly".to_string(),
        };
        Error::new(
            ErrorKind::SpawnFailed,
            format!("the pipeline's shell ended {how} before its first step: {said:?}"),
        )
    }
}
