//! The visible grid of a pane, emulated lazily by vt100.
//!
//! vt100 is far slower than a PTY can print, so the reader thread never feeds it. Whoever wants the
//! grid calls `catch_up`, which feeds the bytes printed since the last look. When more than
//! `MAX_REPLAY` bytes are pending only the newest are replayed into a fresh emulator: a grid depends
//! on recent output, and the bound keeps one look at a pane that printed gigabytes cheap.

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
