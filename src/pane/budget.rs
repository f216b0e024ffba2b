//! Answers that fit: every answer that carries a command's output (`fugue_exec`, `fugue_send_input`
//! waits, `fugue_wait` results, the run tools' tails, `fugue_expect`, `fugue_get_output`) is built
//! here, from the output's lines, within a byte budget (about 4 KB by default): a ceiling, not a
//! target. An output that fits is shown as it is. One that does not has its runs of lines of one
//! shape folded (`fold`); if it still does not fit, the answer holds its last lines (10, or the
//! call's `tail_lines`/`lines`) and the lines that matter (`matter`: errors, warnings, `keep`'s
//! matches, each with a line of context), and, only for a command that did not succeed and where
//! nothing matters, its first lines. A noisy build that fails shows its error line, whatever the
//! noise around it. What is left out is said: a note in each gap saying what it holds (`[… 78
//! lines, no errors or warnings]`), and once as data, `omitted: {lines, since, matter}`: `since`
//! is the raw offset from which `fugue_get_output` reads the first line left out, and `matter`
//! how many of the lines left out matter (0: none). A full-screen program's screen is fitted the
//! same way, its rows collapsed first (`screen::collapse`).

use super::fold::{self, Unit};
use super::matter::{self, Gap, Note};
use super::pick;
use super::{Pane, screen, text};
use regex::Regex;
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::borrow::Cow;

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

/// How many last lines an answer for a whole output holds when it does not fit, and the most last
/// lines of a tail left unfolded.
pub(crate) const LAST_LINES: usize = 10;

/// How an answer is built.
#[derive(Clone)]
pub(crate) struct Budget<'a> {
    /// The most bytes of the text.
    pub(crate) bytes: usize,
    /// The most lines kept from the end when the output does not fit.
    pub(crate) last: usize,
    /// The answer is for a whole output: it is shown as it is when its bytes fit, whatever its
    /// lines. Otherwise it is a tail, of at most `last` lines.
    pub(crate) whole: bool,
    /// Where nothing matters, the first lines fill the room left (a command that failed, or has
    /// not ended); a command that succeeded answers its last lines and what matters.
    pub(crate) first: bool,
    /// The call's `keep`: lines it matches matter as errors do.
    pub(crate) keep: Option<&'a Regex>,
    /// Runs of one shape are folded: in every text, never in `raw`.
    pub(crate) fold: bool,
}

impl<'a> Budget<'a> {
    /// For a whole output: all of it when it fits; else its last lines, what matters, and where
    /// nothing matters its first lines.
    pub(crate) fn whole(bytes: usize, keep: Option<&'a Regex>) -> Budget<'a> {
        Budget { bytes, last: LAST_LINES, whole: true, first: true, keep, fold: true }
    }

    /// For a tail: at most `lines` lines of the end, and what matters before them.
    pub(crate) fn tail(bytes: usize, lines: usize, keep: Option<&'a Regex>) -> Budget<'a> {
        Budget { bytes, last: lines, whole: false, first: false, keep, fold: true }
    }

    /// For a screen: its rows in place, none folded.
    pub(crate) fn screen(bytes: usize, keep: Option<&'a Regex>) -> Budget<'a> {
        Budget { bytes, last: usize::MAX, whole: true, first: true, keep, fold: true }
    }

    /// The same for bytes as printed: nothing folded.
    pub(crate) fn raw(&self) -> Budget<'a> {
        Budget { fold: false, ..self.clone() }
    }

    /// The same for a command that succeeded: its first lines are not what it is read for.
    pub(crate) fn succeeded(&self) -> Budget<'a> {
        Budget { first: false, ..self.clone() }
    }
}

/// An answer's text, and what it left out.
#[derive(Clone, Default)]
pub(crate) struct Fitted {
    pub(crate) text: String,
    pub(crate) omitted: Omitted,
}

/// What an answer's text left out, said once beside it as `omitted: {lines, since, matter}`, and
/// not at all when nothing was: how many lines; where `fugue_get_output` `since` reads on from
/// the first of them (none for a screen, or for a pane that will be gone); how many of them matter
/// (`matter`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Omitted {
    pub(crate) lines: usize,
    pub(crate) since: Option<u64>,
    pub(crate) matter: usize,
}

impl Omitted {
    /// Both of what two parts of one answer left out; `since` is `later`'s.
    pub(crate) fn and(self, later: Omitted) -> Omitted {
        Omitted {
            lines: self.lines + later.lines,
            since: later.since,
            matter: self.matter + later.matter,
        }
    }
}

impl Serialize for Omitted {
    // Flattened into an answer: one key, `omitted`, only when something was left out.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Said {
            lines: usize,
            #[serde(skip_serializing_if = "Option::is_none")]
            since: Option<u64>,
            matter: usize,
        }
        let mut map = serializer.serialize_map(None)?;
        if self.lines > 0 {
            let said = Said { lines: self.lines, since: self.since, matter: self.matter };
            map.serialize_entry("omitted", &said)?;
        }
        map.end()
    }
}

/// An answer's `output`, with what it left out.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub(crate) struct AnswerOutput {
    pub(crate) output: String,
    #[serde(flatten)]
    pub(crate) omitted: Omitted,
}

impl From<Fitted> for AnswerOutput {
    fn from(fitted: Fitted) -> AnswerOutput {
        AnswerOutput { output: fitted.text, omitted: fitted.omitted }
    }
}

impl Fitted {
    /// What was left out, as an answer says it.
    pub(crate) fn omitted(&self) -> Omitted {
        self.omitted
    }

    /// The same, for a pane that will be closed before anyone can read it.
    pub(crate) fn without_since(mut self) -> Fitted {
        self.omitted.since = None;
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
    /// Lines as printed one after the other from offset 0, each ended by a newline.
    #[cfg(test)]
    pub(crate) fn printed(text: Vec<String>) -> Lines {
        let mut at = 0;
        let starts = text
            .iter()
            .map(|l| {
                let s = at;
                at += l.len() as u64 + 1;
                s
            })
            .collect();
        Lines { text, starts, before: None }
    }

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
struct Excerpt {
    bytes: Vec<u8>,
    at: u64,
    before: Option<(usize, u64)>,
    alt: bool,
}

impl Excerpt {
    fn new(pane: &Pane, from: u64, to: u64, scan: u64) -> Excerpt {
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
        Excerpt {
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
    let Excerpt { bytes, at, before, alt } = Excerpt::new(pane, from, to, scan);
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
    let Excerpt { bytes, at, before, .. } = Excerpt::new(pane, from, to, SCAN_TAIL);
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
    lines_between(pane, from, to, if budget.whole { SCAN_WHOLE } else { SCAN_TAIL })
}

/// A screen's rows (down to the last non-blank one), collapsed and fitted to `budget`'s bytes: a
/// screen is shown whole when it fits, whatever number of lines a tail asks for.
pub(crate) fn screen(rows: &[String], budget: &Budget<'_>) -> Fitted {
    let text = screen::collapse(rows);
    fit(
        &Lines { text, starts: Vec::new(), before: None },
        &Budget::screen(budget.bytes, budget.keep),
    )
}

/// Builds the answer from `lines` within `budget`: all of them when they fit; else, with the runs
/// of one shape before the last lines folded, all of those when they fit a whole output's budget;
/// else what `pick` chooses. Each gap is a note of what it holds.
pub(crate) fn fit(lines: &Lines, budget: &Budget<'_>) -> Fitted {
    if budget.last == 0 {
        return Fitted::default(); // a tail of no lines: none asked for
    }
    let all = &lines.text;
    let size: usize = all.iter().map(|l| l.len() + 1).sum::<usize>().saturating_sub(1);
    let few = budget.whole || all.len() <= budget.last;
    if size <= budget.bytes && few && lines.before.is_none() {
        return Fitted { text: all.join("\n"), omitted: Omitted::default() };
    }
    let weights: Vec<u8> = all.iter().map(|l| matter::weight(l, budget.keep)).collect();
    // A run's last line is shown, so the output's last line always is; a tail shows the lines it
    // was asked for (up to `LAST_LINES`) as they were printed.
    let n = all.len();
    let units = match (budget.fold, budget.whole) {
        (false, _) => fold::units(all, &weights, 0..0),
        (true, true) => fold::units(all, &weights, 0..n),
        // A tail shows no more than its `last` lines and what matters: only those may fold.
        (true, false) => fold::units(
            all,
            &weights,
            n.saturating_sub(budget.last)..n - budget.last.min(LAST_LINES).min(n),
        ),
    };
    let marker_cost = Gap::reserve(all.len() + lines.before.map_or(0, |b| b.0));
    let cut = pick::Cut { all, units: &units, weights: &weights, marker_cost };
    let ask = pick::Ask {
        bytes: budget.bytes,
        last: budget.last,
        whole: budget.whole,
        first: budget.first,
    };
    let kept = cut.choose(&ask, lines.before.is_some());
    assemble(lines, &cut, &kept, budget)
}

/// The kept units in order, a note in each gap (a folded run's marker for a gap that is just
/// one); with what was left out. Notes say less when the text would not fit otherwise.
fn assemble(
    lines: &Lines,
    cut: &pick::Cut<'_>,
    kept: &[Option<Cow<'_, str>>],
    budget: &Budget<'_>,
) -> Fitted {
    let mut fitted = Fitted::default();
    for how in [Note::Full, Note::Counts, Note::Bare] {
        fitted = assemble_with(lines, cut, kept, budget, how);
        if fitted.text.len() <= budget.bytes {
            return fitted;
        }
    }
    fitted.text = pick::clip_start(&fitted.text, budget.bytes);
    fitted
}

/// A run of units left out, as `assemble` gathers it.
#[derive(Default)]
struct Left {
    gap: Gap,
    units: usize,
    fold: bool,
}

fn assemble_with(
    lines: &Lines,
    cut: &pick::Cut<'_>,
    kept: &[Option<Cow<'_, str>>],
    budget: &Budget<'_>,
    how: Note,
) -> Fitted {
    let mut omitted = Omitted::default();
    let mut out: Vec<Cow<'_, str>> = Vec::new();
    let mut left = Left::default();
    if let Some((n, at)) = lines.before {
        (left.gap.lines, left.gap.unread, omitted.since) = (n, n, Some(at));
    }
    for (unit, line) in cut.units.iter().zip(kept) {
        match line {
            None => left_out(&mut left, &mut omitted, unit, lines, cut, budget),
            Some(line) => {
                flush(&mut left, &mut omitted, &mut out, budget, how);
                out.push(Cow::Borrowed(line));
            }
        }
    }
    flush(&mut left, &mut omitted, &mut out, budget, how);
    Fitted { text: out.join("\n"), omitted }
}

/// Adds `unit`, left out, to the gap being gathered.
fn left_out(
    left: &mut Left,
    omitted: &mut Omitted,
    unit: &Unit,
    lines: &Lines,
    cut: &pick::Cut<'_>,
    budget: &Budget<'_>,
) {
    if omitted.since.is_none() {
        omitted.since = lines.starts.get(unit.lines.start).copied();
    }
    for i in unit.lines.clone() {
        left.gap.add(&cut.all[i], cut.weights[i], budget.keep);
    }
    left.units += 1;
    left.fold = unit.fold;
}

/// Ends the gap being gathered: its note (none for a tail's leading gap: it is the tail of
/// something), counted in `omitted`.
fn flush(
    left: &mut Left,
    omitted: &mut Omitted,
    out: &mut Vec<Cow<'_, str>>,
    budget: &Budget<'_>,
    how: Note,
) {
    let Left { gap, units, fold } = std::mem::take(left);
    if gap.lines == 0 {
        return;
    }
    omitted.lines += gap.lines;
    omitted.matter += gap.matter();
    if units == 1 && fold && gap.unread == 0 {
        out.push(Cow::Owned(fold::marker(gap.lines)));
    } else if budget.whole || !out.is_empty() {
        out.push(Cow::Owned(gap.note(how, budget.keep)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[String]) -> Lines {
        Lines::printed(text.to_vec())
    }

    /// A failing `make -j4`: 2000 lines of compiler noise of three shapes, interleaved, with one
    /// error line in the middle, then make's own line.
    fn noisy_build() -> Vec<String> {
        let mut out: Vec<String> = (0..2000)
            .map(|i| match i % 3 {
                0 => format!("cc -O2 -Wall -Werror -c src/unit{i}.c -o obj/unit{i}.o"),
                1 => format!("  GEN     include/gen{i}.h"),
                _ => format!("ar rcs lib/libpart{i}.a obj/unit{i}.o"),
            })
            .collect();
        out[1000] = "grammar.c:88:5: error: expected ';' before '}' token".into();
        out.push("make: *** [Makefile:12: all] Error 2".into());
        out
    }

    fn shown(text: &str) -> Vec<&str> {
        text.lines().filter(|l| !l.starts_with("[… ")).collect()
    }

    #[test]
    fn what_fits_is_whole() {
        let text: Vec<String> = ["a", "", "b"].iter().map(|s| s.to_string()).collect();
        let fitted = fit(&lines(&text), &Budget::whole(100, None));
        assert_eq!((fitted.text.as_str(), fitted.omitted), ("a\n\nb", Omitted::default()));
    }

    #[test]
    fn a_noisy_failure_answers_its_error_line_and_its_end_not_its_beginning() {
        let build = noisy_build();
        let fitted = fit(&lines(&build), &Budget::whole(DEFAULT_BYTES, None));
        assert!(fitted.text.len() <= 1500, "a ceiling, not a target: {}", fitted.text.len());
        let shown = shown(&fitted.text);
        assert!(shown.contains(&"grammar.c:88:5: error: expected ';' before '}' token"));
        assert!(fitted.text.ends_with("make: *** [Makefile:12: all] Error 2"));
        assert_eq!(shown.len(), 3 + LAST_LINES, "{}", fitted.text);
        assert!(fitted.text.starts_with("[… 999 lines, no errors or warnings]"), "{}", fitted.text);
        assert_eq!(shown.len() + fitted.omitted.lines, build.len());
        assert_eq!((fitted.omitted.since, fitted.omitted.matter), (Some(0), 0));
    }

    #[test]
    fn runs_of_one_shape_are_folded_and_what_matters_breaks_them() {
        let mut build: Vec<String> =
            (0..2000).map(|i| format!("cc -O2 -c src/unit{i}.c -o obj/unit{i}.o")).collect();
        build[1000] = "grammar.c:88:5: error: expected ';'".into();
        build.push("make: *** [Makefile:12: all] Error 2".into());
        let fitted = fit(&lines(&build), &Budget::whole(DEFAULT_BYTES, None));
        let text: Vec<&str> = fitted.text.lines().collect();
        assert_eq!(
            text[..4],
            [
                "cc -O2 -c src/unit0.c -o obj/unit0.o",
                "[… 998 more like this]",
                "cc -O2 -c src/unit999.c -o obj/unit999.o",
                "grammar.c:88:5: error: expected ';'",
            ]
        );
        assert_eq!(
            text[4..],
            [
                "cc -O2 -c src/unit1001.c -o obj/unit1001.o",
                "[… 997 more like this]",
                "cc -O2 -c src/unit1999.c -o obj/unit1999.o",
                "make: *** [Makefile:12: all] Error 2",
            ]
        );
        assert_eq!(shown(&fitted.text).len() + fitted.omitted.lines, build.len());
        assert_eq!(fitted.omitted.matter, 0);
        // What fits is not folded.
        let few: Vec<String> = (0..20).map(|i| format!("step {i}")).collect();
        assert_eq!(fit(&lines(&few), &Budget::whole(DEFAULT_BYTES, None)).text, few.join("\n"));
    }

    #[test]
    fn a_success_answers_its_last_lines_and_what_matters() {
        let mut run = noisy_build();
        run[1000] = "warning: deprecated flag -O2".into();
        run.pop();
        let budget = Budget::whole(DEFAULT_BYTES, None).succeeded();
        let fitted = fit(&lines(&run), &budget);
        let shown = shown(&fitted.text);
        assert_eq!(shown.len(), 3 + LAST_LINES, "{}", fitted.text);
        assert!(shown.contains(&"warning: deprecated flag -O2"), "{}", fitted.text);
        assert!(fitted.text.ends_with(&run[1999]));
        // A failure where nothing matters shows its first lines too.
        run[1000] = "plain".into();
        let failed = fit(&lines(&run), &Budget::whole(DEFAULT_BYTES, None));
        assert!(failed.text.starts_with(&run[0]) && failed.text.len() > 3000, "{}", failed.text);
    }

    #[test]
    fn a_gap_says_what_it_holds() {
        let mut text: Vec<String> =
            (0..300).map(|i| format!("line {i} of noise {}", i % 7)).collect();
        for i in [50, 60, 70] {
            text[i] = format!("E   ValueError: bad value {i}");
        }
        let fitted = fit(&lines(&text), &Budget::tail(300, 2, None));
        assert!(fitted.text.len() <= 300, "{}", fitted.text);
        assert!(
            fitted.text.contains(", 2 of them errors: pattern \"(?i)error\" lists them]")
                || fitted.text.contains(", 1 of them error"),
            "{}",
            fitted.text
        );
        assert!(fitted.omitted.matter > 0 && fitted.omitted.matter < 3, "{:?}", fitted.omitted);
        let json = serde_json::to_value(AnswerOutput::from(fitted.clone())).unwrap();
        assert_eq!(json["omitted"]["lines"], fitted.omitted.lines, "{json}");
        assert_eq!(json["omitted"]["matter"], fitted.omitted.matter, "{json}");
        let whole = serde_json::to_value(AnswerOutput::from(fit(
            &lines(&text[..2]),
            &Budget::tail(300, 2, None),
        )));
        assert!(whole.unwrap().get("omitted").is_none(), "nothing left out, nothing said");
    }

    #[test]
    fn a_tail_keeps_its_last_lines_and_what_matters_before_them() {
        let build = noisy_build();
        let fitted = fit(&lines(&build), &Budget::tail(DEFAULT_BYTES, 3, None));
        let shown: Vec<&str> = fitted.text.lines().collect();
        assert_eq!(shown[0], build[999]);
        assert_eq!(shown[1], "grammar.c:88:5: error: expected ';' before '}' token");
        assert_eq!(shown[3], "[… 996 lines, no errors or warnings]");
        assert_eq!(shown.len(), 7, "{}", fitted.text);
        assert_eq!(fitted.omitted.lines, 2001 - 6);
    }
    #[test]
    fn keep_adds_lines_and_warnings_come_after_errors() {
        let mut text: Vec<String> = (0..500).map(|i| format!("noise {i}")).collect();
        text[100] = "compiled 17 units".into();
        text[200] = "warning: unused variable".into();
        text[300] = "Error: it broke".into();
        let keep = Regex::new("compiled \\d+").unwrap();
        let fitted = fit(&lines(&text), &Budget::tail(200, 1, Some(&keep)));
        assert!(fitted.text.contains("compiled 17") && fitted.text.contains("Error: it broke"));
        assert!(!fitted.text.contains("warning: unused"), "no room for it: {}", fitted.text);
        assert!(fitted.text.contains("1 of them warning"), "its gap says so: {}", fitted.text);
        assert!(fitted.text.len() <= 200);
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
