//! `fugue_expect`: wait until a pane prints something matching a regex.
//!
//! The call subscribes to the pane's output events, then scans (`pane::search`): the text view of
//! everything from its start point on, and while a full-screen program shows it, the alternate
//! screen. It sleeps in `select!` until the reader announces new output, the process exits, the
//! deadline passes or the client cancels. A timeout or an `input` answer carries what the pane
//! shows, so the agent sees why without another call.

use crate::error::{Error, ErrorKind, Result};
use crate::pane::Pane;
use crate::pane::activity::InputWatch;
use crate::pane::budget::{self, Budget, Output};
use crate::pane::exit::PaneState;
use crate::pane::output::TAIL_SCAN_LIMIT;
use crate::pane::search::{Found, Scan, compile};
use crate::pane::tail;
use crate::runtime::{Ctx, Tool};
use crate::tool::args::Args;
use crate::tool::choice::Choice;
use crate::tool::{Answer, Asking, RUNS, schema::*};
use crate::tools::answer::ExpectStatus;
use crate::waiter::{Waiter, Woke};
use crate::words::words;
use crossbeam_channel::{RecvTimeoutError, TryRecvError};
use regex::Regex;
use serde::Serialize;
use std::time::{Duration, Instant};

// Defaults of absent arguments, declared in the schema and applied by the handler.
/// `timeout_ms`: one minute.
const TIMEOUT_MS: u64 = 60_000;
/// `poll_interval_ms`: the seed's value; accepted and unused, since the wait is event-driven.
const POLL_INTERVAL_MS: u64 = 200;
/// `lines`.
const LINES: u64 = 100;
/// How many of the pane's last lines a timeout or an `input` answer shows.
const SHOWN_LINES: usize = 10;
/// The most bytes of the question an `input` answer quotes.
const MAX_QUESTION_BYTES: usize = 4 << 10;
/// The longest wait one call accepts: one hour.
const MAX_TIMEOUT_MS: u64 = 3_600_000;
/// How long a waiter lets streaming output gather between scans (see `Pace`).
const PACE: Duration = Duration::from_millis(1);

pub(crate) const TOOL: Tool = Tool {
    name: "fugue_expect",
    title: "Expect pattern",
    description: "Wait until a pane's output matches a regex (text view; while a full-screen \
                  program runs, also what its screen shows: alternate_screen true); \
                  returns the moment it appears. `^`/`$` match at line ends: anchor \
                  patterns (`^READY$`) to avoid matching the echoed command line. A pattern ending \
                  in spaces (`^>>> `) matches a prompt under the cursor. Without since: searches the last `lines` lines \
                  too; with since: only output after it. status: matched \
                  (match, line, groups, offset), timeout or input (on_input: return; `line` is \
                  the question) with `output` (what the pane shows), exited. action \
                  return_output adds `output`: the last `lines` lines.",
    hints: RUNS,
    input: || {
        object(
            &[
                ("pane_id", string("Pane id or name")),
                (
                    "pattern",
                    string(
                        "Regex, Rust `regex` syntax, multi-line mode. No look-around, no \
                         backreferences: match the line itself instead",
                    ),
                ),
                ("timeout_ms", integer_or("Give up after this long", TIMEOUT_MS)),
                ("action", Action::schema("What to do on a match")),
                (
                    "poll_interval_ms",
                    integer_or(
                        "Accepted for compatibility; unused (event-driven)",
                        POLL_INTERVAL_MS,
                    ),
                ),
                ("lines", integer_or("Lines of existing output to search, and to return", LINES)),
                ("since", integer("Search only output after this offset")),
                (
                    "on_input",
                    OnInput::schema(
                        "return: answer status input (and program) if a program waits for keyboard input first",
                    ),
                ),
                crate::tools::common::keep_schema(),
            ],
            &["pane_id", "pattern"],
        )
    },
    output: || {
        result(&[
            ("status", ExpectStatus::words()),
            ("pattern", typed("string")),
            ("duration_ms", typed("integer")),
            ("offset", typed("integer")),
            ("program", typed("string")),
        ])
    },
    durable: true,
    asks: true,
    call: expect,
};

words! {
    /// What to do on a match.
    enum Action {
        Notify = "notify",
        ClosePane = "close_pane",
        ReturnOutput = "return_output",
    }
}

words! {
    /// `fugue_expect`'s `on_input`: keep waiting for the pattern, or answer `input`. Not the run
    /// tools' `on_input` (`asking::OnInput`): their words are `stop` and `wait`, and both are the
    /// contract.
    enum OnInput {
        Wait = "wait",
        Return = "return",
    }
}

/// What the answer carries besides the match: the action, and which output it shows.
struct Answering {
    action: Action,
    lines: usize,
    /// With `since`, the output returned begins there; otherwise 0.
    since: u64,
    keep: Option<Regex>,
    /// The output's budget (`budget::default_bytes`).
    bytes: usize,
}

impl Answering {
    /// `output` for `return_output`: the last `lines` lines of what came after `since`, with the
    /// lines that matter before them, within the budget.
    fn output(&self, pane: &Pane) -> Option<Output> {
        if self.action != Action::ReturnOutput {
            return None;
        }
        let budget = Budget::tail(self.bytes, self.lines, self.keep.as_ref());
        Some(budget::output(pane, self.since, pane.output().end(), &budget).into())
    }

    /// `output` for a timeout or a question: what the pane shows, so the agent sees why without
    /// another call; and whether that is a full-screen program's screen.
    fn shown(&self, pane: &Pane) -> (Output, bool) {
        let budget = Budget::tail(MAX_QUESTION_BYTES, SHOWN_LINES, self.keep.as_ref());
        let shown = tail::shown_since(pane, self.since, &budget);
        (shown.fitted.into(), shown.alternate)
    }
}

/// `fugue_expect`'s answer.
#[derive(Serialize)]
struct ExpectAnswer<'a> {
    status: ExpectStatus,
    pattern: &'a str,
    duration_ms: u64,
    offset: u64,
    #[serde(flatten)]
    found: Option<Found>,
    /// The question, for `input`.
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    program: Option<String>,
    #[serde(flatten)]
    output: Option<Output>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    alternate_screen: bool,
    /// The pane's state, for `exited`.
    #[serde(flatten)]
    state: Option<PaneState>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    closed: bool,
}

/// Paces the scans of a waiter over streaming output. A wake after a quiet spell scans at once.
/// When wakes come within `2 × PACE` of each other — a flood, one wake per PTY read of a few KB —
/// the waiter lets output gather for `PACE` before each scan, so a flood costs one scan per `PACE`
/// instead of one per read, and the reader's notifications meanwhile find the waiter's one-slot
/// channel full and wake nobody.
#[derive(Default)]
struct Pace {
    last: Option<Instant>,
    streaming: bool,
}

impl Pace {
    fn woke(&mut self) {
        let now = Instant::now();
        self.streaming = self.last.is_some_and(|last| now.duration_since(last) <= 2 * PACE);
        self.last = Some(now);
    }
}

fn expect(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Answer> {
    let started = Instant::now();
    let pane = ctx.mux.pane(args.required_str("pane_id")?)?;
    let pattern = args.required_str("pattern")?;
    let regex = compile(pattern, ctx.config.max_regex_bytes)?;
    let timeout =
        Duration::from_millis(args.u64("timeout_ms", 0, MAX_TIMEOUT_MS)?.unwrap_or(TIMEOUT_MS));
    let action = Action::parse(args, "action")?;
    args.u64("poll_interval_ms", 0, MAX_TIMEOUT_MS)?;
    let lines = args.u64("lines", 1, 100_000)?.unwrap_or(LINES) as usize;
    let since = args.u64("since", 0, u64::MAX)?;
    let return_on_input = OnInput::parse(args, "on_input")? == OnInput::Return;
    let keep = crate::tools::common::keep(args, ctx.config.max_regex_bytes)?;

    // Subscribe before the first look, so nothing printed in between is missed.
    let events = pane.output().subscribe();
    let from = pane.output().with(|s| match since {
        Some(since) if since > s.ring.end() => Err(Error::invalid(format!(
            "since={since} is past the end of the pane's output ({})",
            s.ring.end()
        ))),
        Some(since) => Ok(since),
        None => Ok(s.ring.tail_start(lines, TAIL_SCAN_LIMIT)),
    })?;
    let bytes = budget::default_bytes(ctx.config.max_output_bytes);
    let answering = Answering { action, lines, since: since.unwrap_or(0), keep, bytes };
    let input = return_on_input.then(|| InputWatch::new(&pane));
    let mut expecting =
        Expecting { pane: &pane, pattern, scan: Scan::new(regex, from), answering, started, input };
    let mut waiter = Waiter::new()
        .cancel(ctx.cancel.receiver())
        .until(started + timeout)
        .heartbeat(ctx.progress.heartbeat())
        .on(events);
    let mut pace = Pace::default();
    loop {
        let behind = match expecting.look(ctx) {
            Look::Answer(answer) => return answer,
            Look::Behind => true,
            Look::Caught => false,
        };
        // More output waits to be scanned: the next scan goes at once, while time is left.
        if behind && Instant::now() < started + timeout {
            if let Err(TryRecvError::Disconnected) = ctx.cancel.receiver().try_recv() {
                return Err(Error::cancelled());
            }
            continue;
        }
        if pace.streaming && gather(ctx, started + timeout).is_err() {
            return Err(Error::cancelled());
        }
        match waiter.sleep(expecting.input.as_ref().and_then(InputWatch::next_check)) {
            Woke::Look => pace.woke(),
            Woke::Heartbeat => {
                let secs = started.elapsed().as_secs_f64();
                let waiting = format!("waiting for /{pattern}/");
                ctx.progress.report(secs, Some(timeout.as_secs_f64()), &waiting);
            }
            Woke::Cancelled => return Err(Error::cancelled()),
            Woke::Deadline => return expecting.last_look(ctx),
        }
    }
}

/// Lets streaming output gather for `PACE` before the next scan (see `Pace`); `Err` when the call
/// is cancelled meanwhile.
fn gather(ctx: &Ctx<'_>, deadline: Instant) -> std::result::Result<(), ()> {
    let gather = PACE.min(deadline.saturating_duration_since(Instant::now()));
    match ctx.cancel.receiver().recv_timeout(gather) {
        Err(RecvTimeoutError::Disconnected) => Err(()),
        _ => Ok(()),
    }
}

/// One call's search of a pane's output, and what it answers with.
struct Expecting<'a> {
    pane: &'a Pane,
    pattern: &'a str,
    scan: Scan,
    answering: Answering,
    started: Instant,
    /// Watches for the program asking, with `on_input: return`.
    input: Option<InputWatch>,
}

/// What one look found.
enum Look {
    /// The call's answer (or error): a match, the pane's end, a question.
    Answer(Result<Answer>),
    /// More output than one scan takes is waiting.
    Behind,
    /// Everything printed so far was searched.
    Caught,
}

impl Expecting<'_> {
    /// One scan of what the pane printed since the last, then a look at the process.
    fn look(&mut self, ctx: &Ctx<'_>) -> Look {
        let step = self.scan.step(self.pane);
        if let Some(found) = step.found {
            return Look::Answer(self.matched(ctx, found));
        }
        if step.closed {
            let closed = format!("pane {} was closed while waiting", self.pane.id);
            return Look::Answer(Err(Error::new(ErrorKind::PaneClosed, closed)));
        }
        if step.exited {
            return Look::Answer(Answer::of(&self.outcome(ExpectStatus::Exited, step.end)));
        }
        if step.behind {
            return Look::Behind;
        }
        if self.input.as_mut().is_some_and(InputWatch::check) {
            let program = self.input.as_ref().and_then(InputWatch::program);
            let asked = self.outcome(ExpectStatus::Input, step.end);
            return Look::Answer(asking(self.pane, asked, program));
        }
        Look::Caught
    }

    /// The deadline passed: one last look, since output may have arrived with it.
    fn last_look(&mut self, ctx: &Ctx<'_>) -> Result<Answer> {
        if let Some(found) = self.scan.step(self.pane).found {
            return self.matched(ctx, found);
        }
        Answer::of(&self.outcome(ExpectStatus::Timeout, self.pane.output().end()))
    }

    fn matched(&self, ctx: &Ctx<'_>, found: Found) -> Result<Answer> {
        finish_match(ctx, self.pane, self.pattern, found, &self.answering, self.started)
    }

    fn outcome(&self, status: ExpectStatus, offset: u64) -> ExpectAnswer<'_> {
        outcome(self.pane, status, self.pattern, offset, &self.answering, self.started)
    }
}

fn finish_match(
    ctx: &Ctx<'_>,
    pane: &Pane,
    pattern: &str,
    found: Found,
    answering: &Answering,
    started: Instant,
) -> Result<Answer> {
    let mut answer = ExpectAnswer::new(ExpectStatus::Matched, pattern, found.offset, started);
    answer.alternate_screen = found.screen;
    answer.found = Some(found);
    answer.output = answering.output(pane);
    if answering.action == Action::ClosePane {
        // Through the registry, so the pane leaves the session as with fugue_close_pane; if
        // someone closed it meanwhile, it is gone all the same.
        let _ = ctx.mux.close_pane(&pane.id);
        answer.closed = true;
    }
    Answer::of(&answer)
}

impl<'a> ExpectAnswer<'a> {
    fn new(status: ExpectStatus, pattern: &'a str, offset: u64, started: Instant) -> Self {
        ExpectAnswer {
            status,
            pattern,
            duration_ms: started.elapsed().as_millis() as u64,
            offset,
            found: None,
            line: None,
            program: None,
            output: None,
            alternate_screen: false,
            state: None,
            closed: false,
        }
    }
}

/// The answer of a wait that ended without a match: `exited`, `timeout` or `input`.
fn outcome<'a>(
    pane: &Pane,
    status: ExpectStatus,
    pattern: &'a str,
    offset: u64,
    answering: &Answering,
    started: Instant,
) -> ExpectAnswer<'a> {
    let mut answer = ExpectAnswer::new(status, pattern, offset, started);
    if status == ExpectStatus::Exited {
        answer.state = Some(PaneState::new(pane.output().exit()));
    }
    answer.output = answering.output(pane);
    if answer.output.is_none() && status != ExpectStatus::Exited {
        let (output, alternate) = answering.shown(pane);
        answer.output = Some(output);
        answer.alternate_screen = alternate;
    }
    answer
}

/// The answer `input`: the program that asks, and its question, in the answer and as what it
/// asks.
fn asking(pane: &Pane, mut asked: ExpectAnswer<'_>, program: Option<String>) -> Result<Answer> {
    let line = question(pane);
    let asks = Asking {
        pane_id: pane.id.clone(),
        question: line.trim().to_string(),
        program: program.clone(),
    };
    asked.line = Some(line);
    asked.program = program;
    Ok(Answer::of(&asked)?.asking(Some(asks)))
}

/// The last line that holds anything but blanks of what the pane shows: a waiting program's
/// question.
fn question(pane: &Pane) -> String {
    let budget = Budget::tail(MAX_QUESTION_BYTES, 5, None);
    tail::question(tail::shown(pane, &budget).text()).to_string()
}
