//! What a person watching a pane sees of a line fugue typed for a live shell: the command, not the
//! plumbing.
//!
//! `fugue_exec` and a pipeline's steps type a fixed line (` __fugue_b 7;eval "$__fugue_c"`) that
//! makes the shell read the command from a private file. The shell's line editor (or the terminal
//! itself, for dash) echoes that line, and a watcher (`fugue attach`, `fugue_get_output`, the
//! screen) would see the plumbing instead of the command. So the pane holds back what the shell
//! prints from the moment the line is typed until the mark the shell prints where the command's
//! output begins, and puts in its place the command's text and a line end. Only the modes the line
//! editor switched on the way (bracketed paste, keypad) and the shell's OSC 133 marks are kept
//! from what was held. Everything else the shell printed in between is its echo and redraws of the
//! typed line: the line is typed once the prompt is drawn (`shell::live::Live::prompt_drawn`).
//!
//! A line typed before the prompt was drawn (a pipeline's first step goes at once, so that the
//! terminal holds it ahead of anything typed for the step to read) is echoed by the terminal
//! before the prompt: then what the shell printed before the prompt (its start-up files' lines)
//! and the prompt itself, from its start mark to its end mark, are kept, without that echo.
//!
//! Held bytes are given back as they were when the shell prompts again first (the line was
//! discarded, say by C-c), when the pane ends, or past `MAX_HELD` bytes: what was held is then
//! shown, never lost.

/// The most bytes held back for one typed line: an echo and its redraws are a few hundred.
const MAX_HELD: usize = 64 << 10;

/// A command's end mark, which the shell prints before each prompt.
const COMMAND_END: &[u8] = b"\x1b]133;D;";
/// Where a prompt begins and ends.
const PROMPT_START: &[u8] = b"\x1b]133;A\x07";
const PROMPT_DRAWN: &[u8] = b"\x1b]133;B\x07";

/// One typed line whose echo is being held back.
pub(crate) struct Echo {
    /// The exec the line runs, so that only its own caller lets it go.
    pub(crate) exec: u64,
    /// The mark the shell prints where the command's output begins.
    begin: Vec<u8>,
    /// What stands in the output in place of the echo.
    display: Vec<u8>,
    /// The line as the terminal echoes it, for a line typed ahead of the prompt.
    typed: Vec<u8>,
    held: Vec<u8>,
}

/// What to do with the bytes a read brought.
pub(crate) enum Fed {
    /// Held back: nothing to add to the output yet.
    Held,
    /// The echo is over: add these bytes, and hold nothing more.
    Done(Vec<u8>),
}

impl Echo {
    /// `line` is the line typed (ending in a carriage return), `begin` the mark the shell prints
    /// where the command's output begins, `display` what stands in for the echo.
    pub(crate) fn new(exec: u64, line: &str, begin: &str, display: &str) -> Echo {
        let mut shown = display.as_bytes().to_vec();
        shown.extend_from_slice(b"\r\n");
        // The terminal echoes the carriage return as a line end.
        let mut typed = line.trim_end_matches('\r').as_bytes().to_vec();
        typed.extend_from_slice(b"\r\n");
        Echo { exec, begin: begin.as_bytes().to_vec(), display: shown, typed, held: Vec::new() }
    }

    pub(crate) fn feed(&mut self, data: &[u8]) -> Fed {
        // The search restarts a mark's length back, for a mark split across reads.
        let from = self.held.len().saturating_sub(self.begin.len());
        self.held.extend_from_slice(data);
        if let Some(at) = position(&self.held[from..], &self.begin) {
            return Fed::Done(self.replaced(from + at));
        }
        if self.discarded() || self.held.len() > MAX_HELD {
            return Fed::Done(self.release());
        }
        Fed::Held
    }

    /// Whether a prompt came after the one the line was typed at: a command's end mark after a
    /// prompt's end (the line was discarded, and the shell prompts again).
    fn discarded(&self) -> bool {
        let Some(drawn) = position(&self.held, PROMPT_DRAWN) else { return false };
        position(&self.held[drawn..], COMMAND_END).is_some()
    }

    /// What was held, as it was.
    pub(crate) fn release(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.held)
    }

    /// The kept sequences of the echo before `at` (and the prompt, when it was drawn after the
    /// line was typed), the display, then everything from the mark on.
    fn replaced(&mut self, at: usize) -> Vec<u8> {
        let held = std::mem::take(&mut self.held);
        let echo = &held[..at];
        let mut out = match prompt(echo) {
            Some((start, end)) => {
                let mut out = without(&echo[..start], &self.typed);
                out.extend_from_slice(&echo[start..end]);
                out.extend_from_slice(&kept(&echo[end..]));
                out
            }
            None => kept(echo),
        };
        out.extend_from_slice(&self.display);
        out.extend_from_slice(&held[at..]);
        out
    }
}

/// `bytes` without the terminal's echo of the typed line: what the shell printed while it started
/// or ran the last command stays.
fn without(bytes: &[u8], typed: &[u8]) -> Vec<u8> {
    match position(bytes, typed) {
        Some(at) => [&bytes[..at], &bytes[at + typed.len()..]].concat(),
        None => bytes.to_vec(),
    }
}

/// Where a prompt drawn after the line was typed sits in `echo`: from its start mark (OSC 133 A)
/// to the end of its end mark (OSC 133 B). The line was typed ahead of the prompt: the terminal
/// echoed it at once, and the line editor draws it again after the prompt.
fn prompt(echo: &[u8]) -> Option<(usize, usize)> {
    let end = rposition(echo, PROMPT_DRAWN)? + PROMPT_DRAWN.len();
    let start = rposition(&echo[..end], PROMPT_START).unwrap_or(0);
    Some((start, end))
}

/// The escape sequences of `echo` that change a mode or mark the prompt, without the text, cursor
/// moves, colours and titles around them.
fn kept(echo: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < echo.len() {
        let len = sequence_len(&echo[i..]);
        let seq = &echo[i..i + len];
        if keeps(seq) {
            out.extend_from_slice(seq);
        }
        i += len;
    }
    out
}

/// Whether an escape sequence stays: a private mode set or reset (`CSI ? ... h/l`), keypad modes
/// (`ESC =`, `ESC >`), or an OSC 133 mark.
fn keeps(seq: &[u8]) -> bool {
    match seq {
        [0x1b, b'[', b'?', .., b'h' | b'l'] | [0x1b, b'=' | b'>'] => true,
        _ => seq.starts_with(b"\x1b]133;"),
    }
}

/// The length of the sequence or character `bytes` begins with: a CSI or OSC sequence whole (an
/// unfinished one runs to the end), a two-byte escape, else one byte.
fn sequence_len(bytes: &[u8]) -> usize {
    match bytes {
        [0x1b, b'[', rest @ ..] => {
            let end = rest.iter().position(|b| (0x40..=0x7e).contains(b));
            end.map_or(bytes.len(), |e| e + 3)
        }
        [0x1b, b']', rest @ ..] => {
            let end = rest.iter().position(|&b| b == 0x07 || b == 0x1b);
            match end {
                Some(e) if rest[e] == 0x1b => (e + 4).min(bytes.len()),
                Some(e) => e + 3,
                None => bytes.len(),
            }
        }
        [0x1b, _, ..] => 2,
        _ => 1,
    }
}

fn position(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn rposition(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEGIN: &str = "\x1b]133;C;fugue=x1.n\x07";
    const LINE: &str = " __fugue_b 1\r";

    fn done(fed: Fed) -> Vec<u8> {
        match fed {
            Fed::Done(bytes) => bytes,
            Fed::Held => panic!("still held"),
        }
    }

    #[test]
    fn the_echo_becomes_the_command() {
        let mut echo = Echo::new(1, LINE, BEGIN, "make test");
        assert!(matches!(echo.feed(b" __fugue_b 1;eval \"$__"), Fed::Held));
        let out = done(
            echo.feed(b"fugue_c\"\r\n\x1b[?2004l\r\x1b]133;C\x07\x1b]133;C;fugue=x1.n\x07ok\r\n"),
        );
        let want = b"\x1b[?2004l\x1b]133;C\x07make test\r\n\x1b]133;C;fugue=x1.n\x07ok\r\n";
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(want));
    }

    #[test]
    fn a_mark_split_across_reads_is_found() {
        let mut echo = Echo::new(1, LINE, BEGIN, "ls");
        assert!(matches!(echo.feed(b"x\r\n\x1b]133;C;fu"), Fed::Held));
        let out = done(echo.feed(b"gue=x1.n\x07out"));
        assert_eq!(out, b"ls\r\n\x1b]133;C;fugue=x1.n\x07out");
    }

    #[test]
    fn colours_moves_and_titles_go_with_the_echo() {
        let mut echo = Echo::new(1, LINE, BEGIN, "ls");
        let fish = b"\r\x1b[24C \x1b[34m__fugue_b\x1b[30m\x1b(B\x1b[m \x1b]0;title\x07\x1b=\r\n";
        assert!(matches!(echo.feed(fish), Fed::Held));
        assert_eq!(done(echo.feed(BEGIN.as_bytes())), b"\x1b=ls\r\n\x1b]133;C;fugue=x1.n\x07");
    }

    #[test]
    fn a_new_prompt_before_the_mark_gives_back_what_was_held() {
        let mut echo = Echo::new(1, LINE, BEGIN, "ls");
        assert!(matches!(echo.feed(b"\x1b]133;B\x07 __fugue_b 1^C\r\n"), Fed::Held));
        let out = done(echo.feed(b"\x1b]133;D;130;fugue=4.n\x07$ "));
        assert_eq!(out, b"\x1b]133;B\x07 __fugue_b 1^C\r\n\x1b]133;D;130;fugue=4.n\x07$ ");
    }

    #[test]
    fn a_line_typed_ahead_of_the_prompt_keeps_the_prompt() {
        let mut echo = Echo::new(1, LINE, BEGIN, "ls");
        let ahead =
            b" __fugue_b 1\r\nmotd\r\n\x1b]133;D;0;fugue=1.n\x07\x1b]133;A\x07$ \x1b]133;B\x07";
        assert!(matches!(echo.feed(ahead), Fed::Held));
        let out = done(echo.feed(b" __fugue_b 1\r\n\x1b]133;C;fugue=x1.n\x07out"));
        let want = b"motd\r\n\x1b]133;D;0;fugue=1.n\x07\x1b]133;A\x07$ \x1b]133;B\x07ls\r\n\x1b]133;C;fugue=x1.n\x07out";
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(want));
    }

    #[test]
    fn too_much_is_given_back() {
        let mut echo = Echo::new(1, LINE, BEGIN, "ls");
        let noise = vec![b'x'; MAX_HELD + 1];
        assert_eq!(done(echo.feed(&noise)).len(), MAX_HELD + 1);
    }

    #[test]
    fn sequences_are_measured_whole() {
        assert_eq!(sequence_len(b"\x1b[?2004hX"), 8);
        assert_eq!(sequence_len(b"\x1b]0;t\x07X"), 6);
        assert_eq!(sequence_len(b"\x1b]0;t\x1b\\X"), 7);
        assert_eq!(sequence_len(b"\x1b=X"), 2);
        assert_eq!(sequence_len(b"\x1b[12"), 4);
        assert_eq!(sequence_len(b"A"), 1);
    }
}
