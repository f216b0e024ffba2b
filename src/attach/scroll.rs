//! Scroll mode: looking back through one pane's output, its lines wrapped to the pane's width,
//! and the keys that move through them. Pure: the lines come in, the keys move an offset, and
//! drawing asks which lines show.

use super::keys::Key;
use crate::ids::PaneId;

/// Looking back through one pane's output.
pub(crate) struct Scroll {
    pub(crate) pane: PaneId,
    /// The pane's text lines, `None` until they arrive.
    pub(crate) lines: Option<Vec<String>>,
    /// `lines` wrapped to `width` cells.
    wrapped: Vec<String>,
    width: usize,
    /// Display lines between the bottom of the view and the newest line.
    pub(crate) offset: usize,
    /// Start one page up once the lines arrive (scroll mode entered with PageUp).
    page_up: bool,
}

/// What a key did in scroll mode.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Scrolled {
    /// It moved (or kept) the view.
    Moved,
    /// It leaves scroll mode.
    Leave,
    /// It means nothing here.
    Unknown,
}

impl Scroll {
    /// Scroll mode on `pane`, waiting for its lines; `page_up` starts one page up.
    pub(crate) fn new(pane: PaneId, page_up: bool) -> Scroll {
        Scroll { pane, lines: None, wrapped: Vec::new(), width: 0, offset: 0, page_up }
    }

    /// The pane's lines have come; the view shows `height` rows.
    pub(crate) fn arrived(&mut self, lines: Vec<String>, height: usize) {
        self.lines = Some(lines);
        self.width = 0;
        if self.page_up {
            self.offset = height.saturating_sub(1);
        }
    }

    /// The display lines `top..bottom` to show in `height` rows of `width` cells.
    pub(crate) fn window(&mut self, height: usize, width: usize) -> (&[String], usize, usize) {
        if width != self.width
            && let Some(lines) = &self.lines
        {
            self.wrapped = lines.iter().flat_map(|l| super::width::wrap(l, width)).collect();
            self.width = width;
        }
        self.offset = self.offset.min(self.max(height));
        let bottom = self.wrapped.len() - self.offset;
        (&self.wrapped, bottom.saturating_sub(height), bottom)
    }

    /// The largest offset: the first line at the top of the view.
    pub(crate) fn max(&self, height: usize) -> usize {
        self.wrapped.len().saturating_sub(height)
    }

    fn by(&mut self, lines: isize, height: usize) {
        let offset = self.offset.saturating_add_signed(lines);
        self.offset = offset.min(self.max(height));
    }

    /// Moves the view for `key`, in a view of `height` rows.
    pub(crate) fn key(&mut self, key: &Key, height: usize) -> Scrolled {
        let page = isize::try_from(height.saturating_sub(1).max(1)).unwrap_or(isize::MAX);
        match key {
            Key::Named("PageUp") => self.by(page, height),
            Key::Named("PageDown") | Key::Ctrl(b'f') | Key::Char(' ') => self.by(-page, height),
            Key::Named("Up") | Key::Char('k') => self.by(1, height),
            Key::Named("Down") | Key::Char('j') => self.by(-1, height),
            Key::Named("Home") | Key::Char('g') => self.offset = usize::MAX,
            Key::Named("End") | Key::Char('G') => self.offset = 0,
            Key::Char('q') | Key::Named("Escape") | Key::Ctrl(b'c') => return Scrolled::Leave,
            _ => return Scrolled::Unknown,
        }
        Scrolled::Moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("line {i}")).collect()
    }

    #[test]
    fn the_view_starts_at_the_newest_lines_and_pages_up_and_down() {
        let mut scroll = Scroll::new("p".parse().unwrap(), false);
        scroll.arrived(numbered(30), 10);
        let (lines, top, bottom) = scroll.window(10, 80);
        assert_eq!((&lines[top][..], bottom), ("line 21", 30));
        assert_eq!(scroll.key(&Key::Named("PageUp"), 10), Scrolled::Moved);
        let (lines, top, _) = scroll.window(10, 80);
        assert_eq!(&lines[top][..], "line 12", "a page is the height less one line");
        scroll.key(&Key::Char('g'), 10);
        let (lines, top, _) = scroll.window(10, 80);
        assert_eq!(&lines[top][..], "line 1", "Home stops at the first line");
        scroll.key(&Key::Char('G'), 10);
        assert_eq!(scroll.window(10, 80).2, 30, "End is back at the newest");
        scroll.key(&Key::Char('j'), 10);
        assert_eq!(scroll.offset, 0, "nothing below the newest line");
    }

    #[test]
    fn page_up_mode_starts_a_page_up_and_long_lines_wrap() {
        let mut scroll = Scroll::new("p".parse().unwrap(), true);
        assert!(scroll.window(5, 10).0.is_empty(), "nothing until the lines come");
        scroll.arrived(vec!["x".repeat(25), "end".into()], 5);
        let (lines, top, bottom) = scroll.window(5, 10);
        assert_eq!(lines.len(), 4, "25 cells wrap to three lines of 10: {lines:?}");
        assert_eq!((top, bottom), (0, 4), "the offset is cut to the first line");
    }

    #[test]
    fn q_leaves_and_other_keys_are_unknown() {
        let mut scroll = Scroll::new("p".parse().unwrap(), false);
        assert_eq!(scroll.key(&Key::Char('q'), 10), Scrolled::Leave);
        assert_eq!(scroll.key(&Key::Named("Escape"), 10), Scrolled::Leave);
        assert_eq!(scroll.key(&Key::Char('x'), 10), Scrolled::Unknown);
    }
}
