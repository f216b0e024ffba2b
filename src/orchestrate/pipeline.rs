//! `fugue_run_pipeline`: run steps one after another in one pane, in one shell.
//!
//! fugue writes each step to a file in a private 0700 directory, with a small driver script
//! (`driver.sh`) that the pane's shell runs. The driver evaluates the steps one by one in the same
//! shell process, so `cd` and `export` carry over and the terminal stays the steps' stdin. After
//! each step it writes `$?` to a FIFO in that directory, which only fugue reads: the exit status
//! never passes through the terminal, so no output can fake it and no echo can show it. It also
//! prints, to the terminal, an OSC sequence carrying a secret nonce; that invisible mark tells
//! fugue exactly where the step's output ends, so the `output_tail` of a failed step is that
//! step's output and nothing else.
//!
//! The call reads the FIFO on a scoped thread that turns lines into channel events, and blocks in
//! `select!` on those events, the pane's output events (to see the shell die), the cancel channel,
//! the deadline and a heartbeat. At the deadline it creates a `stop` file and interrupts the
//! pane's processes (SIGINT, which the driver survives); what does not stop within a grace is
//! killed. A step whose program — or the shell itself, in `read` — waits for someone to type is
//! interrupted the same way when the next look at /proc finds it asking (unless `on_input: wait`)
//! and reported `input`. After each step the driver also writes the shell's directory to the
//! FIFO, which becomes the answer's `cwd`. The directory is removed when the call ends, however
//! it ends.

mod plan;

use super::asking::{self, Asked};
use super::driver::{self, Event, WakeReader, read_status};
use super::{run_schema, tail};
use crate::error::{Error, ErrorKind, Result};
use crate::ids::{new_id, short_id};
use crate::mux::{ORCHESTRATION_SESSION, PaneArgs, Place};
use crate::pane::Pane;
use crate::pane::activity::{InputWatch, quiet_period};
use crate::pane::exit::{Exit, SignalField, write_exit};
use crate::pane::mark::{self, CATCH_UP};
use crate::runtime::{Ctx, Tool};
use crate::tempdir::PrivateDir;
use crate::tool::args::Args;
use crate::tool::call::Progress;
use crate::tool::{RUNS, schema::*};
use crossbeam_channel::{Receiver, after, never, select};
use plan::{CLEANUP, MAX_STEPS, Plan, STOP_ON_ERROR, TIMEOUT_MS, parse_plan};
use serde_json::{Value, json};
use std::fs::File;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long an interrupted step may take to stop before its pane is killed.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);
pub(crate) const TOOL: Tool = Tool {
    name: "fugue_run_pipeline",
    title: "Run a command pipeline",
    description: "Run steps one after another in one pane and one shell (cd, export carry over). \
                  Per step: exact exit_code, duration_ms, status ok/failed/timeout/exited (it ended \
                  the shell)/input. stop_on_error stops at the first failure; failed_at names it, \
                  output_tail holds its last tail_lines lines; tails=all gives every step its \
                  output_tail. timeout_ms interrupts the running step; so does a step waiting for \
                  keyboard input, after a quiet second (status input, its question in \
                  output_tail; on_input=wait lets it wait). cwd: the shell's directory after the \
                  last step. The pane stays, with an interactive shell for follow-ups, unless \
                  cleanup.",
    hints: RUNS,
    input: || {
        let step =
            object(&[("command", t("string")), ("name", string("Default step-N"))], &["command"]);
        let [timeout, tail_lines, tails] = run_schema(TIMEOUT_MS);
        object(
            &[
                (
                    "commands",
                    json!({"type": "array", "items": step, "minItems": 1, "maxItems": MAX_STEPS}),
                ),
                ("cwd", t("string")),
                ("env", env()),
                ("stop_on_error", boolean_or("Stop at the first failing step", STOP_ON_ERROR)),
                timeout,
                ("cleanup", boolean_or("Close the pane at the end", CLEANUP)),
                tail_lines,
                tails,
                asking::schema(),
            ],
            &["commands"],
        )
    },
    output: || {
        result(&[
            ("status", t("string")),
            ("pane_id", t("string")),
            ("steps", t("array")),
            ("cwd", t("string")),
            ("total_duration_ms", t("integer")),
        ])
    },
    call: run_pipeline,
};

/// What fugue saw of one step.
struct Record {
    started: Instant,
    /// Output offsets when the begin and end lines arrived: stand-ins if a mark is missing.
    begin: u64,
    end: u64,
    ended: Option<(Instant, i32)>,
}

/// A pipeline in progress.
struct Run<'a> {
    plan: &'a Plan,
    pane: Arc<Pane>,
    nonce: String,
    records: Vec<Record>,
    /// The driver said it is done.
    done: bool,
    /// The shell ended before the driver was done: a step exited it or something killed it.
    shell_exit: Option<Exit>,
    /// When the deadline passed and the running step was interrupted.
    interrupted: Option<Instant>,
    /// When a step was found asking and interrupted.
    asked: Option<Asked>,
    /// The shell's directory after the last step that ended.
    cwd: Option<String>,
}

fn run_pipeline(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Value> {
    let started = Instant::now();
    let plan = parse_plan(args, ctx.cwd)?;
    let dir = PrivateDir::create(&ctx.temp_dirs)?;
    let nonce = new_id().replace('-', "");
    let steps: Vec<&str> = plan.steps.iter().map(|s| s.command.as_str()).collect();
    // The shell the pane keeps gets fugue's shell integration, made now so the driver can start
    // it with it; the pane owns it from its start.
    let kept = match plan.cleanup {
        false if crate::shell::enabled() => {
            crate::shell::Shell::prepare(&crate::config::config().shell, &plan.env, &ctx.temp_dirs)?
        }
        _ => None,
    };
    let (live, keep_launch) = kept.unzip();
    let options =
        driver::Options { stop_on_error: plan.stop_on_error, keep: !plan.cleanup, keep_launch };
    driver::write(&dir, &steps, &nonce, &options)?;
    let status = dir.fifo("status")?;
    let pane = start_pane(ctx, &plan, &dir, live)?;
    let mut run = Run {
        plan: &plan,
        pane,
        nonce,
        records: Vec::new(),
        done: false,
        shell_exit: None,
        interrupted: None,
        asked: None,
        cwd: None,
    };
    let outcome = std::thread::scope(|scope| {
        let (tx, rx) = crossbeam_channel::unbounded();
        let reader = &status;
        scope.spawn(move || read_status(reader, tx));
        // Should anything below panic, the reader still gets its `q` and the scope can end.
        let _wake = WakeReader(&status);
        let outcome = run.drive(ctx, &dir, started + plan.timeout, &rx);
        if outcome.is_err() {
            let _ = ctx.mux.close_pane(&run.pane.id);
        }
        run.catch_up(&status, &rx);
        outcome
    });
    outcome?;
    let answer = run.answer(started);
    // A shell that never ran a step leaves nothing worth inspecting.
    if plan.cleanup || answer.is_err() {
        let _ = ctx.mux.close_pane(&run.pane.id);
    }
    answer
}

/// The pipeline's pane: a window of its own in the orchestration session, running the driver.
fn start_pane(
    ctx: &Ctx<'_>,
    plan: &Plan,
    dir: &PrivateDir,
    live: Option<Arc<crate::shell::Shell>>,
) -> Result<Arc<Pane>> {
    let session = ctx.mux.ensure_session(ORCHESTRATION_SESSION)?;
    let command = driver::command(dir);
    let args = PaneArgs {
        name: None,
        command: Some(command),
        cwd: plan.cwd.clone(),
        env: plan.env.clone(),
        integration: false,
    };
    let window = format!("run-pipeline-{}", short_id(&new_id()));
    let place = Place::NewWindow { session: &session, name: Some(window) };
    let mut reserved = ctx
        .mux
        .reserve(&place, &[args])
        .pop()
        .ok_or_else(|| Error::internal("no reservation for the pipeline's pane"))??;
    reserved.show_as(plan.shown());
    if let Some(shell) = live {
        reserved.with_shell(shell);
    }
    ctx.mux.start(reserved)
}

impl Run<'_> {
    /// Follows the driver until it is done, the shell ends, or the deadline's interrupt and grace
    /// have passed. `Err` only for a cancelled call.
    fn drive(
        &mut self,
        ctx: &Ctx<'_>,
        dir: &PrivateDir,
        deadline: Instant,
        events: &Receiver<Event>,
    ) -> Result<()> {
        // The shell's exit, not its output, is what the loop condition needs to see.
        let ending = self.pane.output().subscribe_status();
        let heartbeat = ctx.progress.heartbeat();
        let mut status = events.clone();
        let mut deadline = deadline;
        let mut watch = self.plan.stop_asking.then(|| InputWatch::new(&self.pane, quiet_period()));
        while !self.done && self.pane.is_running() {
            if self.step_running() && watch.as_mut().is_some_and(InputWatch::check) {
                // Stopped as at the deadline, with the same grace.
                watch = None;
                self.asked = Some(Asked::now(&self.pane, super::MAX_TAIL_BYTES));
                self.interrupt(dir);
                deadline = Instant::now() + INTERRUPT_GRACE;
            }
            // Between steps nothing is watched; the next step's begin line wakes the loop.
            let check = watch.as_ref().filter(|_| self.step_running());
            let check = check
                .and_then(InputWatch::next_check)
                .map_or_else(never, |at| after(at.saturating_duration_since(Instant::now())));
            select! {
                recv(status) -> event => match event {
                    Ok(event) => self.apply(event, ctx.progress),
                    // The reader stopped: the shell's exit or the deadline will end the wait.
                    Err(_) => status = never(),
                },
                recv(ending) -> _ => {}
                recv(ctx.cancel.receiver()) -> _ => return Err(Error::cancelled()),
                recv(after(deadline.saturating_duration_since(Instant::now()))) -> _ => {
                    if self.interrupted.is_some() {
                        self.pane.close();
                    } else {
                        self.interrupt(dir);
                        deadline = Instant::now() + INTERRUPT_GRACE;
                    }
                }
                recv(heartbeat) -> _ => self.report(ctx.progress),
                // A look at /proc is due: the next round makes it.
                recv(check) -> _ => {}
            }
        }
        Ok(())
    }

    /// Whether a step has begun and not ended: only then can a question be the step's.
    fn step_running(&self) -> bool {
        self.records.last().is_some_and(|r| r.ended.is_none())
    }

    fn apply(&mut self, event: Event, progress: &Progress) {
        match event {
            Event::Begin(n) if n == self.records.len() + 1 => {
                let begin = self.pane.output().end();
                self.records.push(Record {
                    started: Instant::now(),
                    begin,
                    end: begin,
                    ended: None,
                });
                self.report(progress);
            }
            Event::End(n, rc) => {
                let end = self.pane.output().end();
                if let Some(record) = self.records.get_mut(n.wrapping_sub(1))
                    && record.ended.is_none()
                {
                    record.ended = Some((Instant::now(), rc));
                    record.end = end;
                    self.report(progress);
                }
            }
            Event::Cwd(dir) => self.cwd = Some(dir),
            Event::Done => self.done = true,
            Event::Begin(_) | Event::Caught => {}
        }
    }

    /// The deadline: stop the driver before its next step and interrupt the running one.
    fn interrupt(&mut self, dir: &PrivateDir) {
        self.interrupted = Some(Instant::now());
        if dir.write("stop", "").is_err() {
            // Without the stop file the driver would go on: end it all now.
            self.pane.close();
            return;
        }
        // Once, to the driver's process group (it holds the steps' foreground commands): a
        // second copy sent to each session member could reach the shell after it left its loop.
        self.pane.signal_group(libc::SIGINT);
    }

    /// Stops the FIFO reader, first taking in every line the driver wrote before: our own line
    /// comes after them in the FIFO. Then records how the shell ended if it did.
    fn catch_up(&mut self, status: &File, events: &Receiver<Event>) {
        let mut writer = status;
        if writer.write_all(b"q\n").is_ok() {
            let until = Instant::now() + CATCH_UP;
            while let Ok(event) = events.recv_deadline(until) {
                if event == Event::Caught {
                    break;
                }
                self.apply(event, &Progress::none());
            }
        }
        if !self.done {
            self.shell_exit = self.pane.output().exit();
        }
        self.settle();
    }

    /// Waits until the output of the last step that ended is in the pane's output state, so that
    /// an answer saying a step is done means its output is readable: the driver prints the
    /// step's end mark to the terminal before it writes the status, but the status can arrive
    /// first, and the terminal's bytes may still be on their way through the reader.
    fn settle(&self) {
        if let Some(i) = self.records.iter().rposition(|r| r.ended.is_some()) {
            self.mark(i, self.records[i].begin);
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
                let rc = record.ended.map_or(0, |(_, rc)| rc);
                let name = &self.plan.steps[self.records.len() - 1].name;
                format!("{done}/{total} steps done; {name} exit {rc}")
            }
            None => format!("0/{total} steps done"),
        };
        progress.report(done as f64, Some(total as f64), &message);
    }

    /// The answer: one entry per step that ran, the first failure, and its output.
    fn answer(&self, started: Instant) -> Result<Value> {
        if self.records.is_empty() && self.interrupted.is_none() {
            return Err(self.no_start());
        }
        let statuses: Vec<&str> = (0..self.records.len()).map(|i| self.status(i)).collect();
        let steps: Vec<Value> =
            (0..self.records.len()).map(|i| self.step(i, statuses[i])).collect();
        let failed = statuses.iter().position(|s| *s != "ok");
        let status = if self.asked.is_some() {
            "input"
        } else if self.interrupted.is_some() {
            "timeout"
        } else if failed.is_some() || self.records.len() < self.plan.steps.len() {
            "failed"
        } else {
            "completed"
        };
        let mut value = json!({
            "status": status,
            "pane_id": self.pane.id,
            "steps": steps,
            "total_duration_ms": started.elapsed().as_millis() as u64,
        });
        if let Some(cwd) = &self.cwd {
            value["cwd"] = json!(cwd);
        }
        if let Some(i) = failed {
            value["failed_at"] = json!(self.plan.steps[i].name);
            let (from, mut to) = self.range(i);
            let asked = self.asked.as_ref().filter(|_| statuses[i] == "input");
            if let Some(asked) = asked {
                // The question, not what the interrupted program printed as it went.
                to = asked.end.clamp(from, to);
            }
            let tail = tail(&self.pane, from, to, self.plan.tail_lines);
            match asked {
                Some(asked) => asked.write_tail(&mut value, tail),
                None if !tail.is_empty() => value["output_tail"] = json!(tail),
                None => {}
            }
        }
        Ok(value)
    }

    fn status(&self, i: usize) -> &'static str {
        let ended = self.records[i].ended;
        // A step that had not ended when the deadline passed timed out, whatever it said after;
        // one that had not ended when it was found asking was stopped for its question.
        if let Some(at) = self.interrupted
            && ended.is_none_or(|(end, _)| end >= at)
        {
            return if self.asked.is_some() { "input" } else { "timeout" };
        }
        match ended {
            Some((_, 0)) => "ok",
            Some(_) => "failed",
            None if self.shell_exit.is_some() => "exited",
            None => "timeout",
        }
    }

    fn step(&self, i: usize, status: &str) -> Value {
        let record = &self.records[i];
        let step = &self.plan.steps[i];
        let mut value = json!({"name": step.name, "command": step.command, "status": status});
        if self.plan.all_tails {
            let (from, to) = self.range(i);
            let tail = tail(&self.pane, from, to, self.plan.tail_lines);
            if !tail.is_empty() {
                value["output_tail"] = json!(tail);
            }
        }
        let ended_at = match record.ended {
            Some((at, rc)) => {
                let stopped = matches!(status, "timeout" | "input");
                value["exit_code"] = if stopped { Value::Null } else { json!(rc) };
                at
            }
            None => {
                write_exit(
                    &mut value,
                    if status == "exited" { self.shell_exit } else { None },
                    SignalField::WhenSignalled,
                );
                self.pane.output().with(|s| s.exited_at).unwrap_or_else(Instant::now)
            }
        };
        value["duration_ms"] =
            json!(ended_at.saturating_duration_since(record.started).as_millis() as u64);
        value
    }

    /// The output offsets of step `i`: from the end of the previous step's mark to the start of
    /// its own (or to the end of the output, when the step never finished).
    fn range(&self, i: usize) -> (u64, u64) {
        let record = &self.records[i];
        let from = match i {
            0 => 0,
            _ => self.mark(i - 1, 0).map_or(record.begin, |(_, end)| end),
        };
        let to = match record.ended {
            Some(_) => self.mark(i, from).map_or(record.end, |(start, _)| start),
            None => self.pane.output().end(),
        };
        (from, to.max(from))
    }

    /// Where the end-of-step mark of step `i` sits in the output, searching from `from`; waits a
    /// moment for a mark still in the terminal.
    fn mark(&self, i: usize, from: u64) -> Option<(u64, u64)> {
        mark::find(&self.pane, &format!("\x1b]7770;{};{}\x07", self.nonce, i + 1), from)
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
