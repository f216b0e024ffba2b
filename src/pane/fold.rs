//! Lines of one shape are one line: a run of lines that differ only in numbers, hashes, sizes or
//! a path's last part (progress lines, `CC src/foo.o`, `Downloading x (3/57)`) is shown as its
//! first line, `[… 97 more like this]`, and its last. An answer folds only when its output does
//! not fit as it is, never a line that matters (`matter`), and never the last lines a tail was
//! asked for; `raw` is never folded.

use regex::Regex;
use std::ops::Range;
use std::sync::OnceLock;

/// The shortest run folded: first, marker and last stand for at least four lines.
const MIN_RUN: usize = 4;

/// One item of an answer: a line as it is, or the inside of a run folded into one marker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    /// The lines it stands for, by index.
    pub(crate) lines: Range<usize>,
    pub(crate) fold: bool,
}

impl Unit {
    fn line(i: usize) -> Unit {
        Unit { lines: i..i + 1, fold: false }
    }
}

/// The line that stands for the `n` lines inside a folded run.
pub(crate) fn marker(n: usize) -> String {
    format!("[… {n} more like this]")
}

/// `all` as units, the runs of one shape within `within` folded; `weights` says which lines
/// matter (they are never folded).
pub(crate) fn units(all: &[String], weights: &[u8], within: Range<usize>) -> Vec<Unit> {
    let until = within.end.min(all.len());
    let mut units = Vec::with_capacity(all.len());
    units.extend((0..within.start.min(until)).map(Unit::line));
    let mut i = within.start.min(until);
    while i < until {
        let end = run_end(all, weights, i, until);
        if end - i >= MIN_RUN {
            units.push(Unit::line(i));
            units.push(Unit { lines: i + 1..end - 1, fold: true });
            units.push(Unit::line(end - 1));
        } else {
            units.extend((i..end).map(Unit::line));
        }
        i = end;
    }
    units.extend((until..all.len()).map(Unit::line));
    units
}

/// The end of the run of lines of `all[start]`'s shape, before `until`: `start + 1` for a line
/// that matters or stands alone.
fn run_end(all: &[String], weights: &[u8], start: usize, until: usize) -> usize {
    if weights[start] > 0 {
        return start + 1;
    }
    let first = shape(&all[start]);
    let mut end = start + 1;
    while end < until && weights[end] == 0 && shape(&all[end]) == first {
        end += 1;
    }
    end
}

/// What is left of `line` once its numbers, hashes, sizes and paths' last parts are put aside.
pub(crate) fn shape(line: &str) -> String {
    // Compiled once: pure functions of their patterns, the same for every runtime.
    static SIZE: OnceLock<Option<Regex>> = OnceLock::new();
    static HASH: OnceLock<Option<Regex>> = OnceLock::new();
    static NUMBER: OnceLock<Option<Regex>> = OnceLock::new();
    // ASCII classes and boundaries: fast on any text, binary garbage too.
    let size = SIZE.get_or_init(|| Regex::new(r"[0-9]+(\.[0-9]+)? ?[kKMGTP]?i?B(?-u:\b)").ok());
    let hash = HASH.get_or_init(|| Regex::new(r"(?-u:\b)[0-9a-fA-F]{7,}(?-u:\b)").ok());
    let number = NUMBER.get_or_init(|| Regex::new(r"[0-9]+").ok());
    let mut shaped = line.split_whitespace().map(path_aside).collect::<Vec<_>>().join(" ");
    if let Some(size) = size {
        shaped = size.replace_all(&shaped, "0B").into_owned();
    }
    if let Some(hash) = hash {
        // A hash holds a digit: a word of hex letters (`defaced`) is a word.
        let put_aside = |m: &regex::Captures<'_>| {
            let word = &m[0];
            if word.contains(|c: char| c.is_ascii_digit()) { "#".to_string() } else { word.into() }
        };
        shaped = hash.replace_all(&shaped, put_aside).into_owned();
    }
    match number {
        Some(number) => number.replace_all(&shaped, "0").into_owned(),
        None => shaped,
    }
}

/// A word of a line with a path's last part (or a file name) put aside: `src/foo.o` is `src/*`.
fn path_aside(word: &str) -> String {
    let core = word.trim_matches(|c: char| "()[]{},;:'\"`".contains(c));
    if core.is_empty() {
        return word.to_string();
    }
    let file_name = core.rsplit_once('.').is_some_and(|(name, ext)| {
        !name.is_empty()
            && (1..=5).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.starts_with(|c: char| c.is_ascii_alphabetic())
    });
    match core.rfind('/') {
        Some(slash) => word.replacen(core, &format!("{}*", &core[..=slash]), 1),
        None if file_name => word.replacen(core, "*", 1),
        None => word.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn numbers_hashes_sizes_and_last_parts_are_put_aside() {
        let same = [
            (
                "bundling module 012/400: src/a.js (69 kB)",
                "bundling module 399/400: src/b.js (1.2 MB)",
            ),
            ("CC src/foo.o", "CC src/bar_baz.o"),
            ("Downloading x (3/57)", "Downloading x (41/57)"),
            ("commit 1a2b3c4d5e merged", "commit 99ffee00aa merged"),
            ("tests/test_a.py::test_add PASSED [  5%]", "tests/test_a.py::test_sub PASSED [ 10%]"),
            ("compiling foo.rs", "compiling bar.rs"),
        ];
        for (a, b) in same {
            assert_eq!(shape(a), shape(b), "{a} | {b}");
        }
        let differ = [
            ("tests/a.py::t PASSED", "tests/a.py::t FAILED"),
            ("CC src/foo.o", "LD src/foo.o"),
            ("Downloading x", "Installing x"),
        ];
        for (a, b) in differ {
            assert_ne!(shape(a), shape(b), "{a} | {b}");
        }
    }

    #[test]
    fn a_run_is_its_first_a_marker_and_its_last() {
        let mut text: Vec<String> = (0..10).map(|i| format!("step {i}/10")).collect();
        text.push("done".into());
        let weights = vec![0; text.len()];
        let units = units(&text, &weights, 0..text.len());
        assert_eq!(units.len(), 4);
        assert_eq!(units[1], Unit { lines: 1..9, fold: true });
        assert_eq!(marker(units[1].lines.len()), "[… 8 more like this]");
    }

    #[test]
    fn what_matters_breaks_a_run_and_the_end_is_left_whole() {
        let mut text: Vec<String> = (0..20).map(|i| format!("step {i}")).collect();
        text[10] = "step 10 error".into();
        let mut weights = vec![0; 20];
        weights[10] = 2;
        let units = units(&text, &weights, 0..17);
        let folds: Vec<_> = units.iter().filter(|u| u.fold).map(|u| u.lines.clone()).collect();
        assert_eq!(folds, [1..9, 12..16]);
        assert!(units.iter().any(|u| u.lines == (10..11)), "the error line stands alone");
        assert_eq!(units.iter().rev().take(3).filter(|u| u.fold).count(), 0);
        // Three lines of a shape stay as they are.
        let three = lines(&["a 1", "a 2", "a 3"]);
        assert!(super::units(&three, &[0, 0, 0], 0..3).iter().all(|u| !u.fold));
    }
}
