//! Answers that fit: every answer that carries a command's output (`fugue_exec`, `fugue_send_input`
//! waits, `fugue_wait` results, the run tools' tails, `fugue_expect`) is built here, from the
//! output's lines, within a byte budget (about 4 KB by default), in this order: the last lines;
//! the lines in the middle that matter (errors, failures, panics, tracebacks, "denied", "not
//! found", "undefined", then warnings, and what the call's `keep` regex matches, each with a line
//! of context); the first lines. A noisy build that fails shows its error line, whatever the
//! noise around it. What is left out is said: a marker line in each gap (`[… 812 lines]`), and
//! `omitted_lines` with `omitted_since`, the raw offset from which `fugue_get_output` `since` reads
//! the first line left out. A full-screen program's screen is fitted the same way, its rows
//! collapsed first (`screen::collapse`).

use super::{Pane, screen, text};
use regex::Regex;
use serde::Serialize;
use std::borrow::Cow;
use std::sync::OnceLock;

/// The budget of an answer's output when the call does not set `max_bytes`: with the answer's
/// other fields and JSON's escapes, the answer stays within about 4 KB.
pub(crate) const DEFAULT_BYTES: usize = 3584;

/// `DEFAULT_BYTES`, or `max_output` (`FUGUE_MAX_OUTPUT_BYTES`) when that is less: the budget of
/// the answers whose call has no `max_bytes`.
pub(crate) fn default_bytes(max_output: usize) -> usize {
    DEFAULT_BYTES.min(max_output)
}

/// The most bytes of output rendered for one answer: its whole range in the default scrollback.
/// A tail looks back less far: it shows the end, and the lines that matter near it.
const SCAN_WHOLE: u64 = 8 << 20;
const SCAN_TAIL: u64 = 1 << 20;

/// How an answer is built.
pub(crate) struct Budget<'a> {
    /// The most bytes of the text.
    pub(crate) bytes: usize,
    /// The most lines kept from the end (a `tail_lines`); `usize::MAX`: as many as fit.
    pub(crate) last: usize,
    /// The first lines fill what room is left (an answer that shows a whole output); otherwise
    /// the room goes to more of the end (a tail).
    pub(crate) first: bool,
    /// The call's `keep`: lines it matches matter as errors do.
    pub(crate) keep: Option<&'a Regex>,
}

impl<'a> Budget<'a> {
    /// For a whole output: its end, what matters, its beginning.
    pub(crate) fn whole(bytes: usize, keep: Option<&'a Regex>) -> Budget<'a> {
        Budget { bytes, last: usize::MAX, first: true, keep }
    }

    /// For a tail: at most `lines` lines of the end, and what matters before them.
    pub(crate) fn tail(bytes: usize, lines: usize, keep: Option<&'a Regex>) -> Budget<'a> {
        Budget { bytes, last: lines, first: false, keep }
    }
}

/// An answer's text, and what it left out.
#[derive(Clone, Default)]
pub(crate) struct Fitted {
    pub(crate) text: String,
    pub(crate) omitted_lines: usize,
    /// Where `fugue_get_output` `since` reads on from the first line left out; none for a screen,
    /// or for a pane that will be gone.
    pub(crate) omitted_since: Option<u64>,
}

/// What an answer's text left out, beside the text: `omitted_lines`, and `omitted_since` where
/// `fugue_get_output` reads on; neither when nothing was left out.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub(crate) struct Omitted {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) omitted_lines: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) omitted_since: Option<u64>,
}

/// An answer's `output`, with what it left out.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Output {
    pub(crate) output: String,
    #[serde(flatten)]
    pub(crate) omitted: Omitted,
}

impl From<Fitted> for Output {
    fn from(fitted: Fitted) -> Output {
        let omitted = fitted.omitted();
        Output { output: fitted.text, omitted }
    }
}

impl Fitted {
    /// What was left out, as an answer says it.
    pub(crate) fn omitted(&self) -> Omitted {
        let left_out = self.omitted_lines > 0;
        Omitted {
            omitted_lines: left_out.then_some(self.omitted_lines),
            omitted_since: self.omitted_since.filter(|_| left_out),
        }
    }

    /// The same, for a pane that will be closed before anyone can read it.
    pub(crate) fn without_since(mut self) -> Fitted {
        self.omitted_since = None;
        self
    }
}

/// Rendered lines, each with the raw offset where it begins (none for a screen's rows).
#[derive(Default)]
pub(crate) struct Lines {
    pub(crate) text: Vec<String>,
    pub(crate) starts: Vec<u64>,
    /// Lines before the first one here that the range held but were not rendered (past the scan
    /// bound), and where they begin.
    before: Option<(usize, u64)>,
}

impl Lines {
    /// Keeps only the lines `keep` accepts, with their offsets.
    pub(crate) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        let mut starts = std::mem::take(&mut self.starts).into_iter();
        let mut kept = Vec::new();
        self.text.retain(|line| {
            let start = starts.next();
            let yes = keep(line);
            if yes {
                kept.extend(start);
            }
            yes
        });
        self.starts = kept;
    }
}

/// The raw output between offsets `from` and `to`, at most `scan` bytes of its end, from a line
/// start: the bytes, the offset where they begin, the lines before them that were counted, not
/// copied (and where they begin), and whether a full-screen program had the alternate screen there.
struct Window {
    bytes: Vec<u8>,
    at: u64,
    before: Option<(usize, u64)>,
    alt: bool,
}

impl Window {
    fn new(pane: &Pane, from: u64, to: u64, scan: u64) -> Window {
        let window = from.max(to.saturating_sub(scan));
        let (mut bytes, start, alt, skipped) = pane.output().with(|s| {
            let (bytes, start) = s.ring.copy(window, to);
            (bytes, start, s.alt.at(start), s.ring.newlines(from, start))
        });
        // A window that begins inside a line begins at the next one; inside the last line, it
        // keeps that line's end (one line longer than the window, as a tail shows it).
        let next_line = bytes.iter().position(|b| *b == b'\n').map(|i| i + 1);
        let begin = match next_line {
            Some(next) if start > from && next < bytes.len() => next,
            _ => 0,
        };
        let skipped = skipped + usize::from(begin > 0);
        bytes.drain(..begin);
        Window {
            bytes,
            at: start + begin as u64,
            before: (skipped > 0).then_some((skipped, from)),
            alt,
        }
    }
}

/// The text view of the output between raw offsets `from` and `to`, as lines with their offsets.
/// At most `scan` bytes from the end are rendered; the lines before are counted, not rendered.
fn lines_between(pane: &Pane, from: u64, to: u64, scan: u64) -> Lines {
    let Window { bytes, at, before, alt } = Window::new(pane, from, to, scan);
    let (joined, starts) = text::render_with_starts(&bytes, alt);
    let text =
        if starts.is_empty() { Vec::new() } else { joined.split('\n').map(String::from).collect() };
    let starts = starts.into_iter().map(|s| at + s as u64).collect();
    Lines { text, starts, before }
}

/// The raw output between offsets `from` and `to` (invalid UTF-8 replaced), as lines with their
/// offsets, looked at as far back as a tail needs. A final newline stays on the last line, so the
/// lines joined by `\n` are the bytes as printed.
pub(crate) fn raw_lines(pane: &Pane, from: u64, to: u64) -> Lines {
    if to <= from {
        return Lines::default();
    }
    let Window { bytes, at, before, .. } = Window::new(pane, from, to, SCAN_TAIL);
    let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let (mut text, mut starts, mut start) = (Vec::new(), Vec::new(), at);
    for line in body.split(|b| *b == b'\n').filter(|_| !bytes.is_empty()) {
        text.push(String::from_utf8_lossy(line).into_owned());
        starts.push(start);
        start += line.len() as u64 + 1;
    }
    if let (Some(last), true) = (text.last_mut(), body.len() < bytes.len()) {
        last.push('\n');
    }
    Lines { text, starts, before }
}

/// The output between raw offsets `from` and `to`, fitted to `budget`.
pub(crate) fn output(pane: &Pane, from: u64, to: u64, budget: &Budget<'_>) -> Fitted {
    fit(&lines(pane, from, to, budget), budget)
}

/// The lines between raw offsets `from` and `to`, looked at as far back as `budget` needs.
pub(crate) fn lines(pane: &Pane, from: u64, to: u64, budget: &Budget<'_>) -> Lines {
    if to <= from {
        return Lines::default();
    }
    lines_between(pane, from, to, if budget.first { SCAN_WHOLE } else { SCAN_TAIL })
}

/// A screen's rows (down to the last non-blank one), collapsed and fitted to `budget`'s bytes: a
/// screen is shown whole when it fits, whatever number of lines a tail asks for.
pub(crate) fn screen(rows: &[String], budget: &Budget<'_>) -> Fitted {
    let text = screen::collapse(rows);
    fit(
        &Lines { text, starts: Vec::new(), before: None },
        &Budget::whole(budget.bytes, budget.keep),
    )
}

/// How much a line matters: 2 for an error (or a `keep` match), 1 for a warning, 0 for noise.
fn weight(line: &str, keep: Option<&Regex>) -> u8 {
    static SEVERE: OnceLock<Option<Regex>> = OnceLock::new();
    static WARNING: OnceLock<Option<Regex>> = OnceLock::new();
    // On word starts: a compiler's `-Werror` flag is noise, its `error:` is not.
    let severe = SEVERE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)\b(errors?|fail(s|ed|ure|ures|ing)?|fatal|panic(s|ked)?|traceback|exception|",
            r"denied|not found|undefined|segmentation fault|abort(ed)?)\b",
        ))
        .ok()
    });
    let warning = WARNING.get_or_init(|| Regex::new(r"(?i)\bwarn(s|ing|ings)?\b").ok());
    let hit = |r: Option<&Regex>| r.is_some_and(|r| r.is_match(line));
    if hit(keep) || hit(severe.as_ref()) {
        2
    } else if hit(warning.as_ref()) {
        1
    } else {
        0
    }
}

/// Builds the answer from `lines` within `budget`: the last lines (up to half the budget), the
/// lines that matter with a line of context each (errors first, then warnings, each in order),
/// then the first lines, or more of the last ones for a tail. Each gap is a marker line.
pub(crate) fn fit(lines: &Lines, budget: &Budget<'_>) -> Fitted {
    if budget.last == 0 {
        return Fitted::default(); // a tail of no lines: none asked for
    }
    let all = &lines.text;
    let size: usize = all.iter().map(|l| l.len() + 1).sum::<usize>().saturating_sub(1);
    if size <= budget.bytes && all.len() <= budget.last && lines.before.is_none() {
        return Fitted { text: all.join("\n"), omitted_lines: 0, omitted_since: None };
    }
    let mut pick = Pick::new(lines, budget.bytes);
    let top = pick.last_lines(budget.last, budget.bytes / 2);
    pick.lines_that_matter(top, budget.keep);
    if budget.first {
        pick.first_lines(top);
    } else {
        pick.more_of_the_last(top, budget.last);
    }
    assemble(lines, &pick.kept, budget)
}

/// The lines an answer keeps, chosen in turns, and the bytes still free.
struct Pick<'a> {
    all: &'a [String],
    kept: Vec<Option<Cow<'a, str>>>,
    room: usize,
    /// What a marker line costs at most, reserved for every gap the answer may hold.
    marker_cost: usize,
}

impl<'a> Pick<'a> {
    fn new(lines: &'a Lines, bytes: usize) -> Pick<'a> {
        let n = lines.text.len();
        let marker_cost = marker(n + lines.before.map_or(0, |b| b.0)).len() + 1;
        Pick { all: &lines.text, kept: vec![None; n], room: bytes, marker_cost }
    }

    fn cost(&self, i: usize) -> usize {
        self.all[i].len() + 1
    }

    fn keep(&mut self, i: usize) {
        let all = self.all;
        self.kept[i].get_or_insert(Cow::Borrowed(all[i].as_str()));
    }

    /// The last lines, at most `last` of them in `half` the bytes (the end of one longer line, as
    /// a tail shows it); answers the first of them.
    fn last_lines(&mut self, last: usize, half: usize) -> usize {
        let n = self.all.len();
        let (mut top, mut spent) = (n, 0);
        while top > 0 && n - top < last {
            let i = top - 1;
            if spent + self.cost(i) > half {
                if top == n {
                    let clipped = clip_start(&self.all[i], half.saturating_sub(4));
                    spent += clipped.len() + 1;
                    self.kept[i] = Some(Cow::Owned(clipped));
                    top = i;
                }
                break;
            }
            self.keep(i);
            spent += self.cost(i);
            top = i;
        }
        self.room = self.room.saturating_sub(spent + self.marker_cost);
        top
    }

    /// Before `top`, the lines that matter, each with a line of context: errors (and `keep`'s
    /// matches) first, then warnings, each in order, while they fit.
    fn lines_that_matter(&mut self, top: usize, keep: Option<&Regex>) {
        let weights: Vec<u8> = self.all[..top].iter().map(|l| weight(l, keep)).collect();
        for tier in [2, 1] {
            for i in (0..top).filter(|i| weights[*i] == tier) {
                if self.kept[i].is_some() {
                    continue;
                }
                let group = i.saturating_sub(1)..(i + 2).min(top);
                let new: usize =
                    group.clone().filter(|j| self.kept[*j].is_none()).map(|j| self.cost(j)).sum();
                if new + self.marker_cost > self.room {
                    continue;
                }
                self.room -= new + self.marker_cost;
                for j in group {
                    self.keep(j);
                }
            }
        }
    }

    /// The first lines before `top`, while they fit.
    fn first_lines(&mut self, top: usize) {
        for i in 0..top {
            if self.kept[i].is_some() {
                continue;
            }
            if self.cost(i) > self.room {
                break;
            }
            self.room -= self.cost(i);
            self.keep(i);
        }
    }

    /// More of the last lines before `top`, up to `last` in all, while they fit.
    fn more_of_the_last(&mut self, top: usize, last: usize) {
        let mut tail = self.all.len() - top;
        for i in (0..top).rev() {
            if tail >= last {
                break;
            }
            if self.kept[i].is_some() {
                continue;
            }
            if self.cost(i) > self.room {
                break;
            }
            self.room -= self.cost(i);
            tail += 1;
            self.keep(i);
        }
    }
}

/// The kept lines in order, a marker in each gap; with what was left out.
fn assemble(lines: &Lines, kept: &[Option<Cow<'_, str>>], budget: &Budget<'_>) -> Fitted {
    let (mut omitted, mut since) = lines.before.map_or((0, None), |(n, at)| (n, Some(at)));
    let mut out: Vec<Cow<'_, str>> = Vec::new();
    let mut gap = omitted;
    for (i, line) in kept.iter().enumerate() {
        match line {
            None => {
                if since.is_none() {
                    since = lines.starts.get(i).copied();
                }
                omitted += 1;
                gap += 1;
            }
            Some(line) => {
                // A tail's leading gap goes without saying: it is the tail of something.
                if gap > 0 && (budget.first || !out.is_empty()) {
                    out.push(Cow::Owned(marker(gap)));
                }
                gap = 0;
                out.push(Cow::Borrowed(line));
            }
        }
    }
    if gap > 0 {
        out.push(Cow::Owned(marker(gap)));
    }
    let text = clip_start(&out.join("\n"), budget.bytes);
    Fitted { text, omitted_lines: omitted, omitted_since: since.filter(|_| omitted > 0) }
}

/// The line that stands for `n` lines left out.
fn marker(n: usize) -> String {
    if n == 1 { "[… 1 line]".to_string() } else { format!("[… {n} lines]") }
}

/// The last `max` bytes of `line` at a character boundary, after `…` when anything was cut.
fn clip_start(line: &str, max: usize) -> String {
    if line.len() <= max {
        return line.to_string();
    }
    let mut start = line.len() - max.saturating_sub(3);
    while !line.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &line[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[String]) -> Lines {
        let mut at = 0;
        let starts = text
            .iter()
            .map(|l| {
                let s = at;
                at += l.len() as u64 + 1;
                s
            })
            .collect();
        Lines { text: text.to_vec(), starts, before: None }
    }

    fn noisy_build() -> Vec<String> {
        let mut out: Vec<String> = (0..2000)
            .map(|i| format!("cc -O2 -Wall -Werror -c src/unit{i}.c -o obj/unit{i}.o"))
            .collect();
        out[1000] = "grammar.c:88:5: error: expected ';' before '}' token".into();
        out.push("make: *** [Makefile:12: all] Error 2".into());
        out
    }

    #[test]
    fn what_fits_is_whole() {
        let text: Vec<String> = ["a", "", "b"].iter().map(|s| s.to_string()).collect();
        let fitted = fit(&lines(&text), &Budget::whole(100, None));
        assert_eq!((fitted.text.as_str(), fitted.omitted_lines), ("a\n\nb", 0));
    }

    #[test]
    fn a_noisy_failure_keeps_its_error_line_within_the_budget() {
        let build = noisy_build();
        let fitted = fit(&lines(&build), &Budget::whole(DEFAULT_BYTES, None));
        assert!(fitted.text.len() <= DEFAULT_BYTES, "{}", fitted.text.len());
        assert!(fitted.text.contains("grammar.c:88:5: error"), "{}", fitted.text);
        assert!(fitted.text.ends_with("make: *** [Makefile:12: all] Error 2"));
        assert!(fitted.text.starts_with("cc -O2 -Wall -Werror -c src/unit0.c"), "the first lines");
        let shown = fitted.text.lines().filter(|l| !l.starts_with("[… ")).count();
        assert_eq!(shown + fitted.omitted_lines, build.len());
        // The first line left out is read from `omitted_since`.
        let first_gap = fitted.text.lines().position(|l| l.starts_with("[… ")).unwrap();
        let at = lines(&build).starts[first_gap];
        assert_eq!(fitted.omitted_since, Some(at));
    }

    #[test]
    fn a_tail_keeps_its_last_lines_and_what_matters_before_them() {
        let build = noisy_build();
        let fitted = fit(&lines(&build), &Budget::tail(DEFAULT_BYTES, 3, None));
        let shown: Vec<&str> = fitted.text.lines().collect();
        assert_eq!(shown[0], "cc -O2 -Wall -Werror -c src/unit999.c -o obj/unit999.o");
        assert_eq!(shown[1], "grammar.c:88:5: error: expected ';' before '}' token");
        assert_eq!(shown[3], "[… 996 lines]");
        assert_eq!(shown.len(), 7, "{}", fitted.text);
        assert_eq!(fitted.omitted_lines, 2001 - 6);
    }

    #[test]
    fn keep_adds_lines_and_warnings_come_after_errors() {
        let mut text: Vec<String> = (0..500).map(|i| format!("noise {i}")).collect();
        text[100] = "compiled 17 units".into();
        text[200] = "warning: unused variable".into();
        text[300] = "Error: it broke".into();
        let keep = Regex::new("compiled \\d+").unwrap();
        let fitted = fit(&lines(&text), &Budget::tail(160, 1, Some(&keep)));
        assert!(fitted.text.contains("compiled 17") && fitted.text.contains("Error: it broke"));
        assert!(!fitted.text.contains("warning"), "no room for it: {}", fitted.text);
        assert!(fitted.text.len() <= 160);
        let roomy = fit(&lines(&text), &Budget::tail(400, 1, None));
        assert!(roomy.text.contains("warning: unused") && !roomy.text.contains("compiled"));
    }

    #[test]
    fn one_endless_line_keeps_its_end() {
        let text = vec![format!("{}END", "x".repeat(10_000))];
        let fitted = fit(&lines(&text), &Budget::whole(100, None));
        assert!(fitted.text.len() <= 100 && fitted.text.ends_with("xEND"), "{}", fitted.text);
        assert!(fitted.text.starts_with('…'));
    }

    #[test]
    fn every_budget_is_kept() {
        let build = noisy_build();
        for bytes in [64, 100, 500, 4096, 20_000] {
            for budget in [Budget::whole(bytes, None), Budget::tail(bytes, 10, None)] {
                let fitted = fit(&lines(&build), &budget);
                assert!(fitted.text.len() <= bytes, "{bytes}: {}", fitted.text.len());
            }
        }
    }
}
