//! `fugue_wait`: wait on one or several panes until one (`any`) or every one (`all`) has an
//! outcome — its command ended, its program exited, it asks, or `until` matched.
//!
//! In: pane ids (1 to 32), the mode, an optional pattern searched in what each pane prints after
//! the call starts, a timeout and how many lines each answer shows. The call sleeps in the one
//! `Waiter` on every pane's status and shell-record channels (and output, with a pattern), the
//! call's cancel channel, the progress heartbeat and a deadline: the next input look, or the
//! timeout. Nothing polls, and waiting costs nothing while nothing happens. Out: `status` (done or
//! timeout), `fired` (ids in the order they fired), one result per pane in the order asked (the
//! outcome's fields and what the pane shows), and `duration_ms`. Cancelling ends only the wait.

use crate::error::{Error, Result};
use crate::pane::Pane;
use crate::pane::activity::InputWatch;
use crate::pane::budget::{self, Budget, Output};
use crate::pane::exit::{ExitFields, SignalField};
use crate::pane::mark::{self, CATCH_UP};
use crate::pane::search::{Found, Scan, compile};
use crate::pane::tail;
use crate::runtime::{Ctx, Tool};
use crate::shell::Prompt;
use crate::shell::live::Live;
use crate::tool::args::Args;
use crate::tool::choice::Choice;
use crate::tool::{Answer, Asking, RUNS, schema::*};
use crate::tools::answer::{ExecStatus, WaitStatus};
use crate::waiter::{Waiter, Woke};
use crate::words::words;
use crossbeam_channel::Receiver;
use regex::Regex;
use serde::Serialize;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

// Defaults of absent arguments, declared in the schema and applied by the handler.
/// `timeout_ms`: five minutes.
const TIMEOUT_MS: u64 = 300_000;
/// `tail_lines`.
const TAIL_LINES: u64 = 10;
/// The most panes one call waits on.
const MAX_PANES: usize = 32;
/// The longest wait one call accepts: one day.
const MAX_TIMEOUT_MS: u64 = 86_400_000;
/// The most lines a result may show.
const MAX_TAIL_LINES: u64 = 1000;
/// The least bytes of output one pane's result gets when many share the answer.
const MIN_RESULT_BYTES: usize = 512;
/// How far back a job's begin mark is looked for.
const JOB_LOOK_BACK: u64 = 256 << 10;

words! {
    /// Whether the wait ends at the first pane's outcome or at every pane's.
    enum Mode {
        Any = "any",
        All = "all",
    }
}

pub(crate) const TOOL: Tool = Tool {
    name: "fugue_wait",
    title: "Wait on panes",
    description: "Wait on 1-32 panes (jobs started with fugue_exec until/running, panes of \
                  commands) and answer when one (mode any) or all have an outcome: ok/failed \
                  (exit_code, cwd: a shell's command ended, even before this call), exited (the \
                  pane's program ended), input (`program` asks; output shows the question), matched \
                  (until matched output printed after the call). \
                  results in pane_ids order, each with its last lines + errors; fired: first \
                  first; status timeout leaves the rest running.",
    hints: RUNS,
    input: || {
        object(
            &[
                (
                    "pane_ids",
                    json!({"type": "array", "items": {"type": "string"}, "minItems": 1,
                           "maxItems": MAX_PANES, "description": "Panes to wait on"}),
                ),
                ("mode", Mode::schema("any: the first outcome; all: every pane's")),
                ("until", string("Regex for output printed after the call starts")),
                ("timeout_ms", integer_or("Give up after this long", TIMEOUT_MS)),
                ("tail_lines", integer_or("Lines of each pane's output to show", TAIL_LINES)),
                crate::tools::common::keep_schema(),
            ],
            &["pane_ids"],
        )
    },
    output: || {
        result(&[
            ("status", WaitStatus::words()),
            ("fired", typed("array")),
            (
                "results",
                json!({"type": "array", "items": result(&[("status", ExecStatus::words())])}),
            ),
            ("duration_ms", typed("integer")),
        ])
    },
    durable: true,
    asks: true,
    call: wait,
};

/// What happened to one pane.
enum Fired {
    /// Its shell's command ended and the shell is back at its prompt; the command's output ends
    /// at `end`.
    Ended { status: i32, cwd: String, end: u64 },
    /// Its process ended.
    Exited,
    /// Its program waits for the terminal: its name, when known.
    Input(Option<String>),
    /// `until` matched.
    Matched(Found),
}

/// One pane waited on.
struct Watched {
    pane: Arc<Pane>,
    scan: Option<Scan>,
    input: InputWatch,
    outcome: Option<Fired>,
    /// What wakes the wait for this pane: how it ends, its shell's records, and with a pattern
    /// its output.
    wakes: Vec<Receiver<()>>,
    /// The shell's prompt count at the last look at whether it sits idle. Its command can only end
    /// with a new prompt record, so a wake for output alone (with `until`) costs no /proc look.
    prompts_seen: Option<u64>,
    /// The shell reported its command's end; the wait goes on until the command's end mark is in
    /// the output (the record can overtake the terminal's bytes), or until `by`.
    ending: Option<(Prompt, Instant)>,
}

impl Watched {
    fn new(pane: Arc<Pane>, pattern: Option<&Regex>) -> Watched {
        let mut wakes = vec![pane.output().subscribe_status()];
        wakes.extend(Live::of(&pane).map(|live| live.shell.subscribe()));
        let scan = pattern.map(|regex| {
            // Subscribe before the start point is read, so nothing printed between is missed.
            wakes.push(pane.output().subscribe());
            Scan::new(regex.clone(), pane.output().end())
        });
        let input = InputWatch::new(&pane);
        Watched { pane, scan, input, outcome: None, wakes, prompts_seen: None, ending: None }
    }

    /// The pane's outcome now, if it has one: a match first, then its end, its shell back at
    /// the prompt, a question.
    fn look(&mut self) -> Option<Fired> {
        if let Some(found) = self.scan.as_mut().and_then(|scan| scan.catch_up(&self.pane)) {
            return Some(Fired::Matched(found));
        }
        if !self.pane.is_running() {
            return Some(Fired::Exited);
        }
        if let Some(ended) = self.command_end() {
            return Some(ended);
        }
        self.input.check().then(|| Fired::Input(self.input.program()))
    }

    /// The end of the shell's command: its prompt record says the command ended, and the output
    /// holds the mark where the command's output ends. A command whose record has come but whose
    /// output is still on its way through the terminal is waited for, so that the answer holds
    /// its output — up to `CATCH_UP`, for a mark that never comes.
    fn command_end(&mut self) -> Option<Fired> {
        let pane = self.pane.clone();
        let live = Live::of(&pane)?;
        let shell = live.shell;
        let prompts = shell.with(|s| s.prompts);
        if self.ending.is_none() && self.prompts_seen != Some(prompts) {
            self.prompts_seen = Some(prompts);
            if let Some(prompt) = live.idle() {
                // Subscribed before the look at the output, so the mark cannot slip between.
                self.wakes.push(self.pane.output().subscribe());
                self.ending = Some((prompt, Instant::now() + CATCH_UP));
            }
        }
        let (prompt, by) = self.ending.as_ref()?;
        let from = self.pane.output().end().saturating_sub(JOB_LOOK_BACK);
        let end = match mark::locate(&self.pane, &shell.end_mark(prompt), from) {
            Some((end, _)) => end,
            None if Instant::now() >= *by => self.pane.output().end(),
            None => return None,
        };
        Some(Fired::Ended { status: prompt.status, cwd: prompt.cwd.clone(), end })
    }

    /// When this pane must be looked at again, whatever its channels say.
    fn next_look(&self) -> Option<Instant> {
        let catch_up = self.ending.as_ref().map(|(_, by)| *by);
        [self.input.next_check(), catch_up].into_iter().flatten().min()
    }

    /// The pane's entry in the answer: its outcome, and what it shows within `budget`.
    fn result(&self, budget: &Budget<'_>) -> PaneResult<'_> {
        let mut result = PaneResult {
            pane_id: &self.pane.id,
            status: ExecStatus::Running,
            exit: None,
            cwd: None,
            program: None,
            found: None,
            line: None,
            output: Output::default(),
            alternate_screen: false,
        };
        match &self.outcome {
            None => {}
            Some(Fired::Ended { status, cwd, end }) => {
                result.status = if *status == 0 { ExecStatus::Ok } else { ExecStatus::Failed };
                result.exit = Some(ExitFields {
                    exit_code: Some(*status),
                    signal: None,
                    field: SignalField::WhenSignalled,
                });
                result.cwd = Some(cwd);
                let from = job_start(&self.pane);
                result.output = budget::output(&self.pane, from, *end, budget).into();
                return result;
            }
            Some(Fired::Exited) => {
                result.status = ExecStatus::Exited;
                let exit = self.pane.output().exit();
                result.exit = Some(ExitFields::new(exit, SignalField::WhenSignalled));
            }
            Some(Fired::Input(program)) => {
                result.status = ExecStatus::Input;
                result.program = program.as_deref();
            }
            Some(Fired::Matched(found)) => {
                result.status = ExecStatus::Matched;
                result.found = Some(found);
            }
        }
        let shown = tail::shown_since(&self.pane, job_start(&self.pane), budget);
        if result.status == ExecStatus::Input {
            result.line = Some(tail::question(shown.text()).to_string());
        }
        let found_on_screen = matches!(&self.outcome, Some(Fired::Matched(f)) if f.screen);
        result.alternate_screen = shown.alternate || found_on_screen;
        result.output = shown.fitted.into();
        result
    }
}

/// One pane's entry in `fugue_wait`'s answer: its outcome's fields and what it shows.
#[derive(Serialize)]
struct PaneResult<'a> {
    pane_id: &'a str,
    status: ExecStatus,
    #[serde(flatten)]
    exit: Option<ExitFields>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    program: Option<&'a str>,
    #[serde(flatten)]
    found: Option<&'a Found>,
    /// The question, for `input`.
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<String>,
    #[serde(flatten)]
    output: Output,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    alternate_screen: bool,
}

/// `fugue_wait`'s answer.
#[derive(Serialize)]
struct WaitAnswer<'a> {
    status: WaitStatus,
    fired: Vec<String>,
    results: Vec<PaneResult<'a>>,
    duration_ms: u64,
}

impl WaitAnswer<'_> {
    /// The first pane whose program asks, and its question.
    fn asks(&self) -> Option<Asking> {
        let asked = self.results.iter().find(|r| r.status == ExecStatus::Input)?;
        Some(Asking {
            pane_id: asked.pane_id.to_string(),
            question: asked.line.as_deref().unwrap_or_default().trim().to_string(),
            program: asked.program.map(str::to_string),
        })
    }
}

/// Where the output of the pane's job begins: in a live shell, where its command's output began
/// (`Live::job_start`), so a result shows that job's lines and not the pane's earlier history; the
/// start of the output otherwise.
fn job_start(pane: &Pane) -> u64 {
    let from = pane.output().end().saturating_sub(JOB_LOOK_BACK);
    Live::of(pane).and_then(|live| live.job_start(from)).unwrap_or(0)
}

fn wait(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Answer> {
    let started = Instant::now();
    let all = Mode::parse(args, "mode")? == Mode::All;
    let regex_limit = ctx.config.max_regex_bytes;
    let pattern = args.str("until")?.map(|p| compile(p, regex_limit)).transpose()?;
    let timeout = args.u64("timeout_ms", 0, MAX_TIMEOUT_MS)?.unwrap_or(TIMEOUT_MS);
    let lines = args.u64("tail_lines", 0, MAX_TAIL_LINES)?.unwrap_or(TAIL_LINES) as usize;
    let keep = crate::tools::common::keep(args, regex_limit)?;
    let deadline = started + Duration::from_millis(timeout);
    // The ids are looked up last: every argument is checked before anything is looked at.
    let panes = panes(ctx, args)?;
    let mut watched: Vec<Watched> =
        panes.into_iter().map(|pane| Watched::new(pane, pattern.as_ref())).collect();
    let mut fired = Vec::new();
    let waiter = Waiter::new()
        .cancel(ctx.cancel.receiver())
        .until(deadline)
        .heartbeat(ctx.progress.heartbeat());
    let done = loop {
        fire(&mut watched, &mut fired);
        let enough = if all { fired.len() == watched.len() } else { !fired.is_empty() };
        if enough {
            break true;
        }
        match sleep(&waiter, &watched) {
            Woke::Look => {}
            Woke::Heartbeat => report(ctx, &watched, started, deadline),
            Woke::Deadline => break false,
            Woke::Cancelled => return Err(Error::cancelled()),
        }
    };
    // The answer's budget is shared among the panes.
    let bytes = budget::default_bytes(ctx.config.max_output_bytes) / watched.len();
    let bytes = bytes.max(MIN_RESULT_BYTES);
    let budget = Budget::tail(bytes, lines, keep.as_ref());
    let answer = WaitAnswer {
        status: if done { WaitStatus::Done } else { WaitStatus::Timeout },
        fired,
        results: watched.iter().map(|w| w.result(&budget)).collect(),
        duration_ms: started.elapsed().as_millis() as u64,
    };
    Ok(Answer::of(&answer)?.asking(answer.asks()))
}

/// The panes named, each found before anything waits; one named twice is an error.
fn panes(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Vec<Arc<Pane>>> {
    let ids = args.strings("pane_ids")?;
    if ids.is_empty() || ids.len() > MAX_PANES {
        return Err(Error::invalid(format!(
            "pane_ids holds {} ids; give 1 to {MAX_PANES}",
            ids.len()
        )));
    }
    let mut panes: Vec<Arc<Pane>> = Vec::with_capacity(ids.len());
    for id in &ids {
        let pane = ctx.mux.pane(id)?;
        if panes.iter().any(|p| p.id == pane.id) {
            return Err(Error::invalid(format!("pane_ids names pane {} twice", pane.id)));
        }
        panes.push(pane);
    }
    Ok(panes)
}

/// Records the outcome of every pane that has one now, in the order of `pane_ids`.
fn fire(watched: &mut [Watched], fired: &mut Vec<String>) {
    for w in watched.iter_mut().filter(|w| w.outcome.is_none()) {
        if let Some(outcome) = w.look() {
            w.outcome = Some(outcome);
            fired.push(w.pane.id.clone());
        }
    }
}

/// Sleeps until a pane still waited on announces a change or has a look due, the heartbeat ticks,
/// the call is cancelled or the deadline passes.
fn sleep(waiter: &Waiter, watched: &[Watched]) -> Woke {
    let waiting = || watched.iter().filter(|w| w.outcome.is_none());
    let wakes: Vec<&Receiver<()>> = waiting().flat_map(|w| &w.wakes).collect();
    let look = waiting().filter_map(Watched::next_look).min();
    waiter.sleep_on(&wakes, look)
}

/// Progress: the seconds waited, and what still runs.
fn report(ctx: &Ctx<'_>, watched: &[Watched], started: Instant, deadline: Instant) {
    let running: Vec<String> = watched
        .iter()
        .filter(|w| w.outcome.is_none())
        .map(|w| {
            let short = crate::ids::short_id(&w.pane.id);
            match w.pane.command.as_deref() {
                Some(command) => format!("{short} ({command})"),
                None => short.to_string(),
            }
        })
        .collect();
    let total = deadline.saturating_duration_since(started).as_secs_f64();
    let message = format!("waiting on {}", running.join(", "));
    ctx.progress.report(started.elapsed().as_secs_f64(), Some(total), &message);
}
