//! What matters in a command's output, said in this one place: a line matters when it names an
//! error (`error`, `failed`, `fatal`, `panic`, `traceback`, `exception`, `denied`, `not found`,
//! `undefined`, `segmentation fault`, `abort`, or a `SomethingError`/`SomethingException`), a
//! warning (`warn`, `warning`), or matches the call's `keep`. Every answer keeps such lines before
//! the others, never folds one away (`fold`), and says of each gap how many of them it holds: the
//! gap's note (`[… 78 lines, no errors or warnings]`) and the answer's `omitted.matter`.

use regex::Regex;
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// An error (or a `keep` match): kept first.
pub(crate) const ERROR: u8 = 2;
/// A warning: kept after the errors.
pub(crate) const WARNING: u8 = 1;

/// The longest note a gap gets; past it, the note says less (`Note`).
pub(crate) const NOTE_BYTES: usize = 96;

fn severe() -> Option<&'static Regex> {
    // Compiled once: a pure function of the pattern, the same for every runtime.
    static SEVERE: OnceLock<Option<Regex>> = OnceLock::new();
    // On word starts: a compiler's `-Werror` flag is noise, its `error:` is not; an exception's
    // class name (`ValueError`) ends in one. ASCII word boundaries: the words are English, and
    // Unicode ones make the regex slow on binary garbage (no DFA for them on non-ASCII text).
    SEVERE
        .get_or_init(|| {
            Regex::new(concat!(
                r"(?i)(?-u:\b)(errors?|fail(s|ed|ure|ures|ing)?|fatal|panic(s|ked)?|traceback|",
                r"exception|denied|not found|undefined|segmentation fault|abort(ed)?)(?-u:\b)",
                r"|(?-i:[a-z](Error|Exception)(?-u:\b))",
            ))
            .ok()
        })
        .as_ref()
}

fn warning() -> Option<&'static Regex> {
    // Compiled once, as `SEVERE`.
    static WARN: OnceLock<Option<Regex>> = OnceLock::new();
    WARN.get_or_init(|| Regex::new(r"(?i)(?-u:\b)warn(s|ing|ings)?(?-u:\b)").ok()).as_ref()
}

/// How much `line` matters: `ERROR` for an error or a `keep` match, `WARNING`, or 0 for noise.
pub(crate) fn weight(line: &str, keep: Option<&Regex>) -> u8 {
    let hit = |r: Option<&Regex>| r.is_some_and(|r| r.is_match(line));
    if hit(keep) || hit(severe()) {
        ERROR
    } else if hit(warning()) {
        WARNING
    } else {
        0
    }
}

/// The word of fugue's that `line` matters by, lowercased (`error`, `failed`, `warning`); none for
/// a line that matters only by `keep`, or not at all.
fn word(line: &str) -> Option<String> {
    let found = severe().and_then(|r| r.find(line)).or_else(|| warning()?.find(line))?;
    let word = found.as_str();
    // `nError` (a class name's end): the word after its first letter.
    let camel = word.starts_with(|c: char| c.is_ascii_lowercase())
        && word[1..].starts_with(|c: char| c.is_ascii_uppercase());
    Some(if camel { &word[1..] } else { word }.to_lowercase())
}

/// How much a note says, from the most to the least: shorter ones stand in when the longer do not
/// fit the answer's budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Note {
    /// The counts and the pattern that lists the lines that matter.
    Full,
    /// The counts.
    Counts,
    /// How many lines.
    Bare,
}

/// What a run of left-out lines holds: how many lines, how many that matter and of which kind.
#[derive(Default)]
pub(crate) struct Gap {
    pub(crate) lines: usize,
    /// Lines counted, not read (past how far back an answer looks): nothing is said of them.
    pub(crate) unread: usize,
    errors: usize,
    warnings: usize,
    kept: usize,
    words: BTreeSet<String>,
}

impl Gap {
    /// Adds a line left out, with its `weight`.
    pub(crate) fn add(&mut self, line: &str, weight: u8, keep: Option<&Regex>) {
        self.lines += 1;
        if weight == 0 {
            return;
        }
        match word(line) {
            Some(w) if !keep.is_some_and(|k| k.is_match(line)) => {
                if weight == ERROR {
                    self.errors += 1
                } else {
                    self.warnings += 1
                }
                self.words.insert(w);
            }
            _ => self.kept += 1,
        }
    }

    /// The bytes to set aside for a gap's note among `n` lines: a note that says more may need
    /// more, and then says less (`Note`).
    pub(crate) fn reserve(n: usize) -> usize {
        format!("[… {n} lines, no errors or warnings]").len() + 1
    }

    /// How many of its lines matter.
    pub(crate) fn matter(&self) -> usize {
        self.errors + self.warnings + self.kept
    }

    /// The note that stands for the gap, at most `NOTE_BYTES` (but for its counts).
    pub(crate) fn note(&self, how: Note, keep: Option<&Regex>) -> String {
        let n = self.lines;
        let lines = if n == 1 { "1 line".to_string() } else { format!("{n} lines") };
        if how == Note::Bare {
            return format!("[… {lines}]");
        }
        if self.matter() == 0 {
            return if self.unread > 0 {
                format!("[… {lines}]")
            } else {
                format!("[… {lines}, no errors or warnings]")
            };
        }
        let kinds = [
            (self.errors, "error", "errors"),
            (self.warnings, "warning", "warnings"),
            (self.kept, "matching keep", "matching keep"),
        ];
        let mut counts = format!("[… {lines}");
        for (k, one, many) in kinds.into_iter().filter(|(k, ..)| *k > 0) {
            let what = if k == 1 { one } else { many };
            let of_them = if counts.contains(" of them ") { "" } else { " of them" };
            counts.push_str(&format!(", {k}{of_them} {what}"));
        }
        let full = self.pattern(keep).map(|p| format!("{counts}: pattern {p:?} lists them]"));
        match full {
            Some(full) if how == Note::Full && full.len() <= NOTE_BYTES => full,
            _ => format!("{counts}]"),
        }
    }

    /// The `fugue_get_output` pattern that lists the lines that matter here (and perhaps a few
    /// more: it matches the words anywhere).
    fn pattern(&self, keep: Option<&Regex>) -> Option<String> {
        let words = self.words.iter().cloned().collect::<Vec<_>>().join("|");
        let keep = match (self.kept, keep) {
            (0, _) => None,
            (_, Some(keep)) => Some(keep.as_str()),
            (_, None) => return None,
        };
        Some(match (words.is_empty(), keep) {
            (false, None) => format!("(?i){words}"),
            (false, Some(keep)) => format!("(?i:{words})|{keep}"),
            (true, keep) => keep?.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gap(lines: &[&str], keep: Option<&Regex>) -> Gap {
        let mut gap = Gap::default();
        for line in lines {
            gap.add(line, weight(line, keep), keep);
        }
        gap
    }

    #[test]
    fn errors_warnings_and_keep_matter_and_flags_do_not() {
        assert_eq!(weight("grammar.c:88:5: error: expected ';'", None), ERROR);
        assert_eq!(weight("cc -Wall -Werror -c x.c", None), 0);
        assert_eq!(weight("E   ValueError: bad value 3", None), ERROR);
        assert_eq!(weight("raise KeyError(k)", None), ERROR);
        assert_eq!(weight("ErrorHandler.java compiled", None), 0);
        assert_eq!(weight("warning: unused variable", None), WARNING);
        let keep = Regex::new("compiled").unwrap();
        assert_eq!(weight("compiled 17 units", Some(&keep)), ERROR);
    }

    #[test]
    fn a_note_says_what_its_gap_holds() {
        let quiet = gap(&["a", "b"], None);
        assert_eq!(quiet.note(Note::Full, None), "[… 2 lines, no errors or warnings]");
        let errors = gap(&["x: error: no", "y: error: no", "ok"], None);
        assert_eq!(
            errors.note(Note::Full, None),
            "[… 3 lines, 2 of them errors: pattern \"(?i)error\" lists them]"
        );
        let mixed = gap(&["x: error: no", "FAILED t", "warning: w", "ok"], None);
        assert_eq!(mixed.matter(), 3);
        assert_eq!(
            mixed.note(Note::Full, None),
            "[… 4 lines, 2 of them errors, 1 warning: pattern \"(?i)error|failed|warning\" lists them]"
        );
        assert_eq!(mixed.note(Note::Counts, None), "[… 4 lines, 2 of them errors, 1 warning]");
        assert_eq!(mixed.note(Note::Bare, None), "[… 4 lines]");
        let keep = Regex::new("compiled").unwrap();
        let kept = gap(&["compiled 3", "x"], Some(&keep));
        assert_eq!(
            kept.note(Note::Full, Some(&keep)),
            "[… 2 lines, 1 of them matching keep: pattern \"compiled\" lists them]"
        );
    }

    #[test]
    fn what_the_pattern_names_lists_the_lines() {
        let lines = ["E   ValueError: bad", "test_x FAILED", "warn: w", "ok"];
        let g = gap(&lines, None);
        let pattern = g.pattern(None).unwrap();
        let regex = Regex::new(&pattern).unwrap();
        assert_eq!(lines.iter().filter(|l| regex.is_match(l)).count(), 3, "{pattern}");
    }
}
