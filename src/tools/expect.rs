//! `fugue_expect`: wait until a pane prints something matching a regex.
//!
//! The call subscribes to the pane's output events, then scans (`pane::search`): the text view of
//! everything from its start point on, and while a full-screen program shows it, the alternate
//! screen. Between scans it sleeps in the one `Waiter` (`Waiter::drive`) until the reader
//! announces new output or the process's end, the input watch has a look due, the deadline passes
//! or the client cancels; over a flood of output it lets the output gather a moment between scans
//! (`Pace`). A timeout or an `input` answer carries what the pane shows, so the agent sees why
//! without another call.

use crate::error::{Error, ErrorKind, Result};
use crate::pane::Pane;
use crate::pane::activity::InputWatch;
use crate::pane::budget::{self, AnswerOutput, Budget};
use crate::pane::exit::PaneState;
use crate::pane::output::TAIL_SCAN_LIMIT;
use crate::pane::search::{Found, Scan, compile};
use crate::pane::tail;
use crate::runtime::Runtime;
use crate::tool::params::{Params, Spec, Timeout, params};
use crate::tool::{Answer, Asking, RUNS, schema::*};
use crate::tool::{Ctx, Tool, choice::Choice};
use crate::tools::answer::ExpectStatus;
use crate::tools::common::KEEP_AS_EXECS;
use crate::tools::panes::PANE_ID;
use crate::waiter::{Drove, Look, Waiter};
use crate::words::words;
use regex::Regex;
use serde::Serialize;
use std::time::{Duration, Instant};

// Defaults of absent arguments, declared in the schema and applied by the handler.
/// `timeout_ms`: one minute.
const TIMEOUT_MS: u64 = 60_000;
/// `lines`.
const LINES: u64 = 100;
/// How many of the pane's last lines a timeout or an `input` answer shows.
const SHOWN_LINES: usize = 10;
/// The most bytes of the question an `input` answer quotes.
const MAX_QUESTION_BYTES: usize = 4 << 10;
/// How long a waiter lets streaming output gather between scans (see `Pace`).
const PACE: Duration = Duration::from_millis(1);

pub(crate) const TOOL: Tool<Runtime> = Tool {
    name: "fugue_expect",
    title: "Expect pattern",
    description: "Wait until a pane's output matches a regex (text view; while a full-screen \
                  program runs, also what its screen shows: alternate_screen true); \
                  answers when it appears. `^`/`$` match at line ends: anchor \
                  patterns (`^READY$`) to avoid matching the echoed command line. A pattern ending \
                  in spaces (`^>>> `) matches a prompt under the cursor. Without since: searches the last `lines` lines \
                  too; with since: only output after it. status: matched \
                  (match, line, groups, offset), timeout or input (on_input: return; `line` is \
                  the question) with `output` (what the pane shows), exited. action \
                  return_output adds `output`: the last `lines` lines.",
    hints: RUNS,
    input: ExpectParams::schema,
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
    call: |ctx, args| expect(ctx, Params::read(args)?),
};

words! {
    /// What to do on a match.
    enum OnMatch {
        Notify = "notify",
        ClosePane = "close_pane",
        ReturnOutput = "return_output",
    }
}

words! {
    /// `fugue_expect`'s `on_input`: keep waiting for the pattern, or answer `input`. Not the run
    /// tools' `on_input` (`asking::OnInput`): their words are `stop` and `wait`, and both are the
    /// contract.
    enum WhenAsked {
        Wait = "wait",
        Return = "return",
    }
}

/// What the answer carries besides the match: the action, and which output it shows.
struct Answering {
    action: OnMatch,
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
    fn output(&self, pane: &Pane) -> Option<AnswerOutput> {
        if self.action != OnMatch::ReturnOutput {
            return None;
        }
        let budget = Budget::tail(self.bytes, self.lines, self.keep.as_ref());
        Some(budget::output(pane, self.since, pane.output().end(), &budget).into())
    }

    /// `output` for a timeout or a question: what the pane shows, so the agent sees why without
    /// another call; and whether that is a full-screen program's screen.
    fn shown(&self, pane: &Pane) -> (AnswerOutput, bool) {
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
    output: Option<AnswerOutput>,
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
    /// The wait sleeps the pace's own pause: the look that ends it follows no wake.
    pausing: bool,
}

impl Pace {
    /// A look at `now`: unless it ends the pace's own pause, it follows a wake (or is the first).
    fn look(&mut self, now: Instant) {
        if !self.pausing {
            self.streaming = self.last.is_some_and(|last| now.duration_since(last) <= 2 * PACE);
            self.last = Some(now);
        }
    }

    /// After a scan that caught up: until when the output gathers (over a flood), or `None` to
    /// sleep until the pane prints (a quiet spell, or the pause just ended).
    fn caught_up(&mut self, now: Instant) -> Option<Instant> {
        self.pausing = self.streaming && !self.pausing;
        self.pausing.then(|| now + PACE)
    }
}

params! {
    /// `fugue_expect`'s arguments. (`poll_interval_ms`, once accepted and ignored, is gone: the
    /// wait wakes on each read, so an interval would only say what nothing does.)
    struct ExpectParams {
        pane_id: String = Spec::new(PANE_ID),
        pattern: String = Spec::new(
            "Regex, Rust `regex` syntax, multi-line mode. No look-around, no backreferences: \
             match the line itself instead",
        ),
        timeout_ms: Timeout = Spec::new("Give up after this long").or(TIMEOUT_MS),
        action: OnMatch = Spec::new("What to do on a match"),
        lines: usize = Spec::new("Lines of existing output to search, and to return")
            .range(1, 100_000)
            .or(LINES),
        since: Option<u64> = Spec::new("Search only output after this offset"),
        on_input: WhenAsked = Spec::new(
            "return: answer input if a program asks first",
        ),
        keep: Option<String> = KEEP_AS_EXECS,
    }
}

fn expect(ctx: &Ctx<'_, Runtime>, args: ExpectParams) -> Result<Answer> {
    let started = Instant::now();
    let pane = ctx.mux.pane(&args.pane_id)?;
    let pattern = args.pattern.as_str();
    let regex = compile(pattern, ctx.config.max_regex_bytes)?;
    let Timeout(timeout) = args.timeout_ms;
    let (action, lines, since) = (args.action, args.lines, args.since);
    let return_on_input = args.on_input == WhenAsked::Return;
    let keep = crate::tools::common::keep(args.keep.as_deref(), ctx.config.max_regex_bytes)?;

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
    let scan = Scan::new(regex, from);
    let pace = Pace::default();
    let mut expecting = Expecting { pane: &pane, pattern, scan, answering, started, input, pace };
    let deadline = started + timeout;
    let mut waiter = Waiter::new()
        .cancel(ctx.cancel.receiver())
        .until(deadline)
        .heartbeat(ctx.progress.heartbeat())
        .on(events);
    let report = |expecting: &Expecting<'_>| {
        let waiting = format!("waiting for /{}/", expecting.pattern);
        let secs = expecting.started.elapsed().as_secs_f64();
        ctx.progress.report(secs, Some(timeout.as_secs_f64()), &waiting);
    };
    match waiter.drive(&mut expecting, |expecting| expecting.look(ctx), report) {
        Drove::Done(answer) => answer,
        Drove::Deadline => expecting.last_look(ctx),
        Drove::Cancelled => Err(Error::cancelled()),
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
    pace: Pace,
}

/// What one look found.
enum Scanned {
    /// The call's answer (or error): a match, the pane's end, a question.
    Answer(Result<Answer>),
    /// More output than one scan takes is waiting.
    Behind,
    /// Everything printed so far was searched.
    Caught,
}

impl Expecting<'_> {
    /// One look of the wait: a scan, and what the wait does next. More output waiting to be
    /// scanned is scanned at once; over a flood (see `Pace`) the output gathers for `PACE` before
    /// the next scan; otherwise the wait sleeps until something is printed or a look is due.
    fn look(&mut self, ctx: &Ctx<'_, Runtime>) -> Look<Result<Answer>> {
        self.pace.look(Instant::now());
        match self.scan(ctx) {
            Scanned::Answer(answer) => Look::Done(answer),
            Scanned::Behind => Look::Again(Some(Instant::now())),
            Scanned::Caught => match self.pace.caught_up(Instant::now()) {
                Some(until) => Look::Pause(until),
                None => Look::Again(self.input.as_ref().and_then(InputWatch::next_check)),
            },
        }
    }

    /// One scan of what the pane printed since the last, then a look at the process.
    fn scan(&mut self, ctx: &Ctx<'_, Runtime>) -> Scanned {
        let step = self.scan.step(self.pane);
        if let Some(found) = step.found {
            return Scanned::Answer(self.matched(ctx, found));
        }
        if step.closed {
            let closed = format!("pane {} was closed while waiting", self.pane.id);
            return Scanned::Answer(Err(Error::new(ErrorKind::PaneClosed, closed)));
        }
        if step.exited {
            return Scanned::Answer(Answer::of(&self.outcome(ExpectStatus::Exited, step.end)));
        }
        if step.behind {
            return Scanned::Behind;
        }
        if self.input.as_mut().is_some_and(InputWatch::check) {
            let program = self.input.as_ref().and_then(InputWatch::program);
            let asked = self.outcome(ExpectStatus::Input, step.end);
            return Scanned::Answer(asking(self.pane, asked, program));
        }
        Scanned::Caught
    }

    /// The deadline passed: one last look, since output may have arrived with it.
    fn last_look(&mut self, ctx: &Ctx<'_, Runtime>) -> Result<Answer> {
        if let Some(found) = self.scan.step(self.pane).found {
            return self.matched(ctx, found);
        }
        Answer::of(&self.outcome(ExpectStatus::Timeout, self.pane.output().end()))
    }

    fn matched(&self, ctx: &Ctx<'_, Runtime>, found: Found) -> Result<Answer> {
        finish_match(ctx, self.pane, self.pattern, found, &self.answering, self.started)
    }

    fn outcome(&self, status: ExpectStatus, offset: u64) -> ExpectAnswer<'_> {
        outcome(self.pane, status, self.pattern, offset, &self.answering, self.started)
    }
}

fn finish_match(
    ctx: &Ctx<'_, Runtime>,
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
    if answering.action == OnMatch::ClosePane {
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
        pane_id: pane.id.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_gathers_once_between_wakes_and_a_quiet_spell_scans_at_once() {
        let mut pace = Pace::default();
        let t0 = Instant::now();
        pace.look(t0);
        assert_eq!(pace.caught_up(t0), None, "the first look sleeps until the pane prints");
        // Wakes within 2 × PACE of each other: a flood. The scan that caught up pauses once...
        let t1 = t0 + PACE;
        pace.look(t1);
        assert_eq!(pace.caught_up(t1), Some(t1 + PACE));
        // ... and the look that ends the pause counts as no wake, and sleeps until woken.
        let t2 = t1 + PACE;
        pace.look(t2);
        assert_eq!(pace.caught_up(t2), None);
        // A wake long after the last: scanned at once, no pause.
        let t3 = t2 + 10 * PACE;
        pace.look(t3);
        assert_eq!(pace.caught_up(t3), None);
    }
}
