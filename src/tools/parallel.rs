//! `fugue_run_parallel`: start up to ten commands at once, each in its own pane, and wait for all.
//!
//! Every command is checked before the first one starts. Each then gets a pane whose process is the
//! command itself (`$SHELL -c command`), spawned on its own scoped thread so they all start
//! together. The exit code or signal comes from the pane's waiter (`waitpid`), never from the
//! terminal. The call sleeps in the one `Waiter` (`Waiter::drive`) on every unfinished pane's end
//! (not its output), the cancel channel, the progress heartbeat and the deadline; at the deadline what still runs is killed (its whole
//! session) and reported `timeout`. A command whose program waits for someone to type is answered
//! from its `responses` when a key matches the question, and otherwise stopped the same way, on its
//! own, and reported `input` (unless `on_input: wait`): the call also wakes when the next look at
//! /proc is due. The answer lists every command in order; only failed,
//! timed-out and asking ones carry an `output_tail` (unless `tails: all` asks for every one), so a
//! green run stays small.

use crate::error::{Error, Result};
use crate::ids::{SessionId, WindowId, new_id, short_id};
use crate::mux::{self, Mux, ORCHESTRATION_SESSION, PaneArgs, Reserved};
use crate::pane::Pane;
use crate::pane::activity::InputWatch;
use crate::pane::exit::{Exit, ExitFields, SignalField};
use crate::runtime::Runtime;
use crate::tool::params::{Name, Ordered, Params, Spec, Timeout, params};
use crate::tool::{self, Answer, RUNS, schema::*};
use crate::tool::{Ctx, Tool, choice::Choice};
use crate::tools::answer::{CommandEnd, CommandResult, RunStatus, command_result_schema, denied};
use crate::tools::common::asking::{Asked, ON_INPUT, OnInput, Told};
use crate::tools::common::responses::{AS_EXECS, Responder, Responses};
use crate::tools::common::{
    Command, KEEP_AS_EXECS, RUN_TIMEOUT, TAIL_LINES, TAILS, Tails, WhichTails, check_cwd,
    check_unique, end_run_panes,
};
use crate::tools::panes::ENV;
use crate::tools::{SANDBOX_AS_EXECS, SandboxArg};
use crate::waiter::{Drove, Look, Waiter};
use crate::words::words;
use crossbeam_channel::Receiver;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

const MAX_COMMANDS: usize = 10;
/// The defaults of `timeout_ms` and `cleanup`.
const TIMEOUT_MS: u64 = 300_000;
const CLEANUP: bool = true;

words! {
    /// Where a run's panes go: a hidden session (the default), or tiled in a window of their own.
    enum Placement {
        Hidden = "hidden",
        Tiled = "tiled",
    }
}

pub(crate) const TOOL: Tool<Runtime> = Tool {
    name: "fugue_run_parallel",
    title: "Run commands in parallel",
    description: "Run 1-10 commands at once, each in its own pane ($SHELL -c command); wait for \
                  all. Per command: status, exact exit_code (signal \
                  if killed), duration_ms, pane_id, and output_tail (its end) if not \
                  ok. A command waiting for keyboard input is answered from its responses, else stopped: status input, program, \
                  its question in output_tail (on_input=wait lets it wait). layout: \
                  hidden (__orchestration__ session) or tiled (new session, side by side). \
                  timeout_ms kills what still runs; cleanup closes the panes.",
    hints: RUNS,
    input: || super::with_host(ParallelParams::schema(), false, true),
    output: || {
        result(&[
            ("status", RunStatus::words()),
            ("results", command_result_schema()),
            ("total_duration_ms", typed("integer")),
        ])
    },
    durable: true,
    asks: false,
    call: |ctx, args| run_parallel(ctx, Params::read(args)?),
};

/// One command as asked for.
struct AskedCommand {
    name: String,
    pane: PaneArgs,
    /// Its `responses`, until the command starts with them.
    responses: Option<Responses>,
}

/// Where the panes go: each in a window of its own in the orchestration session, or all in one
/// window of a session made for this call.
enum PanesPlace {
    Hidden { session: SessionId },
    Tiled { session: SessionId, window: WindowId },
}

/// A command that was started (or failed to start) and what became of it.
struct Launched<'a> {
    task: &'a AskedCommand,
    pane: Result<Arc<Pane>>,
    events: Option<Receiver<()>>,
    /// How fugue stopped it, if it did.
    stopped: Option<Stopped>,
    /// Watches for its program asking, with `on_input: stop` or `responses`.
    watch: Option<InputWatch>,
    /// Answers its program's questions that a key matches.
    responder: Option<Responder>,
}

/// How fugue stopped a command: one or the other, since a command stopped at its question has
/// ended by the deadline.
enum Stopped {
    /// The deadline killed it, then.
    TimedOut(Instant),
    /// It was found asking a question its responses did not answer.
    Asked(Asked),
}

impl Stopped {
    /// When it was stopped.
    fn at(&self) -> Instant {
        match self {
            Stopped::TimedOut(at) => *at,
            Stopped::Asked(asked) => asked.at,
        }
    }
}

enum ParallelEnd {
    AllDone,
    Deadline,
    Cancelled,
    /// The command at this index waits for someone to type.
    Asked(usize),
}

params! {
    /// One command of `fugue_run_parallel`.
    struct TaskParams {
        command: Command = Spec::new(""),
        cwd: Option<PathBuf> = Spec::new(""),
        name: Option<Name> = Spec::new("Default task-N"),
        env: Vec<(String, String)> = ENV,
        responses: Option<Ordered> = AS_EXECS,
    }
}

params! {
    /// `fugue_run_parallel`'s arguments.
    struct ParallelParams {
        commands: Vec<TaskParams> = Spec::new("").range(1, MAX_COMMANDS as u64),
        layout: Placement = Spec::new("Where the panes go"),
        timeout_ms: Timeout = RUN_TIMEOUT.or(TIMEOUT_MS),
        cleanup: bool = Spec::new("Close the panes at the end").or_bool(CLEANUP),
        sandbox: Option<SandboxArg> = SANDBOX_AS_EXECS,
        tail_lines: usize = TAIL_LINES,
        tails: WhichTails = TAILS,
        keep: Option<String> = KEEP_AS_EXECS,
        on_input: OnInput = ON_INPUT,
    }
}

fn run_parallel(ctx: &Ctx<'_, Runtime>, args: ParallelParams) -> Result<Answer> {
    let started = Instant::now();
    let mut tasks = parse_tasks(args.commands, ctx.cwd, ctx.config.max_regex_bytes)?;
    let responses: Vec<Option<Responses>> = tasks.iter_mut().map(|t| t.responses.take()).collect();
    let sandbox = super::policy(args.sandbox.as_ref(), ctx.cwd, &ctx.sandbox)?;
    tasks.iter_mut().for_each(|task| task.pane.sandbox.clone_from(&sandbox));
    let tiled = args.layout == Placement::Tiled;
    let Timeout(timeout) = args.timeout_ms;
    let cleanup = args.cleanup;
    let tails = Tails::new(args.tail_lines, args.tails, args.keep.as_deref(), &ctx.config)?;
    let stop_asking = args.on_input == OnInput::Stop;

    let place = PanesPlace::prepare(&ctx.mux, tiled)?;
    let mut jobs = start_all(&ctx.mux, &place, &tasks, responses, stop_asking);
    let end = loop {
        match wait_all(ctx, &mut jobs, started + timeout, started, stop_asking) {
            ParallelEnd::Asked(i) => stop(&ctx.mux, &mut jobs[i], cleanup, tails.bytes),
            end => break end,
        }
    };
    if let ParallelEnd::Cancelled = end {
        end_run_panes(&ctx.mux, &panes(&jobs), true);
        place.remove(&ctx.mux);
        return Err(Error::cancelled());
    }
    if let ParallelEnd::Deadline = end {
        kill_unfinished(&ctx.mux, &mut jobs, cleanup);
    }
    let shown = if tails.all {
        jobs.len()
    } else {
        jobs.iter().filter(|j| j.status() != CommandEnd::Ok).count()
    };
    let results: Vec<CommandResult> =
        jobs.iter().map(|job| job_result(job, &tails, shown, !cleanup)).collect();
    if cleanup {
        end_run_panes(&ctx.mux, &panes(&jobs), true);
        place.remove(&ctx.mux);
    }
    let status = match end {
        ParallelEnd::AllDone if jobs.iter().any(|j| j.asked().is_some()) => RunStatus::Input,
        ParallelEnd::AllDone => RunStatus::Completed,
        _ if jobs.iter().any(|j| !matches!(j.stopped, Some(Stopped::TimedOut(_)))) => {
            RunStatus::Partial
        }
        _ => RunStatus::Timeout,
    };
    let total_duration_ms = started.elapsed().as_millis() as u64;
    let sandbox = sandbox.and_then(|policy| crate::sandbox::view(&policy));
    Answer::of(&ParallelAnswer { status, results, total_duration_ms, sandbox })
}

/// `fugue_run_parallel`'s answer.
#[derive(Serialize)]
struct ParallelAnswer {
    status: RunStatus,
    results: Vec<CommandResult>,
    total_duration_ms: u64,
    /// Every pane's whole sandbox policy, when the call asked for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<serde_json::Value>,
}

/// Checks every command before anything starts; a relative `cwd` is taken from `base`, the
/// caller's directory.
fn parse_tasks(
    items: Vec<TaskParams>,
    base: &Path,
    regex_limit: usize,
) -> Result<Vec<AskedCommand>> {
    let tasks = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| parse_task(base, i, item, regex_limit))
        .collect::<Result<Vec<_>>>()?;
    let names: Vec<String> = tasks.iter().map(|t| t.name.clone()).collect();
    check_unique(&names, "commands")?;
    Ok(tasks)
}

fn parse_task(
    base: &Path,
    index: usize,
    item: TaskParams,
    regex_limit: usize,
) -> Result<AskedCommand> {
    let what = format!("commands[{index}]");
    let cwd = match item.cwd {
        Some(dir) => {
            let dir = tool::dir(base, Some(dir));
            check_cwd(&dir, &what)?;
            dir
        }
        None => tool::dir(base, None),
    };
    let name = item.name.map_or_else(|| format!("task-{}", index + 1), |n| n.0);
    let responses = Responses::parse(item.responses.as_ref(), regex_limit)?;
    Ok(AskedCommand {
        name,
        pane: PaneArgs {
            name: None,
            command: Some(item.command.0),
            cwd,
            env: item.env,
            integration: false,
            sandbox: None,
            roots: None,
        },
        responses,
    })
}

impl PanesPlace {
    fn prepare(mux: &Mux, tiled: bool) -> Result<PanesPlace> {
        if !tiled {
            return Ok(PanesPlace::Hidden { session: mux.ensure_session(ORCHESTRATION_SESSION)? });
        }
        let name = format!("parallel-{}", short_id(&new_id()));
        let session = mux.ensure_session(&name)?;
        match mux.add_window(&session, Some("parallel".to_string())) {
            Ok(window) => Ok(PanesPlace::Tiled { session, window }),
            Err(e) => {
                let _ = mux.close_session(&session);
                Err(e)
            }
        }
    }

    /// Takes every command's slot at once, so that each pane starts at the size of its tile
    /// among all of them (a tiled pane sized for a window it would share with fewer panes would
    /// show its program the wrong size until a late resize).
    fn reserve<'m>(&self, mux: &'m Mux, tasks: &[AskedCommand]) -> Vec<Result<Reserved<'m>>> {
        let args: Vec<PaneArgs> = tasks.iter().map(|t| t.pane.clone()).collect();
        let place = match self {
            PanesPlace::Hidden { session } => mux::Place::NewWindow { session, name: None },
            PanesPlace::Tiled { session, window } => mux::Place::Window { session, window },
        };
        mux.reserve(&place, &args)
    }

    /// Removes the session made for a tiled call (the orchestration session stays).
    fn remove(&self, mux: &Mux) {
        if let PanesPlace::Tiled { session, .. } = self {
            let _ = mux.close_session(session);
        }
    }
}

/// Starts every command at once: the first on this thread, each other on a thread of its own, so
/// they begin together rather than one after another, and a single command pays for no thread.
fn start_all<'a>(
    mux: &Mux,
    place: &PanesPlace,
    tasks: &'a [AskedCommand],
    responses: Vec<Option<Responses>>,
    stop_asking: bool,
) -> Vec<Launched<'a>> {
    let mut slots = place.reserve(mux, tasks).into_iter();
    let first = slots.next();
    let panes: Vec<Result<Arc<Pane>>> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            slots.map(|slot| scope.spawn(move || slot.and_then(|s| mux.start(s)))).collect();
        let first = first.map(|slot| slot.and_then(|s| mux.start(s)));
        first
            .into_iter()
            .chain(handles.into_iter().map(|h| {
                h.join().unwrap_or_else(|_| Err(Error::internal("starting a pane panicked")))
            }))
            .collect()
    });
    tasks
        .iter()
        .zip(panes)
        .zip(responses)
        .map(|((task, pane), responses)| {
            // Subscribed before anyone looks at the pane, so no exit can slip by unseen.
            let events = pane.as_ref().ok().map(|p| p.output().subscribe_status());
            let responder = responses.map(|r| Responder::new(r, 0));
            let watch = match &pane {
                Ok(pane) if stop_asking || responder.is_some() => Some(InputWatch::new(pane)),
                _ => None,
            };
            Launched { task, pane, events, stopped: None, watch, responder }
        })
        .collect()
}

impl Launched<'_> {
    /// The status its result gives, once it has ended or been stopped.
    fn status(&self) -> CommandEnd {
        let Ok(pane) = &self.pane else { return CommandEnd::Error };
        end_of(self.stopped.as_ref(), pane.output().exit())
    }

    /// The question it was stopped at, if it was.
    fn asked(&self) -> Option<&Asked> {
        match &self.stopped {
            Some(Stopped::Asked(asked)) => Some(asked),
            _ => None,
        }
    }

    fn running(&self) -> bool {
        self.pane.as_ref().is_ok_and(|p| p.is_running())
    }

    /// When its watch should look next.
    fn next_check(&self) -> Option<Instant> {
        self.watch.as_ref()?.next_check()
    }

    /// Whether its program asks a question the responses do not answer. One they answer is
    /// answered, and the watch starts again from the answer (which may still sit unread).
    fn asks(&mut self) -> bool {
        let Ok(pane) = &self.pane else { return false };
        if !pane.is_running() || !self.watch.as_mut().is_some_and(InputWatch::check) {
            return false;
        }
        let answered = match (self.responder.as_mut(), self.watch.as_ref()) {
            (Some(responder), Some(watch)) => responder.reply(pane, watch),
            _ => false,
        };
        if answered {
            let mut watch = InputWatch::new(pane);
            watch.typed_at(Instant::now());
            self.watch = Some(watch);
            return false;
        }
        true
    }
}

/// Blocks until every command has ended, the deadline passes, the call is cancelled, or a command
/// is found asking. Wakes only on events: a pane's exit (not its output), the cancel channel, the
/// heartbeat, and the next look at /proc that a watch wants.
fn wait_all(
    ctx: &Ctx<'_, Runtime>,
    jobs: &mut [Launched<'_>],
    deadline: Instant,
    started: Instant,
    stop_asking: bool,
) -> ParallelEnd {
    let mut waiter = Waiter::new()
        .cancel(ctx.cancel.receiver())
        .until(deadline)
        .heartbeat(ctx.progress.heartbeat());
    // The commands, and how many had ended at the last report: each end is reported.
    let mut run = (jobs, usize::MAX);
    let look = |(jobs, reported): &mut (&mut [Launched<'_>], usize)| {
        if let Some(i) = asking_job(jobs, stop_asking) {
            return Look::Done(ParallelEnd::Asked(i));
        }
        let pending: Vec<&Launched<'_>> = jobs.iter().filter(|j| j.running()).collect();
        let done = jobs.len() - pending.len();
        if done != *reported {
            report(ctx, jobs, started);
            *reported = done;
        }
        if pending.is_empty() {
            return Look::Done(ParallelEnd::AllDone);
        }
        // A pane's end or a look at /proc that is due: the next look makes it.
        let check = pending.iter().filter_map(|j| j.next_check()).min();
        Look::AgainOn(check, pending.iter().filter_map(|j| j.events.clone()).collect())
    };
    let progress = |(jobs, _): &(&mut [Launched<'_>], usize)| report(ctx, jobs, started);
    match waiter.drive(&mut run, look, progress) {
        Drove::Done(end) => end,
        Drove::Deadline => ParallelEnd::Deadline,
        Drove::Cancelled => ParallelEnd::Cancelled,
    }
}

/// The first running command whose program asks a question its responses do not answer, if
/// any (each watch looks only when due). With `on_input: wait` such a command waits, unwatched.
fn asking_job(jobs: &mut [Launched<'_>], stop_asking: bool) -> Option<usize> {
    for (i, job) in jobs.iter_mut().enumerate() {
        if !job.asks() {
            continue;
        }
        if stop_asking {
            return Some(i);
        }
        job.watch = None;
    }
    None
}

/// Stops a command found asking, as the deadline would; with cleanup it leaves the registry too.
fn stop(mux: &Mux, job: &mut Launched<'_>, cleanup: bool, bytes: usize) {
    if let (Ok(pane), Some(watch)) = (&job.pane, &job.watch) {
        job.stopped = Some(Stopped::Asked(Asked::now(pane, watch, bytes)));
        end_run_panes(mux, std::slice::from_ref(pane), cleanup);
    }
}

/// How a started command ended: stopped, or as its exit says.
fn end_of(stopped: Option<&Stopped>, exit: Option<Exit>) -> CommandEnd {
    match (stopped, exit) {
        (Some(Stopped::Asked(_)), _) => CommandEnd::Input,
        (Some(Stopped::TimedOut(_)), _) => CommandEnd::Timeout,
        (None, Some(exit)) if exit.success() => CommandEnd::Ok,
        (None, _) => CommandEnd::Failed,
    }
}

/// The progress message of `total` commands, `waiting` of them running for `secs`.
fn progress_message(total: usize, waiting: &[&str], secs: f64) -> String {
    let done = total - waiting.len();
    if waiting.is_empty() {
        format!("{done}/{total} commands finished")
    } else {
        format!("{done}/{total} commands finished; running {secs:.0}s: {}", waiting.join(", "))
    }
}

/// Progress: commands finished of the total, and which ones are still running.
fn report(ctx: &Ctx<'_, Runtime>, jobs: &[Launched<'_>], started: Instant) {
    if !ctx.progress.is_wanted() {
        return;
    }
    let waiting: Vec<&str> =
        jobs.iter().filter(|j| j.running()).map(|j| j.task.name.as_str()).collect();
    let done = jobs.len() - waiting.len();
    let message = progress_message(jobs.len(), &waiting, started.elapsed().as_secs_f64());
    ctx.progress.report(done as f64, Some(jobs.len() as f64), &message);
}

/// Ends what still runs at the deadline, all at once; with cleanup they leave the registry too.
fn kill_unfinished(mux: &Mux, jobs: &mut [Launched<'_>], cleanup: bool) {
    let now = Instant::now();
    let mut doomed = Vec::new();
    for job in jobs.iter_mut().filter(|j| j.running()) {
        job.stopped = Some(Stopped::TimedOut(now));
        if let Ok(pane) = &job.pane {
            doomed.push(pane.clone());
        }
    }
    end_run_panes(mux, &doomed, cleanup);
}

fn panes(jobs: &[Launched<'_>]) -> Vec<Arc<Pane>> {
    jobs.iter().filter_map(|j| j.pane.as_ref().ok().cloned()).collect()
}

/// One command's entry in the answer; optional fields appear only when they say something. It is
/// one of `shown` results with an `output_tail`; `stays`: its pane stays to be read.
fn job_result(job: &Launched<'_>, tails: &Tails, shown: usize, stays: bool) -> CommandResult {
    let mut result = CommandResult {
        name: job.task.name.clone(),
        command: job.task.pane.command.clone().unwrap_or_default(),
        status: job.status(),
        pane_id: None,
        exit: ExitFields::new(None, SignalField::WhenSignalled),
        duration_ms: 0,
        error: None,
        answered: None,
        told: Told::default(),
        sandbox_denied: None,
    };
    let pane = match &job.pane {
        Ok(pane) => pane,
        Err(e) => {
            result.error = Some(e.message().to_string());
            return result;
        }
    };
    result.pane_id = Some(pane.id.clone());
    result.answered = job.responder.as_ref().map(Responder::answered);
    let (exit, exited_at, end) =
        pane.output().with(|s| (s.life.exit(), s.life.exited_at(), s.ring.end()));
    let stopped = job.stopped.as_ref().map(Stopped::at);
    let exit = if stopped.is_some() { None } else { exit };
    result.exit = ExitFields::new(exit, SignalField::WhenSignalled);
    let ended = stopped.or(exited_at).unwrap_or_else(Instant::now);
    result.duration_ms = ended.saturating_duration_since(pane.started).as_millis() as u64;
    if result.status != CommandEnd::Ok || tails.all {
        let end = job.asked().map_or(end, |a| a.end);
        let tail = tails.of(pane, (0, end), shown, stays);
        result.told = match job.asked() {
            Some(asked) => asked.told(tail),
            None => crate::tools::common::asking::told(tail),
        };
        result.sandbox_denied =
            denied(pane, result.status == CommandEnd::Failed, result.told.text());
    }
    result
}

#[cfg(test)]
mod tests;
