//! What one pane has printed and how it ended, shared between its reader thread and everyone else.
//!
//! The reader and waiter threads are the only writers: they append bytes, mark end of file and
//! record the exit status, then announce the change on the `Watch`. Tool calls read views (text,
//! raw, screen) out of it and block on a subscription until something they wait for arrives, with a
//! deadline. Nothing here polls.

use super::alt::AltScreen;
use super::cut::{fit_forward, last_lines, tail_bytes};
use super::echo::{Echo, Fed};
use super::exit::Exit;
use super::life::Life;
use super::ring::Ring;
use super::screen::{Grid, Screen, Styled};
use super::text;
use crate::error::{Error, Result};
use crate::watch::Watch;
use crossbeam_channel::Receiver;
use parking_lot::{Mutex, MutexGuard};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How far back a tail read looks for line starts: a bound on the work of one read.
pub(crate) const TAIL_SCAN_LIMIT: usize = 4 << 20;

/// What the reader captured — the bytes, where a full-screen program had the alternate screen — and
/// how the pane ended, under the output's lock.
pub(crate) struct Captured {
    pub(crate) ring: Ring,
    /// Where a full-screen program had the alternate screen, for the text view.
    pub(crate) alt: AltScreen,
    /// Whether the process exited (and when), the PTY reached end of file (every process
    /// holding it is gone), fugue closed the pane (waiters should stop).
    pub(crate) life: Life,
    /// A line fugue typed for the live shell, whose echo is held back (see `echo.rs`).
    echo: Option<Echo>,
}

pub(crate) struct Output {
    state: Mutex<Captured>,
    screen: Mutex<Screen>,
    /// Every change: output, exit, end of file, close.
    watch: Watch,
    /// Only exit, end of file and close.
    status: Watch,
    /// When the output began: `last_print` counts from here.
    born: Instant,
    /// When the pane last printed, in nanoseconds after `born` plus one; 0 while it never has.
    /// One store per PTY read, for the activity probe's "printed nothing for a while".
    last_print: AtomicU64,
    /// The reader has begun a read of the PTY and not yet appended what it got: bytes it took
    /// from the terminal may be in no one's sight (`read_from`).
    reading: AtomicBool,
}

/// The views of a pane's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum View {
    /// The text as a terminal would show it, line by line, escape sequences applied.
    Text,
    /// The bytes as the program wrote them (invalid UTF-8 replaced).
    Raw,
}

pub(crate) struct ReadRequest {
    pub(crate) view: View,
    pub(crate) lines: usize,
    pub(crate) since: Option<u64>,
    pub(crate) max_bytes: usize,
}

pub(crate) struct Read {
    pub(crate) output: String,
    /// Where the next `since` read should begin.
    pub(crate) offset: u64,
    pub(crate) truncated: bool,
    /// True when a `since` offset pointed at output already dropped from the scrollback.
    pub(crate) dropped: bool,
}

impl Captured {
    /// Adds printed bytes to the ring and the alternate-screen record.
    fn push(&mut self, data: &[u8]) {
        let at = self.ring.end();
        self.alt.feed(data, at);
        self.ring.push(data);
        let start = self.ring.start();
        self.alt.forget_before(start);
    }
}

impl Output {
    pub(crate) fn new(scrollback: usize, rows: u16, cols: u16) -> Output {
        Output {
            state: Mutex::new(Captured {
                ring: Ring::new(scrollback),
                alt: AltScreen::default(),
                life: Life::Running,
                echo: None,
            }),
            screen: Mutex::new(Screen::new(rows, cols)),
            watch: Watch::default(),
            status: Watch::default(),
            born: Instant::now(),
            last_print: AtomicU64::new(0),
            reading: AtomicBool::new(false),
        }
    }

    /// One read of the PTY by the reader thread, whose bytes go to `append` next. Until they are
    /// in, `reading` says so: once read they are no longer in the terminal, where the activity
    /// probe looks for output on its way, so a program that printed its question and blocked
    /// would otherwise look settled with the question out of sight (the question missed, or the
    /// line before it taken for it, when the reader thread is preempted between the two).
    pub(crate) fn read_from(
        &self,
        pty: &mut impl std::io::Read,
        buf: &mut [u8],
    ) -> std::io::Result<usize> {
        self.reading.store(true, Ordering::SeqCst);
        let read = pty.read(buf);
        if !matches!(read, Ok(n) if n > 0) {
            self.reading.store(false, Ordering::SeqCst);
        }
        read
    }

    /// Whether the reader holds bytes it read from the PTY but has not appended yet. Asked after
    /// the terminal is found empty, it covers every byte that left it.
    pub(crate) fn reading(&self) -> bool {
        self.reading.load(Ordering::SeqCst)
    }

    /// Appends what the PTY printed; the reader thread's whole job per read. The time is stored
    /// before the bytes, so whoever sees the bytes sees the time too.
    pub(crate) fn append(&self, data: &[u8]) {
        let since_born = u64::try_from(self.born.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        self.last_print.store(since_born + 1, Ordering::Release);
        {
            let mut state = self.state.lock();
            match state.echo.as_mut().map(|echo| echo.feed(data)) {
                None => state.push(data),
                Some(Fed::Held) => {}
                Some(Fed::Done(bytes)) => {
                    state.echo = None;
                    state.push(&bytes);
                }
            }
        }
        self.reading.store(false, Ordering::SeqCst);
        self.watch.notify();
    }

    /// Holds back what the pane prints from now until `echo`'s begin mark, and shows its display
    /// in its place. Call it just before typing the line.
    pub(crate) fn hold_echo(&self, echo: Echo) {
        let mut state = self.state.lock();
        if let Some(mut old) = state.echo.take() {
            let held = old.release();
            state.push(&held);
        }
        state.echo = Some(echo);
    }

    /// Gives back what is held for exec `exec`, as it was: the command never began.
    pub(crate) fn release_echo(&self, exec: u64) {
        {
            let mut state = self.state.lock();
            if state.echo.as_ref().is_none_or(|e| e.exec != exec) {
                return;
            }
            if let Some(mut echo) = state.echo.take() {
                let held = echo.release();
                state.push(&held);
            }
        }
        self.watch.notify();
    }

    pub(crate) fn set_eof(&self) {
        {
            let mut state = self.state.lock();
            if let Some(mut echo) = state.echo.take() {
                let held = echo.release();
                state.push(&held);
            }
            state.life = state.life.drained();
        }
        self.notify_status();
    }

    pub(crate) fn set_exit(&self, exit: Exit) {
        {
            let mut state = self.state.lock();
            state.life = state.life.exited(exit, Instant::now());
        }
        self.notify_status();
    }

    pub(crate) fn set_closed(&self) {
        {
            let mut state = self.state.lock();
            state.life = state.life.closed();
        }
        self.notify_status();
    }

    fn notify_status(&self) {
        self.watch.notify();
        self.status.notify();
    }

    /// Runs `f` on the current state under the lock; keep `f` short.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&Captured) -> T) -> T {
        f(&self.state.lock())
    }

    /// A channel that receives a token after every change. Subscribe before looking at the state,
    /// so that no change can slip between the look and the wait.
    pub(crate) fn subscribe(&self) -> Receiver<()> {
        self.watch.subscribe()
    }

    /// Like `subscribe`, but only for how the pane ends: its process exits, its terminal reaches
    /// end of file, or it is closed. For waiters that do not read the output: a pane printing
    /// megabytes would otherwise wake them once per PTY read.
    pub(crate) fn subscribe_status(&self) -> Receiver<()> {
        self.status.subscribe()
    }

    /// When the pane last printed; when it began, if it never has.
    pub(crate) fn last_print(&self) -> Instant {
        match self.last_print.load(Ordering::Acquire) {
            0 => self.born,
            n => self.born + Duration::from_nanos(n - 1),
        }
    }

    pub(crate) fn end(&self) -> u64 {
        self.state.lock().ring.end()
    }

    pub(crate) fn exit(&self) -> Option<Exit> {
        self.state.lock().life.exit()
    }

    pub(crate) fn resize(&self, rows: u16, cols: u16) {
        self.screen.lock().resize(rows, cols);
    }

    /// The grid as it is now, after feeding the emulator everything printed so far.
    pub(crate) fn grid(&self) -> Grid {
        self.caught_up().grid()
    }

    /// The top-left `rows` x `cols` cells of the grid with their colours, for `fugue attach`.
    pub(crate) fn styled(&self, rows: u16, cols: u16) -> Styled {
        self.caught_up().styled(rows, cols)
    }

    /// The emulator, fed everything printed so far.
    fn caught_up(&self) -> MutexGuard<'_, Screen> {
        let mut screen = self.screen.lock();
        let (bytes, from) = {
            let state = self.state.lock();
            let (from, to) = screen.pending(&state.ring);
            state.ring.copy(from, to)
        };
        screen.feed(&bytes, from);
        screen
    }

    pub(crate) fn application_cursor(&self) -> bool {
        self.grid().application_cursor
    }

    pub(crate) fn read(&self, req: &ReadRequest) -> Result<Read> {
        match req.since {
            Some(since) => self.read_since(req, since),
            None => Ok(self.read_tail(req)),
        }
    }

    /// The last `lines` lines, cut from the front to `max_bytes`.
    fn read_tail(&self, req: &ReadRequest) -> Read {
        self.read_tail_after(req, 0)
    }

    /// The last `lines` lines of what came after raw offset `after`, cut from the front to
    /// `max_bytes`: what a waiter that started at `after` saw, and no more.
    fn read_tail_after(&self, req: &ReadRequest, after: u64) -> Read {
        let (bytes, from, held_from, alt) = {
            let state = self.state.lock();
            let start = state.ring.tail_start(req.lines, TAIL_SCAN_LIMIT).max(after);
            let (bytes, from) = state.ring.copy(start, u64::MAX);
            (bytes, from, state.ring.start(), state.alt.at(from))
        };
        let keep = text::complete_len(&bytes);
        let offset = from + keep as u64;
        let (output, cut) = match req.view {
            View::Raw => tail_bytes(&String::from_utf8_lossy(&bytes[..keep]), req.max_bytes),
            _ => tail_bytes(
                last_lines(&text::render_joined(&bytes[..keep], alt), req.lines),
                req.max_bytes,
            ),
        };
        Read { output, offset, truncated: cut || from > held_from, dropped: false }
    }

    /// Everything after `since`, cut at the back to `lines` lines and `max_bytes`, so that the
    /// returned offset resumes exactly where this read stopped.
    fn read_since(&self, req: &ReadRequest, since: u64) -> Result<Read> {
        let (bytes, from, alt) = {
            let state = self.state.lock();
            if since > state.ring.end() {
                return Err(Error::invalid(format!(
                    "since={since} is past the end of the pane's output ({}); use an offset \
                     returned by fugue_send_input or fugue_get_output",
                    state.ring.end()
                )));
            }
            let (bytes, from) = state.ring.copy(since, u64::MAX);
            (bytes, from, state.alt.at(from))
        };
        let view = |chunk: &[u8]| match req.view {
            View::Raw => String::from_utf8_lossy(chunk).into_owned(),
            _ => text::render_joined(chunk, alt),
        };
        let (output, keep) = fit_forward(&bytes, (req.lines, req.max_bytes), view);
        Ok(Read {
            output,
            offset: from + keep as u64,
            // A partial character held back at the end is not more to read yet.
            truncated: keep < text::complete_len(&bytes),
            dropped: from > since,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output_with(bytes: &[u8]) -> Output {
        let out = Output::new(1 << 20, 24, 80);
        out.append(bytes);
        out
    }

    fn req(view: View, lines: usize, since: Option<u64>, max_bytes: usize) -> ReadRequest {
        ReadRequest { view, lines, since, max_bytes }
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let out = output_with(b"a\r\nb\r\nc\r\nd\r\n");
        let read = out.read(&req(View::Text, 2, None, 1000)).unwrap();
        assert_eq!(read.output, "c\nd");
        assert!(read.truncated);
        assert_eq!(read.offset, 12);
        let all = out.read(&req(View::Text, 10, None, 1000)).unwrap();
        assert_eq!(all.output, "a\nb\nc\nd");
        assert!(!all.truncated);
    }

    #[test]
    fn since_pages_forward_without_losing_a_byte() {
        let out = output_with(b"l1\nl2\nl3\nl4\nl5\n");
        let first = out.read(&req(View::Text, 2, Some(0), 1000)).unwrap();
        assert_eq!((first.output.as_str(), first.truncated), ("l1\nl2", true));
        let second = out.read(&req(View::Text, 2, Some(first.offset), 1000)).unwrap();
        assert_eq!(second.output, "l3\nl4");
        let third = out.read(&req(View::Text, 2, Some(second.offset), 1000)).unwrap();
        assert_eq!((third.output.as_str(), third.truncated), ("l5", false));
        assert_eq!(third.offset, 15);
    }

    #[test]
    fn since_holds_back_a_split_character() {
        let out = Output::new(1 << 20, 24, 80);
        let check = "ok ✓\n".as_bytes();
        out.append(&check[..4]);
        let first = out.read(&req(View::Raw, 100, Some(0), 1000)).unwrap();
        assert_eq!((first.output.as_str(), first.offset), ("ok ", 3));
        out.append(&check[4..]);
        let second = out.read(&req(View::Raw, 100, Some(first.offset), 1000)).unwrap();
        assert_eq!(second.output, "✓\n");
    }

    #[test]
    fn since_views_fit_max_bytes_and_always_move_forward() {
        // Invalid bytes become three-byte replacement characters; tabs and moves become blanks.
        let hostile = [&b"\xff\xfe"[..], b"\t\t\t\t", b"\x1b[999Cx\n", "✓".as_bytes()].concat();
        let out = output_with(&hostile.repeat(200));
        for view in [View::Raw, View::Text] {
            for max in [1, 2, 5, 100, 4096] {
                let mut offset = 0;
                while offset < out.end() {
                    let read = out.read(&req(view, 1000, Some(offset), max)).unwrap();
                    assert!(read.output.len() <= max, "{view:?} {max}: {}", read.output.len());
                    assert!(read.offset > offset, "{view:?} {max}: stuck at {offset}");
                    offset = read.offset;
                }
            }
        }
    }

    /// Generated hostile output (random bytes, escape sequences with huge parameters, unterminated
    /// strings, split characters, tabs, carriage returns) through a small ring: every read stays
    /// within its cap, and paging with `since` always reaches the end.
    #[test]
    fn generated_hostile_output_keeps_every_read_bounded_and_moving() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let fragments: [&[u8]; 12] = [
            b"\x1b[9999C",
            b"\x1b[9999@",
            b"\x1b]0;title",
            b"\x07",
            b"\x1b[?1049h",
            b"\t\t",
            b"\r",
            b"\r\n",
            "✓".as_bytes(),
            b"\xe2\x9c",
            b"\x1bP",
            b"\x1b[1;31mx\x1b[0m",
        ];
        for round in 0..25 {
            let out = Output::new(4096, 24, 80);
            for _ in 0..(next() % 200) {
                let mut chunk = Vec::new();
                for _ in 0..(1 + next() % 20) {
                    if next() % 3 == 0 {
                        chunk.extend((0..next() % 64).map(|_| next() as u8));
                    } else {
                        chunk.extend_from_slice(fragments[(next() % 12) as usize]);
                    }
                }
                out.append(&chunk);
            }
            for view in [View::Text, View::Raw] {
                for max in [5, 200, 5000] {
                    let tail = out.read(&req(view, 1 + (next() % 50) as usize, None, max)).unwrap();
                    assert!(tail.output.len() <= max, "round {round} {view:?} tail {max}");
                    let mut offset = 0;
                    while offset < out.end() {
                        let lines = 1 + (next() % 20) as usize;
                        let page = out.read(&req(view, lines, Some(offset), max)).unwrap();
                        assert!(page.output.len() <= max, "round {round} {view:?} {max}");
                        if page.offset == offset {
                            // Only a partial character at the very end may hold a read back.
                            assert!(out.end() - offset < 4, "round {round}: stuck at {offset}");
                            break;
                        }
                        offset = page.offset;
                    }
                }
            }
        }
    }

    #[test]
    fn since_in_the_future_is_an_error() {
        let out = output_with(b"abc");
        let err = out.read(&req(View::Text, 10, Some(99), 1000)).err().unwrap();
        assert_eq!(err.code(), "invalid_argument");
    }

    #[test]
    fn max_bytes_cuts_the_tail_at_a_line_start() {
        let out = output_with(b"first line\nsecond line\nthird\n");
        let read = out.read(&req(View::Text, 100, None, 12)).unwrap();
        assert_eq!(read.output, "third");
        assert!(read.truncated);
    }

    #[test]
    fn bytes_read_from_the_terminal_are_in_sight_until_appended() {
        let out = Output::new(1 << 20, 24, 80);
        let mut pty: &[u8] = b"Password: ";
        let mut buf = [0u8; 64];
        let n = out.read_from(&mut pty, &mut buf).unwrap();
        assert!(out.reading(), "read, not yet appended");
        out.append(&buf[..n]);
        assert!(!out.reading());
        // A read that finds nothing (the terminal's WouldBlock, here its end) holds nothing.
        assert_eq!(out.read_from(&mut pty, &mut buf).unwrap(), 0);
        assert!(!out.reading());
    }

    #[test]
    fn status_subscribers_hear_the_end_but_not_the_output() {
        let out = Output::new(1 << 20, 24, 80);
        let (all, status) = (out.subscribe(), out.subscribe_status());
        out.append(b"lots of output\n");
        assert_eq!((all.try_iter().count(), status.try_iter().count()), (1, 0));
        out.set_eof();
        assert_eq!(status.try_iter().count(), 1);
        out.set_exit(Exit::Code(0));
        assert_eq!(status.try_iter().count(), 1);
        out.set_closed();
        assert_eq!((all.try_iter().count(), status.try_iter().count()), (1, 1));
    }
}
