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
use crate::ids::PaneId;
use crate::pane::Pane;
use crate::pane::activity::InputWatch;
use crate::pane::budget::{self, AnswerOutput, Budget};
use crate::pane::exit::Exit;
use crate::pane::mark::{self, CATCH_UP};
use crate::pane::search::{Found, Scan, compile};
use crate::pane::tail;
use crate::runtime::Runtime;
use crate::shell::Prompt;
use crate::shell::live::Live;
use crate::tool::params::{Params, Spec, Timeout, params};
use crate::tool::{Answer, Asking, RUNS, schema::*};
use crate::tool::{Ctx, Tool, choice::Choice};
use crate::tools::answer::{ExecStatus, Stand, WaitStatus};
use crate::tools::common::KEEP_AS_EXECS;
use crate::tools::common::quiet::Quiet;
use crate::waiter::{Drove, Look, Waiter};
use crate::words::words;
use crossbeam_channel::Receiver;
use regex::Regex;
use serde::Serialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

// Defaults of absent arguments, declared in the schema and applied by the handler.
/// `timeout_ms`: five minutes.
const TIMEOUT_MS: u64 = 300_000;
/// `tail_lines`.
const TAIL_LINES: u64 = 10;
/// The most panes one call waits on.
const MAX_PANES: usize = 32;
/// The most lines a result may show.
const MAX_TAIL_LINES: u64 = 1000;
/// The least bytes of output one pane's result gets when many share the answer.
const MIN_RESULT_BYTES: usize = 512;
/// How far back a job's begin mark is looked for.
const JOB_LOOK_BACK: u64 = 256 << 10;

words! {
    /// Whether the wait ends at the first pane's outcome or at every pane's.
    enum WaitMode {
        Any = "any",
        All = "all",
    }
}

pub(crate) const TOOL: Tool<Runtime> = Tool {
    name: "fugue_wait",
    title: "Wait on panes",
    description: "Wait on 1-32 panes (jobs left running, commands) and answer when one (mode any) or all have an outcome, as \
                  fugue_exec's (ok/failed even before this call; exited: its program ended; \
                  quiet), or matched (until matched output printed after the call). \
                  results in pane_ids order, each with its output; fired: first \
                  first; status timeout leaves the rest running.",
    hints: RUNS,
    input: WaitParams::schema,
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
    call: |ctx, args| wait(ctx, Params::read(args)?),
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
    /// It printed nothing for `quiet_ms` and does not ask.
    Quiet,
}

/// One pane waited on.
struct Watched {
    pane: Arc<Pane>,
    scan: Option<Scan>,
    input: InputWatch,
    /// The watchdog for silence, with `quiet_ms`.
    quiet: Option<Quiet>,
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
    fn new(
        pane: Arc<Pane>,
        pattern: Option<&Regex>,
        quiet: Option<std::time::Duration>,
    ) -> Watched {
        let mut wakes = vec![pane.output().subscribe_status()];
        wakes.extend(Live::of(&pane).map(|live| live.shell.subscribe()));
        let scan = pattern.map(|regex| {
            // Subscribe before the start point is read, so nothing printed between is missed.
            wakes.push(pane.output().subscribe());
            Scan::new(regex.clone(), pane.output().end())
        });
        let input = InputWatch::new(&pane);
        let quiet = quiet.map(|quiet| Quiet::new(&pane, quiet, Instant::now()));
        let (prompts_seen, ending) = (None, None);
        Watched { pane, scan, input, quiet, outcome: None, wakes, prompts_seen, ending }
    }

    /// The pane's outcome now, if it has one: a match first, then its end, its shell back at
    /// the prompt, a question, silence.
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
        if self.input.check() {
            return Some(Fired::Input(self.input.program()));
        }
        self.quiet.as_mut().is_some_and(Quiet::check).then_some(Fired::Quiet)
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
        let quiet = self.quiet.as_ref().map(Quiet::due);
        [self.input.next_check(), catch_up, quiet].into_iter().flatten().min()
    }

    /// The pane's entry in the answer: its outcome, and what it shows within `budget`.
    fn result(&self, budget: &Budget<'_>) -> PaneResult<'_> {
        let pane_id = &self.pane.id;
        let from = job_start(&self.pane);
        let mut stand = match &self.outcome {
            Some(Fired::Ended { status, cwd, end }) => {
                // A command that ended shows its own output, not the pane's last lines.
                let stand = Stand::ended(Some(Exit::Code(*status)), Some(cwd.clone()));
                let output = budget::output(&self.pane, from, *end, budget).into();
                return PaneResult { pane_id, stand, output, alternate_screen: false };
            }
            None => Stand::Running { cwd: None },
            Some(Fired::Exited) => Stand::exited(self.pane.output().exit(), None),
            Some(Fired::Input(program)) => {
                Stand::Input { cwd: None, program: program.clone(), line: None }
            }
            Some(Fired::Matched(found)) => Stand::Matched { found: found.clone() },
            Some(Fired::Quiet) => Stand::Quiet { cwd: None },
        };
        let shown = tail::shown_since(&self.pane, from, budget);
        if let Stand::Input { line, .. } = &mut stand {
            *line = Some(tail::question(shown.text()).to_string());
        }
        let alternate_screen = shown.alternate || stand.found_on_screen();
        PaneResult { pane_id, stand, output: shown.fitted.into(), alternate_screen }
    }
}

/// One pane's entry in `fugue_wait`'s answer: its outcome's fields and what it shows.
#[derive(Serialize)]
struct PaneResult<'a> {
    pane_id: &'a str,
    #[serde(flatten)]
    stand: Stand,
    #[serde(flatten)]
    output: AnswerOutput,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    alternate_screen: bool,
}

/// `fugue_wait`'s answer.
#[derive(Serialize)]
struct WaitAnswer<'a> {
    status: WaitStatus,
    fired: Vec<PaneId>,
    results: Vec<PaneResult<'a>>,
    duration_ms: u64,
}

impl WaitAnswer<'_> {
    /// The first pane whose program asks, and its question.
    fn asks(&self) -> Option<Asking> {
        self.results.iter().find_map(|result| match &result.stand {
            Stand::Input { program, line, .. } => Some(Asking {
                pane_id: result.pane_id.to_string(),
                question: line.as_deref().unwrap_or_default().trim().to_string(),
                program: program.clone(),
            }),
            _ => None,
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

params! {
    /// `fugue_wait`'s arguments.
    struct WaitParams {
        pane_ids: Vec<String> = Spec::new("Panes to wait on").range(1, MAX_PANES as u64).required(),
        mode: WaitMode = Spec::new("any: the first outcome; all: every pane's"),
        until: Option<String> = Spec::new("Regex for output printed after the call starts"),
        timeout_ms: Timeout = Spec::new("Give up after this long").or(TIMEOUT_MS),
        tail_lines: usize = Spec::new("Lines per result")
            .range(0, MAX_TAIL_LINES)
            .or(TAIL_LINES),
        quiet_ms: Option<u64> = crate::tools::common::quiet_row(""),
        keep: Option<String> = KEEP_AS_EXECS,
    }
}

fn wait(ctx: &Ctx<'_, Runtime>, args: WaitParams) -> Result<Answer> {
    let started = Instant::now();
    let all = args.mode == WaitMode::All;
    let regex_limit = ctx.config.max_regex_bytes;
    let pattern = args.until.map(|p| compile(&p, regex_limit)).transpose()?;
    let Timeout(timeout) = args.timeout_ms;
    let lines = args.tail_lines;
    let keep = crate::tools::common::keep(args.keep.as_deref(), regex_limit)?;
    let quiet = args.quiet_ms.map(std::time::Duration::from_millis);
    let deadline = started + timeout;
    // The ids are looked up last: every argument is checked before anything is looked at.
    let panes = panes(ctx, &args.pane_ids)?;
    let watched: Vec<Watched> =
        panes.into_iter().map(|pane| Watched::new(pane, pattern.as_ref(), quiet)).collect();
    let mut waiter = Waiter::new()
        .cancel(ctx.cancel.receiver())
        .until(deadline)
        .heartbeat(ctx.progress.heartbeat());
    let mut run = (watched, Vec::new());
    let look = |(watched, fired): &mut (Vec<Watched>, Vec<PaneId>)| look(watched, fired, all);
    let report = |(watched, _): &(Vec<Watched>, Vec<PaneId>)| {
        report(ctx, watched, started, deadline);
    };
    let done = match waiter.drive(&mut run, look, report) {
        Drove::Done(()) => true,
        Drove::Deadline => false,
        Drove::Cancelled => return Err(Error::cancelled()),
    };
    let (watched, fired) = run;
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
fn panes(ctx: &Ctx<'_, Runtime>, ids: &[String]) -> Result<Vec<Arc<Pane>>> {
    let mut panes: Vec<Arc<Pane>> = Vec::with_capacity(ids.len());
    for id in ids {
        let pane = ctx.mux.pane(id)?;
        if panes.iter().any(|p| p.id == pane.id) {
            return Err(Error::invalid(format!("pane_ids names pane {} twice", pane.id)));
        }
        panes.push(pane);
    }
    Ok(panes)
}

/// Records the outcome of every pane that has one now, in the order of `pane_ids`.
fn fire(watched: &mut [Watched], fired: &mut Vec<PaneId>) {
    for w in watched.iter_mut().filter(|w| w.outcome.is_none()) {
        if let Some(outcome) = w.look() {
            w.outcome = Some(outcome);
            fired.push(w.pane.id.clone());
        }
    }
}

/// One look at every pane still waited on: done once enough have an outcome; otherwise the wait
/// sleeps until one of them announces a change or has a look due.
fn look(watched: &mut [Watched], fired: &mut Vec<PaneId>, all: bool) -> Look<()> {
    fire(watched, fired);
    let enough = if all { fired.len() == watched.len() } else { !fired.is_empty() };
    if enough {
        return Look::Done(());
    }
    let waiting = || watched.iter().filter(|w| w.outcome.is_none());
    let wakes = waiting().flat_map(|w| w.wakes.iter().cloned()).collect();
    Look::AgainOn(waiting().filter_map(Watched::next_look).min(), wakes)
}

/// Progress: the seconds waited, and what still runs.
fn report(ctx: &Ctx<'_, Runtime>, watched: &[Watched], started: Instant, deadline: Instant) {
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
