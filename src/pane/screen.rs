//! The visible grid of a pane, emulated lazily by vt100.
//!
//! vt100 is far slower than a PTY can print, so the reader thread never feeds it. Whoever wants the
//! grid calls `catch_up`, which feeds the bytes printed since the last look. When more than
//! `MAX_REPLAY` bytes are pending only the newest are replayed into a fresh emulator: a grid depends
//! on recent output, and the bound keeps one look at a pane that printed gigabytes cheap.
//!
//! Two looks are offered: `grid`, the rows as plain text (the `screen` view of `fugue_get_output`),
//! and `styled`, the rows with their colours as SGR sequences and nothing else, cut to an exact
//! number of cells, which is what `fugue attach` paints into a pane's place on a real terminal.

use super::ring::Ring;

const MAX_REPLAY: u64 = 1 << 20;

pub(crate) struct Screen {
    parser: vt100::Parser,
    /// Absolute offset of the first byte not yet fed to the parser.
    fed: u64,
}

/// What a look at the grid returns.
pub(crate) struct Grid {
    pub(crate) rows: Vec<String>,
    pub(crate) cursor: (u16, u16),
    pub(crate) alternate: bool,
    pub(crate) application_cursor: bool,
}

impl Screen {
    pub(crate) fn new(rows: u16, cols: u16) -> Screen {
        Screen { parser: vt100::Parser::new(nonzero(rows), nonzero(cols), 0), fed: 0 }
    }

    /// The bytes this screen still has to see, as a range of the ring.
    pub(crate) fn pending(&self, ring: &Ring) -> (u64, u64) {
        let end = ring.end();
        let from = self.fed.max(ring.start()).max(end.saturating_sub(MAX_REPLAY));
        (from, end)
    }

    /// Feeds bytes copied from the ring at `from`. A gap since the last feed means output was skipped,
    /// so the emulator starts over rather than splice unrelated output together.
    pub(crate) fn feed(&mut self, bytes: &[u8], from: u64) {
        if from != self.fed {
            let (rows, cols) = self.parser.screen().size();
            self.parser = vt100::Parser::new(rows, cols, 0);
        }
        self.parser.process(bytes);
        self.fed = from + bytes.len() as u64;
    }

    pub(crate) fn resize(&mut self, rows: u16, cols: u16) {
        self.parser.set_size(nonzero(rows), nonzero(cols));
    }

    pub(crate) fn grid(&self) -> Grid {
        let screen = self.parser.screen();
        let (_, cols) = screen.size();
        Grid {
            rows: screen.rows(0, cols.get()).map(|r| r.trim_end().to_string()).collect(),
            cursor: screen.cursor_position(),
            alternate: screen.alternate_screen(),
            application_cursor: screen.application_cursor(),
        }
    }
}

/// A look at the grid with colours, for painting it elsewhere.
pub(crate) struct Styled {
    /// Each row exactly as wide as asked: text and SGR sequences only, ending in the default style.
    pub(crate) rows: Vec<String>,
    pub(crate) cursor: (u16, u16),
    pub(crate) hide_cursor: bool,
    pub(crate) application_cursor: bool,
}

impl Screen {
    /// The top-left `rows` x `cols` cells of the grid, padded with blanks where the grid is smaller.
    /// Only SGR sequences are emitted, never cursor moves or erases, so a row can be painted at any
    /// column of another terminal without touching the cells beside it.
    pub(crate) fn styled(&self, rows: u16, cols: u16) -> Styled {
        let screen = self.parser.screen();
        Styled {
            rows: (0..rows).map(|row| styled_row(screen, row, cols)).collect(),
            cursor: screen.cursor_position(),
            hide_cursor: screen.hide_cursor(),
            application_cursor: screen.application_cursor(),
        }
    }
}

/// One row as text with SGR sequences, exactly `width` cells wide.
fn styled_row(screen: &vt100::Screen, row: u16, width: u16) -> String {
    let mut out = String::with_capacity(usize::from(width) + 16);
    let mut current = Style::default();
    let mut col = 0;
    while col < width {
        let cell = screen.cell(row, col);
        let style = cell.map(Style::of).unwrap_or_default();
        if style != current {
            style.write_sgr(&mut out);
            current = style;
        }
        col += match cell {
            Some(cell) if cell.is_wide() && col + 1 < width && cell.has_contents() => {
                push_printable(&mut out, cell.contents());
                2
            }
            Some(cell)
                if !cell.is_wide() && !cell.is_wide_continuation() && cell.has_contents() =>
            {
                push_printable(&mut out, cell.contents());
                1
            }
            // Empty, past the grid, or a wide character cut by the edge: one blank cell.
            _ => {
                out.push(' ');
                1
            }
        };
    }
    if current != Style::default() {
        out.push_str("\x1b[0m");
    }
    out
}

/// vt100 keeps only printable text in cells; the filter makes sure of it, since a control
/// character here would move the real terminal's cursor.
fn push_printable(out: &mut String, text: &str) {
    out.extend(text.chars().map(|c| if c.is_control() { ' ' } else { c }));
}

/// The look of a cell, compared to emit an SGR sequence only where it changes.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Style {
    fg: vt100::Color,
    bg: vt100::Color,
    bold: bool,
    dim: bool,
    italic: bool,
    underline: bool,
    inverse: bool,
}

impl Style {
    fn of(cell: &vt100::Cell) -> Style {
        Style {
            fg: cell.fgcolor(),
            bg: cell.bgcolor(),
            bold: cell.bold(),
            dim: cell.dim(),
            italic: cell.italic(),
            underline: cell.underline(),
            inverse: cell.inverse(),
        }
    }

    /// A complete SGR sequence: it starts from a reset, so it does not depend on what came before.
    fn write_sgr(&self, out: &mut String) {
        use std::fmt::Write;
        out.push_str("\x1b[0");
        for (on, code) in [
            (self.bold, "1"),
            (self.dim, "2"),
            (self.italic, "3"),
            (self.underline, "4"),
            (self.inverse, "7"),
        ] {
            if on {
                out.push(';');
                out.push_str(code);
            }
        }
        for (color, base) in [(self.fg, 30u8), (self.bg, 40u8)] {
            let _ = match color {
                vt100::Color::Default => Ok(()),
                vt100::Color::Idx(i) if i < 8 => write!(out, ";{}", base + i),
                vt100::Color::Idx(i) if i < 16 => write!(out, ";{}", base + 60 + i - 8),
                vt100::Color::Idx(i) => write!(out, ";{};5;{i}", base + 8),
                vt100::Color::Rgb(r, g, b) => write!(out, ";{};2;{r};{g};{b}", base + 8),
            };
        }
        out.push('m');
    }
}

/// `rows` down to the last one that holds anything.
pub(crate) fn without_trailing_blanks(rows: &[String]) -> &[String] {
    let end = rows.iter().rposition(|r| !r.trim().is_empty()).map_or(0, |i| i + 1);
    &rows[..end]
}

/// Rows as an answer shows them: each in its place, blank ones too, so that row N of the answer is
/// row N of the screen (an editor's empty first line is where the text goes). A run of identical
/// rows (blank rows, vim's `~` filler) that a marker says in fewer bytes is one line instead:
/// `[N blank rows]`, or the row followed by ` [×N]`. Trailing blank rows are the caller's to drop.
pub(crate) fn collapse(rows: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(rows.len());
    let mut i = 0;
    while i < rows.len() {
        let row = &rows[i];
        let n = rows[i..].iter().take_while(|r| *r == row).count();
        let marker =
            if row.is_empty() { format!("[{n} blank rows]") } else { format!("{row} [×{n}]") };
        // Counted as an answer carries them: a row and its escaped newline.
        if n > 1 && marker.len() + 2 < n * (row.len() + 2) {
            out.push(marker);
        } else {
            out.extend_from_slice(&rows[i..i + n]);
        }
        i += n;
    }
    out
}

fn nonzero(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_moves_resolve_on_the_grid() {
        let mut ring = Ring::new(1 << 16);
        let mut screen = Screen::new(5, 20);
        ring.push(b"hello\r\nworld\x1b[1;1HJ");
        let (from, to) = screen.pending(&ring);
        let (bytes, from) = ring.copy(from, to);
        screen.feed(&bytes, from);
        let grid = screen.grid();
        assert_eq!(grid.rows[0], "Jello");
        assert_eq!(grid.rows[1], "world");
        assert_eq!(grid.cursor, (0, 1));
        assert!(!grid.alternate);
    }

    fn screen_with(rows: u16, cols: u16, bytes: &[u8]) -> Screen {
        let mut screen = Screen::new(rows, cols);
        screen.feed(bytes, 0);
        screen
    }

    #[test]
    fn styled_rows_carry_colours_and_exact_widths() {
        let screen =
            screen_with(3, 10, b"\x1b[1;31mred\x1b[m ok\r\n\x1b[38;5;200mX\x1b[48;2;1;2;3mY");
        let styled = screen.styled(4, 6);
        assert_eq!(styled.rows.len(), 4);
        assert_eq!(styled.rows[0], "\x1b[0;1;31mred\x1b[0m ok");
        assert_eq!(styled.rows[1], "\x1b[0;38;5;200mX\x1b[0;38;5;200;48;2;1;2;3mY\x1b[0m    ");
        assert_eq!(styled.rows[3], "      ", "rows past the grid are blank");
        assert_eq!(styled.cursor, (1, 2));
    }

    #[test]
    fn styled_rows_never_split_a_wide_character() {
        let screen = screen_with(2, 10, "ab漢字".as_bytes());
        assert_eq!(screen.styled(1, 6).rows[0], "ab漢字");
        // The second wide character would straddle the edge: a blank takes its one cell.
        assert_eq!(screen.styled(1, 5).rows[0], "ab漢 ");
        assert_eq!(screen.styled(1, 12).rows[0], "ab漢字      ");
    }

    #[test]
    fn styled_rows_hold_no_cursor_moves() {
        let screen = screen_with(3, 8, b"\x1b[2;3Hhi\x1b[K\x1b[1;1H\x1b[7mz");
        let rows = screen.styled(3, 8).rows;
        assert_eq!(rows[0], "\x1b[0;7mz\x1b[0m       ");
        assert_eq!(rows[1], "  hi    ");
        for row in rows {
            assert!(!row.contains('H') && !row.contains('K'), "{row:?}");
        }
    }

    #[test]
    fn identical_rows_are_collapsed_only_where_it_saves_bytes() {
        let rows = |list: &[&str]| list.iter().map(|r| r.to_string()).collect::<Vec<_>>();
        let mut screen = rows(&["", "# text"]);
        screen.extend(rows(&["~"; 18]));
        screen.push("status".into());
        assert_eq!(collapse(&screen), rows(&["", "# text", "~ [×18]", "status"]));
        let blanks = [vec![String::new(); 9], rows(&["x"])].concat();
        assert_eq!(collapse(&blanks), rows(&["[9 blank rows]", "x"]));
        let few = rows(&["a", "", "", "b", "~", "~", "~"]);
        assert_eq!(collapse(&few), few, "short runs cost less as they are");
    }

    #[test]
    fn a_huge_backlog_replays_only_its_tail() {
        let mut ring = Ring::new(4 << 20);
        ring.push(&vec![b'x'; 3 << 20]);
        ring.push(b"\r\nlast line");
        let screen = Screen::new(5, 20);
        let (from, to) = screen.pending(&ring);
        assert_eq!(to - from, MAX_REPLAY);
    }
}
