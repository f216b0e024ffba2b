//! Searching a pane's output for a regex as it arrives: the one search behind `fugue_expect`,
//! `fugue_exec`'s `until` and `fugue_wait`'s `until`.
//!
//! In: the pane and a `Scan` (the regex and where the unsearched output begins). Each `step` copies
//! what arrived since the last one (a bounded chunk), renders it in the text view, line by line, so
//! colours and `\r` redraws cannot hide a match, and searches it together with the last few
//! complete lines (for a match that spans lines). Where the search reaches the end of the output,
//! the unfinished last line keeps its blanks up to the cursor, so `^>>> ` finds a prompt that
//! waits. While a full-screen program has the alternate screen, which the text view leaves out,
//! what that screen shows is searched too. Out: a `ScanStep` with the match, if any, and the pane's
//! state as of the bytes searched. A long wait over a chatty pane does linear work.

use super::Pane;
use super::text;
use crate::error::{Error, ErrorKind, Result};
use regex::{Regex, RegexBuilder};
use serde::Serialize;
use serde_json::{Value, json};

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
/// The most output one scan step copies and renders. A waiter that fell behind a fast pane catches
/// up in steps this size, so its memory and its time holding the pane's lock stay bounded.
const SCAN_CHUNK: u64 = 1 << 20;

/// A pattern in fugue's dialect: Rust `regex`, multi-line, compiled into at most `limit` bytes
/// (`FUGUE_MAX_REGEX_BYTES`).
pub(crate) fn compile(pattern: &str, limit: usize) -> Result<Regex> {
    RegexBuilder::new(pattern)
        .multi_line(true)
        .size_limit(limit)
        .dfa_size_limit(limit)
        .build()
        .map_err(|e| {
            Error::new(ErrorKind::InvalidRegex, format!("invalid pattern {pattern:?}: {e}"))
        })
}

/// One search in progress: where the unsearched text begins.
pub(crate) struct Scan {
    regex: Regex,
    /// Raw offset of the first line not yet fully searched.
    from: u64,
    /// The output's end when the alternate screen was last searched: it is searched again only
    /// after the program has drawn more.
    screen_seen: u64,
}

/// What one step of a scan saw.
pub(crate) struct ScanStep {
    pub(crate) found: Option<Found>,
    /// The process has exited and every byte it printed was searched.
    pub(crate) exited: bool,
    pub(crate) closed: bool,
    /// Raw offset just past the bytes searched.
    pub(crate) end: u64,
    /// More output is waiting to be searched: step again before sleeping.
    pub(crate) behind: bool,
}

/// A match, and as an answer's fields: `match`, `line`, `groups`. The answer says
/// `alternate_screen` itself, with what else it shows.
#[derive(Clone, Serialize)]
pub(crate) struct Found {
    #[serde(rename = "match")]
    pub(crate) matched: String,
    pub(crate) line: String,
    pub(crate) groups: Vec<Value>,
    /// Raw offset just past the line where the match ends.
    #[serde(skip)]
    pub(crate) offset: u64,
    /// The match is on the alternate screen a full-screen program shows now, not in the text view.
    #[serde(skip)]
    pub(crate) screen: bool,
}

impl Scan {
    /// A search of the output from raw offset `from` on.
    pub(crate) fn new(regex: Regex, from: u64) -> Scan {
        Scan { regex, from, screen_seen: from }
    }

    /// Searches what arrived since the last step, at most `SCAN_CHUNK` bytes of it, and the
    /// alternate screen when a program shows one. Returns the match if any, and the pane's state
    /// as of the bytes searched: exited (only once the scan has caught up with the end), closed,
    /// the end offset, and whether bytes are left to scan.
    pub(crate) fn step(&mut self, pane: &Pane) -> ScanStep {
        let (bytes, start, end, exited, closed, alt_now) = pane.output().with(|s| {
            let to = self.from.saturating_add(SCAN_CHUNK);
            let (bytes, start) = s.ring.copy(self.from, to);
            (
                bytes,
                start,
                s.ring.end(),
                s.life.exit().is_some(),
                s.life.is_closed(),
                s.alt.active(),
            )
        });
        let behind = start + (bytes.len() as u64) < end;
        let keep = text::complete_len(&bytes);
        let scanned = start + keep as u64;
        let mut found = self.search_text(pane, &bytes[..keep], start, scanned == end);
        if found.is_none() && !behind && alt_now && end > self.screen_seen {
            self.screen_seen = end;
            found = self.search_screen(pane, end);
        }
        ScanStep { found, exited: exited && !behind, closed, end: scanned, behind }
    }

    /// Searches `bytes` (whole characters, from raw offset `start`) in the text view and moves the
    /// scan's start past what cannot take part in a later match. `at_end`: they reach the end of
    /// the output, so an unfinished last line is where the cursor is.
    fn search_text(
        &mut self,
        pane: &Pane,
        bytes: &[u8],
        start: u64,
        at_end: bool,
    ) -> Option<Found> {
        // Whether each searched range begins on the alternate screen, which the text view leaves
        // out: a full-screen program's drawing must not match as if the shell had printed it.
        let alt_at = |offset: u64| pane.output().with(|s| s.alt.at(offset));
        let keep = bytes.len();
        let line_start = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |nl| nl + 1);
        let tail_from = line_start.max(keep.saturating_sub(RESCAN_LIMIT));
        let found = if tail_from == line_start {
            self.search(bytes, start, alt_at(start), at_end)
        } else {
            // An endless line: the complete lines, then only the end of the unfinished one.
            let tail_start = start + tail_from as u64;
            self.search(&bytes[..line_start], start, alt_at(start), false).or_else(|| {
                self.search(&bytes[tail_from..], tail_start, alt_at(tail_start), at_end)
            })
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
        found
    }

    /// Searches everything printed since the last look, in bounded steps; the first match, if any.
    /// For waiters that only need the match (`until`), not the pane's state at each step.
    pub(crate) fn catch_up(&mut self, pane: &Pane) -> Option<Found> {
        loop {
            let step = self.step(pane);
            if step.found.is_some() || !step.behind {
                return step.found;
            }
        }
    }

    /// Searches the text view of `raw`, which begins at raw offset `start`, on the alternate
    /// screen when `alt`. `at_end`: the cursor is on its unfinished last line, whose blanks up to
    /// the cursor are searched too when the line without them does not match (`^\$$` still
    /// matches a `$ ` prompt, and `^>>> ` matches it only there).
    fn search(&self, raw: &[u8], start: u64, alt: bool, at_end: bool) -> Option<Found> {
        let joined = if at_end {
            text::render_joined_to_cursor(raw, alt)
        } else {
            text::render_joined(raw, alt)
        };
        // Only the last line can end in blanks: every other line was trimmed.
        let trimmed = joined.trim_end_matches(' ');
        let (mut found, last_line) = self
            .find_in(trimmed)
            .or_else(|| (trimmed.len() < joined.len()).then(|| self.find_in(&joined)).flatten())?;
        found.offset =
            raw_line_end(raw, last_line).map_or(start + raw.len() as u64, |e| start + e as u64);
        Some(found)
    }

    /// Searches the rows the alternate screen shows now; a match's offset is the output's `end`.
    fn search_screen(&self, pane: &Pane, end: u64) -> Option<Found> {
        let grid = pane.output().grid();
        if !grid.alternate {
            return None;
        }
        let (mut found, _) = self.find_in(&grid.rows.join("\n"))?;
        found.offset = end;
        found.screen = true;
        Some(found)
    }

    /// The first match in `joined` lines, with the number of the line where it ends.
    fn find_in(&self, joined: &str) -> Option<(Found, usize)> {
        let caps = self.regex.captures(joined)?;
        let whole = caps.get(0)?;
        let first_line = joined[..whole.start()].matches('\n').count();
        let last_line = first_line + whole.as_str().matches('\n').count();
        let line_start = joined[..whole.start()].rfind('\n').map_or(0, |i| i + 1);
        let line_end =
            joined[whole.start()..].find('\n').map_or(joined.len(), |i| whole.start() + i);
        let groups =
            caps.iter().skip(1).map(|g| g.map_or(Value::Null, |m| json!(m.as_str()))).collect();
        let found = Found {
            matched: whole.as_str().to_string(),
            line: joined[line_start..line_end].to_string(),
            groups,
            offset: 0,
            screen: false,
        };
        Some((found, last_line))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The default `FUGUE_MAX_REGEX_BYTES`.
    const LIMIT: usize = 1 << 20;

    #[test]
    fn patterns_are_multi_line_and_bounded() {
        let re = compile("^READY$", LIMIT).unwrap();
        assert!(re.is_match("$ echo READY\nREADY"));
        assert!(!re.is_match("$ echo READY"));
        assert_eq!(compile("(", LIMIT).unwrap_err().code(), "invalid_regex");
        assert_eq!(compile(&"a{1000}{1000}".repeat(3), LIMIT).unwrap_err().code(), "invalid_regex");
    }

    #[test]
    fn unicode_classes_and_case_work_and_script_classes_are_a_clear_error() {
        assert!(compile(r"(?i)^école \d+$", LIMIT).unwrap().is_match("ÉCOLE 42"));
        assert!(compile(r"^\w+$", LIMIT).unwrap().is_match("naïve"));
        let err = compile(r"\p{Greek}", LIMIT).unwrap_err();
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
        let scan = Scan::new(compile(r"b(\d)", LIMIT).unwrap(), 0);
        let found = scan.search(b"a\r\n\x1b[1mb7\x1b[0m\r\nc\r\n", 100, false, false).unwrap();
        assert_eq!((found.matched.as_str(), found.line.as_str()), ("b7", "b7"));
        assert_eq!(found.groups, vec![json!("7")]);
        assert_eq!(found.offset, 100 + 15);
    }

    #[test]
    fn a_pattern_ending_in_a_space_matches_only_the_cursor_line() {
        let scan = Scan::new(compile(r"^>>> $", LIMIT).unwrap(), 0);
        assert!(scan.search(b"x\r\n>>> ", 0, false, true).is_some());
        assert!(scan.search(b"x\r\n>>> ", 0, false, false).is_none());
        assert!(scan.search(b">>> \r\nx\r\n", 0, false, true).is_none(), "a finished line");
        let prompt = Scan::new(compile(r"[$#]$", LIMIT).unwrap(), 0);
        let found = prompt.search(b"x\r\n$ ", 0, false, true).unwrap();
        assert_eq!(found.line, "$", "a pattern without the blank matches the line without it");
    }
}
