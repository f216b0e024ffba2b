//! Where in a pane's output a full-screen program had the alternate screen.
//!
//! The text view is the main screen's history, as a terminal's scrollback and tmux's history are:
//! what vim or less draws on the alternate screen belongs to the `screen` view while it runs, and
//! must not read as if the shell had printed it. The text view is rendered on demand from any raw
//! offset, so the renderer must know whether that offset lies inside an alternate-screen spell.
//! The reader thread feeds every read here (one scan for ESC, cheap next to the copy into the
//! ring); it records each switch (`ESC[?1049h`, `?1047h`, `?47h` and their `l`) with the offset
//! just past it, and forgets switches the ring has dropped, and past `MAX_SWITCHES` the oldest.

use std::collections::VecDeque;

/// The private modes that switch to and from the alternate screen.
const ALT_MODES: [&str; 3] = ["1049", "1047", "47"];
/// Private-mode parameters longer than this are not a switch fugue knows; they are skipped.
const MAX_PARAMS: usize = 32;
/// The most switches kept. Real programs switch a few times per run; output that switches
/// thousands of times (a loop of `printf '\e[?47h\e[?47l'`) would otherwise keep more record than
/// output. Past it the oldest are forgotten as if the ring had dropped them, so only a read that
/// begins in that old stretch can be wrong about which screen it is on.
const MAX_SWITCHES: usize = 4096;

/// What a control sequence with these parameters (`?1049`) and final character does to the
/// alternate screen: `Some(true)` enters it, `Some(false)` leaves it, `None` neither. The renderer
/// and the reader's record share it, so they cannot disagree.
pub(crate) fn switch_of(params: &str, last: char) -> Option<bool> {
    let on = match last {
        'h' => true,
        'l' => false,
        _ => return None,
    };
    let modes = params.strip_prefix('?')?;
    modes.split(';').any(|p| ALT_MODES.contains(&p)).then_some(on)
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum EscapeState {
    #[default]
    Ground,
    Escape,
    /// `ESC [ ?` seen: collecting parameters.
    Private,
    /// Any other control sequence: skipped to its final byte.
    Other,
}

#[derive(Default)]
pub(crate) struct AltScreen {
    scan: EscapeState,
    params: String,
    /// Whether the alternate screen is on now, after every byte fed.
    on: bool,
    /// Whether it was on before the oldest switch kept.
    base: bool,
    /// Each switch: the offset just past it and whether it turned the alternate screen on.
    switches: VecDeque<(u64, bool)>,
}

impl AltScreen {
    /// Feeds `data`, which begins at raw offset `at`.
    pub(crate) fn feed(&mut self, data: &[u8], at: u64) {
        let mut i = 0;
        while i < data.len() {
            if self.scan == EscapeState::Ground {
                match data[i..].iter().position(|b| *b == 0x1b) {
                    Some(esc) => i += esc,
                    None => return,
                }
            }
            self.step(data[i], at + i as u64 + 1);
            i += 1;
        }
    }

    fn step(&mut self, byte: u8, after: u64) {
        self.scan = match (self.scan, byte) {
            (_, 0x1b) => EscapeState::Escape,
            (EscapeState::Escape, b'[') => EscapeState::Other,
            (EscapeState::Other, b'?') if self.params.is_empty() => {
                self.params.push('?');
                EscapeState::Private
            }
            (EscapeState::Private, 0x40..=0x7e) => {
                self.switch(byte, after);
                EscapeState::Ground
            }
            (EscapeState::Escape | EscapeState::Ground, _) | (EscapeState::Other, 0x40..=0x7e) => {
                EscapeState::Ground
            }
            (EscapeState::Private, _) => {
                if self.params.len() < MAX_PARAMS {
                    self.params.push(char::from(byte));
                }
                EscapeState::Private
            }
            (EscapeState::Other, _) => {
                // A parameter of a sequence that is not private: one mark, so that a `?` later in
                // it is not taken for a private mode.
                if self.params.is_empty() {
                    self.params.push('-');
                }
                EscapeState::Other
            }
        };
        if self.scan != EscapeState::Private && self.scan != EscapeState::Other {
            self.params.clear();
        }
    }

    /// The end of a private-mode sequence: a switch when it sets or resets an alternate-screen mode.
    fn switch(&mut self, last: u8, after: u64) {
        match switch_of(&self.params, char::from(last)) {
            Some(on) if on != self.on => {
                self.on = on;
                if self.switches.len() == MAX_SWITCHES
                    && let Some((_, was)) = self.switches.pop_front()
                {
                    self.base = was;
                }
                self.switches.push_back((after, on));
            }
            _ => {}
        }
    }

    /// Whether a full-screen program has the alternate screen now, after every byte fed.
    pub(crate) fn active(&self) -> bool {
        self.on
    }

    /// Whether the byte at raw offset `offset` was printed on the alternate screen.
    pub(crate) fn at(&self, offset: u64) -> bool {
        let before = self.switches.partition_point(|(at, _)| *at <= offset);
        match before {
            0 => self.base,
            n => self.switches[n - 1].1,
        }
    }

    /// Forgets switches before raw offset `start` (the ring dropped them) but their effect.
    pub(crate) fn forget_before(&mut self, start: u64) {
        while self.switches.front().is_some_and(|(at, _)| *at <= start) {
            if let Some((_, on)) = self.switches.pop_front() {
                self.base = on;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(chunks: &[&[u8]]) -> AltScreen {
        let mut alt = AltScreen::default();
        let mut at = 0;
        for chunk in chunks {
            alt.feed(chunk, at);
            at += chunk.len() as u64;
        }
        alt
    }

    #[test]
    fn switches_are_found_at_their_offsets_even_split_across_reads() {
        let all: &[u8] = b"ab\x1b[?1049hvim\x1b[?1049lc";
        for cut in 0..all.len() {
            let alt = fed(&[&all[..cut], &all[cut..]]);
            assert!(!alt.at(0) && !alt.at(2), "cut {cut}");
            assert!(alt.at(11) && alt.at(13), "cut {cut}");
            assert!(!alt.at(22), "cut {cut}");
        }
    }

    #[test]
    fn every_alternate_mode_counts_and_others_do_not() {
        for on in ["\x1b[?47h", "\x1b[?1047h", "\x1b[?1049h", "\x1b[?25;1049h"] {
            assert!(fed(&[on.as_bytes(), b"x"]).at(on.len() as u64), "{on:?}");
        }
        for other in ["\x1b[?25h", "\x1b[1049h", "\x1b[?10490h", "\x1b[31m"] {
            assert!(!fed(&[other.as_bytes(), b"x"]).at(other.len() as u64), "{other:?}");
        }
    }

    #[test]
    fn the_record_is_bounded() {
        let storm = b"\x1b[?47h\x1b[?47l".repeat(3 * MAX_SWITCHES);
        let alt = fed(&[&storm, b"\x1b[?47h"]);
        assert_eq!(alt.switches.len(), MAX_SWITCHES);
        assert!(alt.at(storm.len() as u64 + 6) && !alt.at(storm.len() as u64));
    }

    #[test]
    fn an_endless_sequence_keeps_no_more_than_a_few_bytes() {
        let mut alt = AltScreen::default();
        alt.feed(b"\x1b[", 0);
        alt.feed(&b"1;".repeat(100_000), 2);
        assert!(alt.params.len() <= MAX_PARAMS);
        alt.feed(b"\x1b[?", 200_002);
        alt.feed(&b"1;".repeat(100_000), 200_005);
        assert!(alt.params.len() <= MAX_PARAMS);
    }

    #[test]
    fn forgotten_switches_keep_their_effect() {
        let mut alt = fed(&[b"\x1b[?1049hvim"]);
        alt.forget_before(20);
        assert!(alt.switches.is_empty() && alt.at(20));
        alt.feed(b"\x1b[?1049l", 20);
        assert!(!alt.at(28) && alt.at(21));
    }
}
