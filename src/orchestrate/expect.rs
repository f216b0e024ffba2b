//! `fugue_expect`: wait until a pane prints something matching a regex.
//!
//! The call subscribes to the pane's output events, then scans: the text view of everything from its
//! start point on, rendered line by line, so colours and `\r` redraws cannot hide a match. It sleeps
//! in `select!` until the reader announces new output, the process exits, the deadline passes or
//! the client cancels. Each wake scans from the first line not yet complete, and the last few
//! complete lines before it for a match that spans lines, so a long wait over a chatty pane does
//! linear work.

use crate::config::config;
use crate::error::{Error, ErrorKind, Result};
use crate::pane::Pane;
use crate::pane::activity::{InputWatch, quiet_period};
use crate::pane::output::{Format, ReadRequest, TAIL_SCAN_LIMIT};
use crate::pane::text;
use crate::pane::tools::add_exit;
use crate::runtime::{Ctx, Tool};
use crate::tool::args::Args;
use crate::tool::{RUNS, schema::*};
use crossbeam_channel::{RecvTimeoutError, TryRecvError, after, never, select};
use regex::{Regex, RegexBuilder};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// How much of an unfinished line is searched again on every wake. An endless line (a progress bar
/// without newlines, megabytes of minified JSON) would otherwise be rendered again in full for each
/// read of the terminal, which is quadratic, and past a million columns the text view cuts it, so
/// a match at its end was missed until the deadline. A match inside such a line must fit in its
/// last 64 KiB.
const RESCAN_LIMIT: usize = 64 << 10;
/// How many complete lines (`CONTEXT_LINES`, at most `CONTEXT_BYTES` of output) a wake searches
/// again with the new output: a match that spans lines is found however its lines arrive when
/// those lines, whole, are at most 32 and 8 KiB.
const CONTEXT_LINES: usize = 32;
const CONTEXT_BYTES: usize = 8 << 10;
// Defaults of absent arguments, declared in the schema and applied by the handler.
/// `timeout_ms`: one minute.
const TIMEOUT_MS: u64 = 60_000;
/// `action`.
const ACTION: &str = "notify";
/// `poll_interval_ms`: the seed's value; accepted and unused, since the wait is event-driven.
const POLL_INTERVAL_MS: u64 = 200;
/// `lines`.
const LINES: u64 = 100;
/// What expect does when the program waits for keyboard input before the pattern appears.
const ON_INPUT: &str = "wait";
/// The most bytes of the question an `input` answer quotes.
const MAX_QUESTION_BYTES: usize = 4 << 10;
/// The longest wait one call accepts: one hour.
const MAX_TIMEOUT_MS: u64 = 3_600_000;
/// The most output one scan step copies and renders. A waiter that fell behind a fast pane catches
/// up in steps this size, so its memory and its time holding the pane's lock stay bounded.
const SCAN_CHUNK: u64 = 1 << 20;
/// How long a waiter lets streaming output gather between scans (see `Pace`).
const PACE: Duration = Duration::from_millis(1);

pub(crate) const TOOL: Tool = Tool {
    name: "fugue_expect",
    title: "Expect pattern",
    description: "Wait until a pane's output (text view: the main screen, not a full-screen \
                  program's) matches a regex; event-driven, returns the moment it appears. `^`/`$` \
                  match at line ends, so anchor patterns (`^READY$`) to avoid matching the echoed \
                  command line. Rust regex: no look-around or backreferences. Without since: \
                  searches the last `lines` lines already there plus new output, so an old line can \
                  match; with since (send_input's offset): only output after it. status: matched \
                  (match, line, groups, offset after the match's line), timeout, exited (the \
                  process ended first), or input (on_input: return, and the program waits for \
                  someone to type; `line` is its question). action: notify, close_pane, \
                  return_output (adds `output`: the last `lines` lines; with since, of the output \
                  after it).",
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
                (
                    "action",
                    choice(
                        "What to do on a match",
                        &["notify", "close_pane", "return_output"],
                        ACTION,
                    ),
                ),
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
                    choice(
                        "return: answer status input if the program waits for keyboard input first",
                        &["wait", "return"],
                        ON_INPUT,
                    ),
                ),
            ],
            &["pane_id", "pattern"],
        )
    },
    output: || {
        result(&[
            ("status", t("string")),
            ("pattern", t("string")),
            ("duration_ms", t("integer")),
            ("offset", t("integer")),
        ])
    },
    call: expect,
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Notify,
    ClosePane,
    ReturnOutput,
}

/// What the answer carries besides the match: the action, and for `return_output` which output.
struct Answer {
    action: Action,
    lines: usize,
    /// With `since`, the output returned begins there; otherwise 0.
    since: u64,
}

impl Answer {
    /// Adds `output` for `return_output`: the last `lines` lines, of what came after `since`.
    fn add_output(&self, value: &mut Value, pane: &Pane) {
        if self.action != Action::ReturnOutput {
            return;
        }
        let req = ReadRequest {
            format: Format::Text,
            lines: self.lines,
            since: None,
            max_bytes: config().max_output_bytes,
        };
        value["output"] = json!(pane.output().read_tail_after(&req, self.since).output);
    }
}

/// One search in progress: where the unsearched text begins.
struct Scan {
    regex: Regex,
    /// Raw offset of the first line not yet fully searched.
    from: u64,
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

/// What one step of a scan saw.
struct Step {
    found: Option<Found>,
    /// The process has exited and every byte it printed was searched.
    exited: bool,
    closed: bool,
    /// Raw offset just past the bytes searched.
    end: u64,
    /// More output is waiting to be searched: step again before sleeping.
    behind: bool,
}

struct Found {
    matched: String,
    line: String,
    groups: Vec<Value>,
    /// Raw offset just past the line where the match ends.
    offset: u64,
}

fn expect(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Value> {
    let started = Instant::now();
    let pane = ctx.mux.pane(args.required_str("pane_id")?)?;
    let pattern = args.required_str("pattern")?;
    let regex = compile(pattern)?;
    let timeout =
        Duration::from_millis(args.u64("timeout_ms", 0, MAX_TIMEOUT_MS)?.unwrap_or(TIMEOUT_MS));
    let action = match args.str("action")?.unwrap_or(ACTION) {
        "notify" => Action::Notify,
        "close_pane" => Action::ClosePane,
        "return_output" => Action::ReturnOutput,
        other => {
            return Err(Error::invalid(format!(
                "action {other:?} is not one of notify, close_pane, return_output"
            )));
        }
    };
    args.u64("poll_interval_ms", 0, MAX_TIMEOUT_MS)?;
    let lines = args.u64("lines", 1, 100_000)?.unwrap_or(LINES) as usize;
    let since = args.u64("since", 0, u64::MAX)?;
    let return_on_input = match args.str("on_input")?.unwrap_or(ON_INPUT) {
        "wait" => false,
        "return" => true,
        other => {
            return Err(Error::invalid(format!("on_input {other:?} is not one of wait, return")));
        }
    };

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
    let mut scan = Scan { regex, from };
    let answer = Answer { action, lines, since: since.unwrap_or(0) };
    let deadline = started + timeout;
    let heartbeat = ctx.progress.heartbeat();
    let mut pace = Pace::default();
    let mut input = return_on_input.then(|| InputWatch::new(&pane, quiet_period()));
    loop {
        let step = scan.step(&pane);
        if let Some(found) = step.found {
            return Ok(finish_match(ctx, &pane, pattern, found, &answer, started));
        }
        if step.closed {
            return Err(Error::new(
                ErrorKind::PaneClosed,
                format!("pane {} was closed while waiting", pane.id),
            ));
        }
        if step.exited {
            return Ok(outcome(&pane, "exited", pattern, step.end, &answer, started));
        }
        if !step.behind && input.as_mut().is_some_and(InputWatch::check) {
            let mut value = outcome(&pane, "input", pattern, step.end, &answer, started);
            value["line"] = json!(last_line(&pane));
            return Ok(value);
        }
        let check_at = input.as_ref().and_then(InputWatch::next_check);
        let cancel = ctx.cancel.receiver();
        if step.behind && Instant::now() < deadline {
            if let Err(TryRecvError::Disconnected) = cancel.try_recv() {
                return Err(Error::cancelled());
            }
            continue;
        }
        if pace.streaming {
            let gather = PACE.min(deadline.saturating_duration_since(Instant::now()));
            if let Err(RecvTimeoutError::Disconnected) = cancel.recv_timeout(gather) {
                return Err(Error::cancelled());
            }
        }
        select! {
            recv(events) -> _ => pace.woke(),
            recv(ctx.cancel.receiver()) -> _ => return Err(Error::cancelled()),
            recv(after(deadline.saturating_duration_since(Instant::now()))) -> _ => {
                // One last look: output may have arrived with the deadline.
                if let Some(found) = scan.step(&pane).found {
                    return Ok(finish_match(ctx, &pane, pattern, found, &answer, started));
                }
                return Ok(outcome(&pane, "timeout", pattern, pane.output().end(), &answer, started));
            }
            recv(check_at.map_or_else(never, |at| after(at.saturating_duration_since(Instant::now())))) -> _ => {}
            recv(heartbeat) -> _ => {
                let secs = started.elapsed().as_secs_f64();
                ctx.progress.report(secs, Some(timeout.as_secs_f64()), &format!("waiting for /{pattern}/"));
            }
        }
    }
}

fn compile(pattern: &str) -> Result<Regex> {
    RegexBuilder::new(pattern)
        .multi_line(true)
        .size_limit(config().max_regex_bytes)
        .dfa_size_limit(config().max_regex_bytes)
        .build()
        .map_err(|e| {
            Error::new(ErrorKind::InvalidRegex, format!("invalid pattern {pattern:?}: {e}"))
        })
}

impl Scan {
    /// Searches what arrived since the last step, at most `SCAN_CHUNK` bytes of it. Returns the
    /// match if any, and the pane's state as of the bytes searched: exited (only once the scan has
    /// caught up with the end), closed, the end offset, and whether bytes are left to scan.
    fn step(&mut self, pane: &Pane) -> Step {
        let (bytes, start, end, exited, closed) = pane.output().with(|s| {
            let to = self.from.saturating_add(SCAN_CHUNK);
            let (bytes, start) = s.ring.copy(self.from, to);
            (bytes, start, s.ring.end(), s.exit.is_some(), s.closed)
        });
        // Whether each searched range begins on the alternate screen, which the text view leaves
        // out: a full-screen program's drawing must not match as if the shell had printed it.
        let alt_at = |offset: u64| pane.output().with(|s| s.alt.at(offset));
        let behind = start + (bytes.len() as u64) < end;
        let keep = text::complete_len(&bytes);
        let scanned = start + keep as u64;
        let line_start = bytes[..keep].iter().rposition(|b| *b == b'\n').map_or(0, |nl| nl + 1);
        let tail_from = line_start.max(keep.saturating_sub(RESCAN_LIMIT));
        let found = if tail_from == line_start {
            self.search(&bytes[..keep], start, alt_at(start))
        } else {
            // An endless line: the complete lines, then only the end of the unfinished one.
            let tail_start = start + tail_from as u64;
            self.search(&bytes[..line_start], start, alt_at(start))
                .or_else(|| self.search(&bytes[tail_from..keep], tail_start, alt_at(tail_start)))
        };
        if found.is_none() {
            // The unfinished line is searched again next time, and so are the complete lines
            // before it that a match spanning lines could still begin in.
            let next = if tail_from == line_start {
                context_start(&bytes[..line_start])
            } else {
                tail_from
            };
            self.from = start + next as u64;
        }
        Step { found, exited: exited && !behind, closed, end: scanned, behind }
    }

    /// Searches the text view of `raw`, which begins at raw offset `start`, on the alternate
    /// screen when `alt`.
    fn search(&self, raw: &[u8], start: u64, alt: bool) -> Option<Found> {
        let joined = text::render_joined(raw, alt);
        let caps = self.regex.captures(&joined)?;
        let whole = caps.get(0)?;
        let first_line = joined[..whole.start()].matches('\n').count();
        let last_line = first_line + whole.as_str().matches('\n').count();
        let line_start = joined[..whole.start()].rfind('\n').map_or(0, |i| i + 1);
        let line_end =
            joined[whole.start()..].find('\n').map_or(joined.len(), |i| whole.start() + i);
        let line = joined[line_start..line_end].to_string();
        let offset =
            raw_line_end(raw, last_line).map_or(start + raw.len() as u64, |e| start + e as u64);
        let groups =
            caps.iter().skip(1).map(|g| g.map_or(Value::Null, |m| json!(m.as_str()))).collect();
        Some(Found { matched: whole.as_str().to_string(), line, groups, offset })
    }
}

/// Where the next scan begins in `complete`, raw output made of whole lines: at the last
/// `CONTEXT_LINES` of them, as many as fit in `CONTEXT_BYTES`. A pattern may span lines (`\n`),
/// and its lines may arrive in separate reads: the scan that sees its last line must still see its
/// first. Bounded, so that a chatty pane is not searched again in full on every read.
fn context_start(complete: &[u8]) -> usize {
    let floor = complete.len().saturating_sub(CONTEXT_BYTES);
    let mut line_ends = complete[floor..]
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| floor + i + 1);
    match line_ends.nth(CONTEXT_LINES) {
        Some(start) => start,
        None if floor == 0 => 0,
        // The first line that begins inside the window; `complete` ends with a newline.
        None => complete[floor - 1..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(complete.len(), |p| floor + p),
    }
}

/// The raw offset just past the newline that ends text line `n`, if that line is complete.
fn raw_line_end(raw: &[u8], n: usize) -> Option<usize> {
    raw.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(n).map(|(i, _)| i + 1)
}

fn finish_match(
    ctx: &Ctx<'_>,
    pane: &Pane,
    pattern: &str,
    found: Found,
    answer: &Answer,
    started: Instant,
) -> Value {
    let mut value = json!({
        "status": "matched",
        "pattern": pattern,
        "match": found.matched,
        "line": found.line,
        "groups": found.groups,
        "duration_ms": started.elapsed().as_millis() as u64,
        "offset": found.offset,
    });
    answer.add_output(&mut value, pane);
    if answer.action == Action::ClosePane {
        // Through the registry, so the pane leaves the session as with fugue_close_pane; if
        // someone closed it meanwhile, it is gone all the same.
        let _ = ctx.mux.close_pane(&pane.id);
        value["closed"] = json!(true);
    }
    value
}

fn outcome(
    pane: &Pane,
    status: &str,
    pattern: &str,
    offset: u64,
    answer: &Answer,
    started: Instant,
) -> Value {
    let mut value = json!({
        "status": status,
        "pattern": pattern,
        "duration_ms": started.elapsed().as_millis() as u64,
        "offset": offset,
    });
    if status == "exited" {
        add_exit(&mut value, pane);
    }
    answer.add_output(&mut value, pane);
    value
}

/// The last line that holds anything but blanks, in the text view: a waiting program's question.
fn last_line(pane: &Pane) -> String {
    let text = crate::pane::tail::lines(pane, 0, pane.output().end(), 5, MAX_QUESTION_BYTES);
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_multi_line_and_bounded() {
        let re = compile("^READY$").unwrap();
        assert!(re.is_match("$ echo READY\nREADY"));
        assert!(!re.is_match("$ echo READY"));
        assert_eq!(compile("(").unwrap_err().code(), "invalid_regex");
        assert_eq!(compile(&"a{1000}{1000}".repeat(3)).unwrap_err().code(), "invalid_regex");
    }

    #[test]
    fn unicode_classes_and_case_work_and_script_classes_are_a_clear_error() {
        assert!(compile(r"(?i)^école \d+$").unwrap().is_match("ÉCOLE 42"));
        assert!(compile(r"^\w+$").unwrap().is_match("naïve"));
        let err = compile(r"\p{Greek}").unwrap_err();
        assert_eq!(err.code(), "invalid_regex");
    }

    #[test]
    fn the_next_scan_keeps_the_last_lines_that_fit() {
        assert_eq!(context_start(b""), 0);
        assert_eq!(context_start(b"a\nb\n"), 0, "fewer lines than kept: all of them");
        let many = "x\n".repeat(CONTEXT_LINES + 8);
        assert_eq!(context_start(many.as_bytes()), 16, "the last CONTEXT_LINES lines");
        let line = format!("{}\n", "y".repeat(CONTEXT_BYTES / 2));
        let long = line.repeat(3);
        assert_eq!(context_start(long.as_bytes()), 2 * line.len(), "whole lines within the bytes");
        let endless = format!("{}\n", "z".repeat(CONTEXT_BYTES + 1));
        assert_eq!(context_start(endless.as_bytes()), endless.len(), "a line too long: none");
    }

    #[test]
    fn a_match_maps_back_to_its_raw_line() {
        let scan = Scan { regex: compile(r"b(\d)").unwrap(), from: 0 };
        let found = scan.search(b"a\r\n\x1b[1mb7\x1b[0m\r\nc\r\n", 100, false).unwrap();
        assert_eq!((found.matched.as_str(), found.line.as_str()), ("b7", "b7"));
        assert_eq!(found.groups, vec![json!("7")]);
        assert_eq!(found.offset, 100 + 15);
    }
}
