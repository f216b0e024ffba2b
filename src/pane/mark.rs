//! Finding a mark in a pane's output: an escape sequence with a secret nonce that a shell prints
//! where a command begins or ends, so the bytes between two marks are that command's output.
//!
//! One search for every wait on the live-shell hooks' marks: `fugue_exec`, the waits behind
//! `fugue_send_input` and `fugue_run_pipeline`'s steps. A mark's record (the FIFO line saying the
//! command ended) can overtake the mark itself, which is still on its way through the terminal
//! and the reader; so the search waits a moment for it.

use super::Pane;
use std::time::{Duration, Instant};

/// How long to wait for what a shell wrote before a record that already arrived: a mark still in
/// the terminal, or the shell's exit status after its output ended. They came first, so they
/// arrive at once; the bound only guards against a wedged reader.
pub(crate) const CATCH_UP: Duration = Duration::from_secs(2);

/// Where `mark` sits in the pane's output at or after `from` (start and end offsets), waiting up
/// to `CATCH_UP` for a mark still in the terminal; `None` if it never comes or the output ended
/// without it.
pub(crate) fn find(pane: &Pane, mark: &str, from: u64) -> Option<(u64, u64)> {
    let events = pane.output().subscribe();
    let deadline = Instant::now() + CATCH_UP;
    loop {
        // The bytes and whether the output ended, read together: a mark that arrives just before
        // the end is still found.
        let (found, settled) = pane.output().with(|s| {
            let (bytes, start) = s.ring.copy(from, u64::MAX);
            (at(&bytes, start, mark), s.life.is_over())
        });
        if found.is_some() || settled || events.recv_deadline(deadline).is_err() {
            return found;
        }
    }
}

/// Where `mark` sits in the pane's output at or after `from` now (start and end offsets), for a
/// caller that waits on the output itself.
pub(crate) fn locate(pane: &Pane, mark: &str, from: u64) -> Option<(u64, u64)> {
    let (bytes, start) = pane.output().with(|s| s.ring.copy(from, u64::MAX));
    at(&bytes, start, mark)
}

/// The offsets of `mark` in `bytes`, which begin at output offset `start`.
fn at(bytes: &[u8], start: u64, mark: &str) -> Option<(u64, u64)> {
    let at = start + position(bytes, mark.as_bytes())? as u64;
    Some((at, at + mark.len() as u64))
}

fn position(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::position;

    #[test]
    fn a_mark_is_found_whole() {
        assert_eq!(position(b"ab\x1b]7770;n;1\x07cd", b"\x1b]7770;n;1\x07"), Some(2));
        assert_eq!(position(b"ab\x1b]7770;n;1", b"\x1b]7770;n;1\x07"), None);
    }
}
