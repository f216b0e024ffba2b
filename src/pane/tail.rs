//! The last lines a pane printed, as text: what a run's result, a failed agent's reason and the
//! next agent's input quote of a command's output; and what a pane shows now, which for a
//! full-screen program is its screen rather than the main screen's last lines.

use super::budget::{self, Budget, Fitted};
use super::{Pane, screen, text};

/// How far back from the end of the range a tail looks for its lines: a bound on the work.
const TAIL_SCAN_BYTES: u64 = 256 << 10;

/// The last `lines` lines, in the text view, of the output between the offsets `from` and `to`,
/// at most `max_bytes`. Only the end of the range is rendered, so a command that printed
/// megabytes costs no more than one that printed a page.
pub(crate) fn lines(pane: &Pane, from: u64, to: u64, lines: usize, max_bytes: usize) -> String {
    if lines == 0 || to <= from {
        return String::new();
    }
    let scan_from = from.max(to.saturating_sub(TAIL_SCAN_BYTES));
    let (bytes, start) = pane.output().with(|s| s.ring.copy(scan_from, to));
    let mut begin = line_start_back(&bytes, lines);
    if begin == 0 && start > from {
        // The copy starts inside a line that began earlier: drop that fragment.
        begin = bytes.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
    }
    // The tail may begin while a full-screen program had the alternate screen, left out as in
    // every text view.
    let alt = pane.output().with(|s| s.alt.at(start + begin as u64));
    let rendered = text::render(&bytes[begin..], alt);
    let skip = rendered.len().saturating_sub(lines);
    clip_front(rendered[skip..].join("\n"), max_bytes)
}

/// What a pane shows now, for an answer that must let the agent see it without another call.
pub(crate) struct Shown {
    pub(crate) fitted: Fitted,
    /// The text is the alternate screen of a full-screen program (an editor, a pager, an
    /// installer), not the main screen's last lines.
    pub(crate) alternate: bool,
}

impl Shown {
    pub(crate) fn text(&self) -> &str {
        &self.fitted.text
    }
}

/// The last line of `text` that holds anything but blanks, without trailing blanks: where a
/// program that waits for the terminal has put its question.
pub(crate) fn question(text: &str) -> &str {
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().trim_end()
}

/// What the pane shows now, fitted to `budget`: while a full-screen program has the alternate
/// screen, that screen's rows in place, down to the last non-blank one (`screen::collapse`);
/// otherwise the end of the text view, with what matters before it (`budget`).
pub(crate) fn shown(pane: &Pane, budget: &Budget<'_>) -> Shown {
    shown_since(pane, 0, budget)
}

/// `shown`, with the text view's lines taken from raw offset `from` on (where a job began).
pub(crate) fn shown_since(pane: &Pane, from: u64, budget: &Budget<'_>) -> Shown {
    if let Some(rows) = alternate_rows(pane) {
        return Shown { fitted: budget::screen(&rows, budget), alternate: true };
    }
    let end = pane.output().end();
    let mut lines = budget::lines(pane, from, end, budget);
    if let Some(above) = pane.above() {
        // The line a live shell types is echoed by the terminal; it says nothing to the agent.
        lines.retain(|l| !above.typed_line(l));
    }
    Shown { fitted: budget::fit(&lines, budget), alternate: false }
}

/// The rows of the alternate screen down to the last non-blank one, while a full-screen program
/// shows it.
pub(crate) fn alternate_rows(pane: &Pane) -> Option<Vec<String>> {
    if !pane.output().with(|s| s.alt.active()) {
        return None;
    }
    let grid = pane.output().grid();
    grid.alternate.then(|| screen::without_trailing_blanks(&grid.rows).to_vec())
}

/// The start of the line `lines` lines back from the end of `bytes` (0 when there are fewer).
fn line_start_back(bytes: &[u8], lines: usize) -> usize {
    let mut end = bytes.len();
    // A final newline ends the last line; it does not begin an empty one.
    if end > 0 && bytes[end - 1] == b'\n' {
        end -= 1;
    }
    bytes[..end]
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, b)| **b == b'\n')
        .nth(lines - 1)
        .map_or(0, |(i, _)| i + 1)
}

/// Keeps the last `max` bytes of `text`, cut at a character boundary.
fn clip_front(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_starts_are_found_from_the_end() {
        assert_eq!(line_start_back(b"a\nb\nc\n", 2), 2);
        assert_eq!(line_start_back(b"a\nb\nc", 2), 2);
        assert_eq!(line_start_back(b"a\nb\nc\n", 5), 0);
        assert_eq!(line_start_back(b"", 1), 0);
    }

    #[test]
    fn clipping_keeps_whole_characters() {
        assert_eq!(clip_front("abc✓".to_string(), 2), "");
        assert_eq!(clip_front("abc✓".to_string(), 3), "✓");
        assert_eq!(clip_front("ab".to_string(), 5), "ab");
    }
}
