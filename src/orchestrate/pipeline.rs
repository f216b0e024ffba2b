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
//! killed. The directory is removed when the call ends, however it ends.

use super::{check_cwd, check_unique, command, tail};
use crate::config::config;
use crate::error::{Error, ErrorKind, Result};
use crate::mux::{ORCHESTRATION_SESSION, PaneArgs, new_id, short_id};
use crate::pane::Pane;
use crate::pane::exit::{Exit, SignalField, write_exit};
use crate::runtime::{Ctx, TempDirs, Tool};
use crate::tool::args::Args;
use crate::tool::call::Progress;
use crate::tool::{RUNS, schema::*};
use crossbeam_channel::{Receiver, Sender, after, never, select};
use serde_json::{Value, json};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most steps one pipeline takes.
const MAX_STEPS: usize = 100;
/// How long an interrupted step may take to stop before its pane is killed.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);
/// How long to wait for the driver's lines still in the FIFO once the shell has ended, and for an
/// end-of-step mark still in the terminal once its status has arrived. Both were written before
/// what we already saw, so they arrive at once; the bound only guards against a wedged reader.
const CATCH_UP: Duration = Duration::from_secs(2);
/// The longest status line the driver writes is about 30 bytes.
const MAX_STATUS_LINE: u64 = 256;

const DRIVER: &str = include_str!("driver.sh");

pub(crate) const TOOL: Tool = Tool {
    name: "fugue_run_pipeline",
    title: "Run a command pipeline",
    description: "Run steps one after another in one pane and one shell (cd, export carry over). \
                  Per step: exact exit_code, duration_ms, status ok/failed/timeout/exited (it ended \
                  the shell). stop_on_error=true stops at the first failure; failed_at names it, \
                  output_tail holds its last tail_lines=10 lines. timeout_ms=600000 interrupts the \
                  running step. The pane stays, with an interactive shell for follow-ups, unless \
                  cleanup=true.",
    hints: RUNS,
    input: || {
        let step =
            object(&[("command", t("string")), ("name", string("Default step-N"))], &["command"]);
        object(
            &[
                (
                    "commands",
                    json!({"type": "array", "items": step, "minItems": 1, "maxItems": MAX_STEPS}),
                ),
                ("cwd", t("string")),
                ("env", env()),
                ("stop_on_error", t("boolean")),
                ("timeout_ms", t("integer")),
                ("cleanup", t("boolean")),
                ("tail_lines", t("integer")),
            ],
            &["commands"],
        )
    },
    output: || {
        result(&[
            ("status", t("string")),
            ("pane_id", t("string")),
            ("steps", t("array")),
            ("total_duration_ms", t("integer")),
        ])
    },
    call: run_pipeline,
};

struct Step {
    name: String,
    command: String,
}

struct Plan {
    steps: Vec<Step>,
    cwd: Option<PathBuf>,
    env: Vec<(String, String)>,
    stop_on_error: bool,
    timeout: Duration,
    cleanup: bool,
    tail_lines: usize,
}

/// A line from the driver.
#[derive(Debug, PartialEq, Eq)]
enum Event {
    /// Step n (1-based) starts.
    Begin(usize),
    /// Step n ended with this status.
    End(usize, i32),
    /// The driver left its loop; nothing more will come.
    Done,
    /// fugue's own line: everything the driver wrote before it has been read.
    Caught,
}

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
}

fn run_pipeline(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Value> {
    let started = Instant::now();
    let plan = parse_plan(args)?;
    let dir = PrivateDir::create(&ctx.temp_dirs)?;
    let nonce = new_id().replace('-', "");
    dir.write_steps(&plan, &nonce)?;
    let status = dir.fifo("status")?;
    let pane = start_pane(ctx, &plan, &dir)?;
    let mut run = Run {
        plan: &plan,
        pane,
        nonce,
        records: Vec::new(),
        done: false,
        shell_exit: None,
        interrupted: None,
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

fn parse_plan(args: &Args<'_>) -> Result<Plan> {
    let items = args.array("commands")?.ok_or_else(|| {
        Error::invalid("argument 'commands' is required: a list of {command, name?}")
    })?;
    if items.is_empty() || items.len() > MAX_STEPS {
        return Err(Error::invalid(format!(
            "'commands' has {} items; give 1 to {MAX_STEPS}",
            items.len()
        )));
    }
    let steps = items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_step(i, item))
        .collect::<Result<Vec<_>>>()?;
    check_unique(&steps.iter().map(|s| s.name.clone()).collect::<Vec<_>>(), "steps")?;
    let cwd = args.path("cwd")?;
    if let Some(cwd) = &cwd {
        check_cwd(cwd, "pipeline")?;
    }
    Ok(Plan {
        steps,
        cwd,
        env: args.env("env")?,
        stop_on_error: args.bool("stop_on_error")?.unwrap_or(true),
        timeout: super::run_timeout(args, 600_000)?,
        cleanup: args.bool("cleanup")?.unwrap_or(false),
        tail_lines: super::tail_lines(args)?,
    })
}

fn parse_step(index: usize, item: &Value) -> Result<Step> {
    let what = format!("commands[{index}]");
    let item = Args::object(&what, item)?;
    if let Some(key) = item.unknown(&["command", "name"]).first() {
        return Err(Error::invalid(format!(
            "{what}: unknown key '{key}'; a step takes command and name (cwd and env apply to \
             the whole pipeline)"
        )));
    }
    let command = command(&item, &what)?;
    let name = item.name("name")?.unwrap_or_else(|| format!("step-{}", index + 1));
    Ok(Step { name, command })
}

/// The pipeline's pane: a window of its own in the orchestration session, running the driver.
fn start_pane(ctx: &Ctx<'_>, plan: &Plan, dir: &PrivateDir) -> Result<Arc<Pane>> {
    let session = ctx.mux.ensure_session(ORCHESTRATION_SESSION)?;
    let (sh, _) = driver_shell(&config().shell);
    let source = format!(". {}", quote(&dir.path.join("run").to_string_lossy()));
    let command = format!("exec {} -c {} fugue", quote(sh), quote(&source));
    let args = PaneArgs {
        name: None,
        command: Some(command),
        cwd: plan.cwd.clone(),
        env: plan.env.clone(),
    };
    let window = format!("run-pipeline-{}", short_id(&new_id()));
    ctx.mux.create_window(&session, Some(window), args)
}

/// The shell that runs the driver and so the steps: the user's shell when it speaks the POSIX
/// language (so bash users keep `set -o pipefail`, `[[`, `source`), else /bin/sh. The flag says
/// whether steps need a syntax check first: bash survives a syntax error in `eval`, the others
/// exit.
fn driver_shell(shell: &str) -> (&str, bool) {
    let base = Path::new(shell).file_name().and_then(|b| b.to_str()).unwrap_or("");
    match base {
        "bash" => (shell, false),
        "sh" | "dash" | "ash" | "ksh" | "ksh93" | "mksh" | "yash" | "zsh" => (shell, true),
        _ => ("/bin/sh", true),
    }
}

/// One word for a POSIX shell (and for fish and zsh, which read `'\''` the same way).
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
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
        while !self.done && self.pane.is_running() {
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
            }
        }
        Ok(())
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
        let status = if self.interrupted.is_some() {
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
        if let Some(i) = failed {
            value["failed_at"] = json!(self.plan.steps[i].name);
            let (from, to) = self.range(i);
            let tail = tail(&self.pane, from, to, self.plan.tail_lines);
            if !tail.is_empty() {
                value["output_tail"] = json!(tail);
            }
        }
        Ok(value)
    }

    fn status(&self, i: usize) -> &'static str {
        let ended = self.records[i].ended;
        // A step that had not ended when the deadline passed timed out, whatever it said after.
        if let Some(at) = self.interrupted
            && ended.is_none_or(|(end, _)| end >= at)
        {
            return "timeout";
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
        let ended_at = match record.ended {
            Some((at, rc)) => {
                value["exit_code"] = if status == "timeout" { Value::Null } else { json!(rc) };
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
        let needle = format!("\x1b]7770;{};{}\x07", self.nonce, i + 1);
        let events = self.pane.output().subscribe();
        let until = Instant::now() + CATCH_UP;
        loop {
            let (bytes, start, settled) = self.pane.output().with(|s| {
                let (bytes, start) = s.ring.copy(from, u64::MAX);
                (bytes, start, s.eof || s.closed)
            });
            if let Some(at) = find(&bytes, needle.as_bytes()) {
                let at = start + at as u64;
                return Some((at, at + needle.len() as u64));
            }
            if settled || events.recv_deadline(until).is_err() {
                return None;
            }
        }
    }

    /// The error for a shell that ended before its first step.
    fn no_start(&self) -> Error {
        let end = self.pane.output().end();
        let said = tail(&self.pane, 0, end, 5);
        let how = match self.shell_exit {
            Some(Exit { code: Some(code), .. }) => format!("with exit code {code}"),
            Some(Exit { signal: Some(signal), .. }) => {
                format!("by {}", crate::pane::process::signal_name(signal))
            }
            _ => "unexpectedly".to_string(),
        };
        Error::new(
            ErrorKind::SpawnFailed,
            format!("the pipeline's shell ended {how} before its first step: {said:?}"),
        )
    }
}

/// Writes fugue's own `q` line into the FIFO when dropped, which ends the reader thread.
struct WakeReader<'a>(&'a File);

impl Drop for WakeReader<'_> {
    fn drop(&mut self) {
        let mut file = self.0;
        let _ = file.write_all(b"q\n");
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Turns the driver's lines into events until fugue's own `q` line; ignores anything malformed.
fn read_status(file: &File, tx: Sender<Event>) {
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.by_ref().take(MAX_STATUS_LINE).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let Some(event) = parse_event(&String::from_utf8_lossy(&line)) else { continue };
        let last = event == Event::Caught;
        if tx.send(event).is_err() || last {
            return;
        }
    }
}

fn parse_event(line: &str) -> Option<Event> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["b", n] => Some(Event::Begin(n.parse().ok()?)),
        ["e", n, rc] => Some(Event::End(n.parse().ok()?, rc.parse().ok()?)),
        ["x", _] => Some(Event::Done),
        ["q"] => Some(Event::Caught),
        _ => None,
    }
}

/// A directory only the user can enter, removed on drop.
struct PrivateDir {
    path: PathBuf,
    /// Where it is registered, so that fugue removes it if it stops first.
    registry: Arc<TempDirs>,
}

impl PrivateDir {
    fn create(registry: &Arc<TempDirs>) -> Result<PrivateDir> {
        let mut base = std::env::temp_dir();
        if base.is_relative() {
            base = std::env::current_dir()?.join(base);
        }
        let path = base.join(format!("fugue-pipeline-{}-{}", std::process::id(), new_id()));
        std::fs::DirBuilder::new().mode(0o700).create(&path).map_err(|e| {
            Error::new(ErrorKind::Io, format!("cannot create {}: {e}", path.display()))
        })?;
        registry.add(path.clone());
        Ok(PrivateDir { path, registry: registry.clone() })
    }

    fn write(&self, name: &str, text: &str) -> Result<()> {
        let path = self.path.join(name);
        let mut file =
            std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
        file.write_all(text.as_bytes())?;
        Ok(())
    }

    /// The step files and the driver that runs them.
    fn write_steps(&self, plan: &Plan, nonce: &str) -> Result<()> {
        for (i, step) in plan.steps.iter().enumerate() {
            self.write(&(i + 1).to_string(), &format!("{}\n", step.command))?;
        }
        let shell = &config().shell;
        let (sh, check) = driver_shell(shell);
        let flag = |b: bool| if b { "1" } else { "0" };
        let driver = DRIVER
            .replace("@DIR@", &quote(&self.path.to_string_lossy()))
            .replace("@COUNT@", &plan.steps.len().to_string())
            .replace("@NONCE@", nonce)
            .replace("@STOP_ON_ERROR@", flag(plan.stop_on_error))
            .replace("@CHECK@", flag(check))
            .replace("@SH@", &quote(sh))
            .replace("@KEEP@", flag(!plan.cleanup))
            .replace("@SHELL@", &quote(shell));
        self.write("run", &driver)
    }

    /// A FIFO opened for reading and writing: the open does not wait for the driver, reads never
    /// see end of file, and fugue can write its own `q` line to wake its reader.
    fn fifo(&self, name: &str) -> Result<File> {
        let path = self.path.join(name);
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::internal("the temporary directory's path holds NUL"))?;
        // SAFETY: mkfifo reads the NUL-terminated path, which outlives the call.
        if unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(Error::new(ErrorKind::Io, format!("cannot create a FIFO: {e}")));
        }
        Ok(std::fs::OpenOptions::new().read(true).write(true).open(&path)?)
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        self.registry.forget(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_lines_parse_and_junk_is_ignored() {
        assert_eq!(parse_event("b 3\n"), Some(Event::Begin(3)));
        assert_eq!(parse_event("e 2 127\n"), Some(Event::End(2, 127)));
        assert_eq!(parse_event("x 0\n"), Some(Event::Done));
        assert_eq!(parse_event("q\n"), Some(Event::Caught));
        for junk in ["", "e 1\n", "b x\n", "e 1 2 3\n", "hello\n"] {
            assert_eq!(parse_event(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn words_are_quoted_for_the_shell() {
        assert_eq!(quote("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn posix_shells_run_the_driver_and_others_get_sh() {
        assert_eq!(driver_shell("/usr/bin/bash"), ("/usr/bin/bash", false));
        assert_eq!(driver_shell("/bin/dash"), ("/bin/dash", true));
        assert_eq!(driver_shell("/usr/bin/fish"), ("/bin/sh", true));
    }

    #[test]
    fn every_placeholder_is_filled() {
        let plan = Plan {
            steps: vec![Step { name: "a".into(), command: "true".into() }],
            cwd: None,
            env: Vec::new(),
            stop_on_error: true,
            timeout: Duration::from_secs(1),
            cleanup: false,
            tail_lines: 10,
        };
        let dir = PrivateDir::create(&Arc::default()).unwrap();
        dir.write_steps(&plan, "abc").unwrap();
        let driver = std::fs::read_to_string(dir.path.join("run")).unwrap();
        assert!(!driver.contains('@'), "{driver}");
        let mode = std::fs::metadata(&dir.path).unwrap().permissions();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o700);
        let path = dir.path.clone();
        drop(dir);
        assert!(!path.exists());
    }
}
