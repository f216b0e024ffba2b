//! Turns raw terminal bytes into the text a person would read.
//!
//! This is a line-oriented interpreter, not a screen: it resolves what changes a line in place (`\r`
//! overwriting, backspace, tabs, erase-in-line, horizontal cursor moves) and drops what only styles
//! it (colours, OSC titles, mode switches). Vertical cursor moves cannot be resolved in a line log;
//! the `screen` view answers those. What a full-screen program draws on the alternate screen is
//! left out, as a terminal's scrollback leaves it out: the text view is the main screen's history. It runs on demand over a copy of the ring, never on the reader's
//! hot path, and it decodes UTF-8 over the whole range, so a character split across PTY reads comes
//! out whole.

use super::alt;

/// Renders `bytes` into lines joined by `\n`: without line terminators, without trailing blanks, and
/// without a final newline. A final line without a newline (a prompt) is included when it holds
/// text. Scanning a chatty pane renders megabytes, so the text is built in one buffer, with no
/// allocation per line. `alt` says the bytes begin on the alternate screen (see
/// `alt::AltScreen::at`): what a full-screen program draws there is not main-screen text, so it is
/// left out until the program switches back.
pub(crate) fn render_joined(bytes: &[u8], alt: bool) -> String {
    run(bytes, alt, false).0
}

/// `render_joined` for a search that reaches the end of the output, where the last line, if it has
/// no newline, is the one the cursor is on: its blanks up to the cursor stay. A prompt that waits
/// for its answer (`>>> `, `Password: `) ends in a space, and a pattern that says so must match it.
pub(crate) fn render_joined_to_cursor(bytes: &[u8], alt: bool) -> String {
    run(bytes, alt, true).0
}

/// The lines of `render_joined`, one string each.
pub(crate) fn render(bytes: &[u8], alt: bool) -> Vec<String> {
    let (text, lines) = run(bytes, alt, false);
    if lines == 0 { Vec::new() } else { text.split('\n').map(String::from).collect() }
}

/// `render_joined`, with where each line begins in `bytes`: reading from there shows that line
/// (a line's start is just after the newline that ended the one before it).
pub(crate) fn render_with_starts(bytes: &[u8], alt: bool) -> (String, Vec<usize>) {
    let mut term = LineTerm::new(bytes.len(), alt, false);
    term.starts = Some(Vec::new());
    let skip = bytes.len() - skip_continuation(bytes).len();
    term.line_began = skip;
    feed_all(&mut term, bytes);
    term.finish_with_starts()
}

/// The joined text and its number of lines.
fn run(bytes: &[u8], alt: bool, to_cursor: bool) -> (String, usize) {
    let mut term = LineTerm::new(bytes.len(), alt, to_cursor);
    feed_all(&mut term, bytes);
    term.finish()
}

/// Feeds `bytes` to `term`, each invalid sequence as one replacement character (as
/// `String::from_utf8_lossy` would), keeping `term.pos` at the offset in `bytes` being fed.
fn feed_all(term: &mut LineTerm, bytes: &[u8]) {
    let skip = bytes.len() - skip_continuation(bytes).len();
    term.pos = skip;
    for chunk in bytes[skip..].utf8_chunks() {
        let mut rest = chunk.valid();
        loop {
            let plain = term.append_plain(rest);
            if plain > 0 {
                rest = &rest[plain..];
                term.pos += plain;
                continue;
            }
            let Some(ch) = rest.chars().next() else { break };
            term.feed(ch);
            rest = &rest[ch.len_utf8()..];
            term.pos += ch.len_utf8();
        }
        if !chunk.invalid().is_empty() {
            term.feed(char::REPLACEMENT_CHARACTER);
            term.pos += chunk.invalid().len();
        }
    }
}

/// The length of `bytes` without a trailing, incomplete UTF-8 sequence: the place where a reader
/// should stop so that the next read begins with the whole character.
pub(crate) fn complete_len(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(3) {
        let b = bytes[n - back];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: keep looking for the lead byte
        }
        let need = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return n,
        };
        return if need > back { n - back } else { n };
    }
    n
}

/// Skips continuation bytes at the start: a read that begins inside a character has no use for its
/// tail, and showing a replacement character there would be noise.
fn skip_continuation(bytes: &[u8]) -> &[u8] {
    let skip = bytes.iter().take(3).take_while(|b| **b & 0xC0 == 0x80).count();
    &bytes[skip..]
}

/// Where the lexer of escape sequences stands.
#[derive(Default, PartialEq)]
enum Lex {
    #[default]
    Ground,
    Escape,
    /// After ESC and an intermediate byte (`ESC ( B`): one more byte ends it.
    EscapeIntermediate,
    Csi,
    /// OSC, DCS, SOS, PM, APC: a string that ends with BEL or ST.
    Str,
    StrEscape,
}

/// Blanks a render may add beyond one per input byte. Cursor moves and insertions pad a line with
/// blanks (`ESC[9999C` is eight bytes and ten thousand columns), so without a budget a few hundred
/// kilobytes of hostile output would render into gigabytes. Real output pads far less than it prints.
const PAD_SLACK: usize = 64 << 10;

/// The widest line the text view keeps: past it, the oldest half of the line is dropped.
const MAX_COLUMNS: usize = 1 << 20;

#[derive(Default)]
struct LineTerm {
    state: Lex,
    params: String,
    line: Vec<char>,
    col: usize,
    /// Finished lines, joined by `\n`.
    out: String,
    lines: usize,
    /// Blanks still allowed for padding; once spent, moves past the line's end stop at its end.
    pad_budget: usize,
    /// A full-screen program has the alternate screen: what it prints is not main-screen text.
    alt: bool,
    /// Keep the blanks before the cursor on an unfinished last line (`render_joined_to_cursor`).
    to_cursor: bool,
    /// The offset in the input of what is being fed.
    pos: usize,
    /// Where the line being built began in the input.
    line_began: usize,
    /// Where each finished line began, when asked for (`render_with_starts`).
    starts: Option<Vec<usize>>,
}

impl LineTerm {
    fn new(len: usize, alt: bool, to_cursor: bool) -> LineTerm {
        LineTerm {
            alt,
            to_cursor,
            pad_budget: len + PAD_SLACK,
            out: String::with_capacity(len),
            ..LineTerm::default()
        }
    }

    fn feed(&mut self, ch: char) {
        match self.state {
            Lex::Ground => self.ground(ch),
            Lex::Escape => self.escape(ch),
            Lex::EscapeIntermediate => self.state = Lex::Ground,
            Lex::Csi => self.csi(ch),
            Lex::Str => match ch {
                '\x07' => self.state = Lex::Ground,
                '\x1b' => self.state = Lex::StrEscape,
                _ => {}
            },
            Lex::StrEscape => {
                self.state = if ch == '\\' { Lex::Ground } else { Lex::Str };
            }
        }
    }

    fn ground(&mut self, ch: char) {
        if self.alt {
            // Only an escape can end the alternate screen; the rest is the program's screen.
            if ch == '\x1b' {
                self.state = Lex::Escape;
            }
            return;
        }
        match ch {
            '\n' => {
                self.newline();
                self.line_began = self.pos + 1;
            }
            '\r' => self.col = 0,
            '\x08' => self.col = self.col.saturating_sub(1),
            '\t' => self.col = (self.col / 8 + 1) * 8,
            '\x1b' => self.state = Lex::Escape,
            c if (c as u32) < 0x20 || c == '\x7f' => {}
            c => self.put(c),
        }
    }

    fn escape(&mut self, ch: char) {
        self.state = match ch {
            '[' => {
                self.params.clear();
                Lex::Csi
            }
            ']' | 'P' | 'X' | '^' | '_' => Lex::Str,
            ' '..='/' => Lex::EscapeIntermediate,
            _ => Lex::Ground,
        };
    }

    fn csi(&mut self, ch: char) {
        if ('\x40'..='\x7e').contains(&ch) {
            self.state = Lex::Ground;
            self.csi_final(ch);
        } else if self.params.len() < 64 {
            self.params.push(ch);
        }
    }

    fn csi_final(&mut self, ch: char) {
        if let Some(on) = alt::switch_of(&self.params, ch) {
            // The main screen's line and cursor are as the program found them when it leaves.
            self.alt = on;
            return;
        }
        if self.params.starts_with(['?', '>', '<', '=']) || self.alt {
            return; // other private modes (cursor keys), or drawing on the alternate screen
        }
        let n = self.param(0);
        let count = n.max(1) as usize;
        match ch {
            'K' => self.erase_in_line(n),
            'C' | 'a' => self.col += count,
            'D' => self.col = self.col.saturating_sub(count),
            'G' | '`' => self.col = count - 1,
            'H' | 'f' => self.col = (self.param(1).max(1) - 1) as usize,
            'X' => self.blank(self.col, self.col + count),
            'P' => {
                let end = (self.col + count).min(self.line.len());
                if self.col < end {
                    self.line.drain(self.col..end);
                }
            }
            '@' if self.col < self.line.len() => {
                let count = self.spend(count);
                self.line.splice(self.col..self.col, std::iter::repeat_n(' ', count));
            }
            _ => {}
        }
    }

    fn param(&self, index: usize) -> u32 {
        self.params.split(';').nth(index).and_then(|p| p.parse().ok()).unwrap_or(0).min(10_000)
    }

    fn erase_in_line(&mut self, mode: u32) {
        match mode {
            0 => self.line.truncate(self.col),
            1 => self.blank(0, self.col + 1),
            _ => self.line.clear(),
        }
    }

    fn blank(&mut self, from: usize, to: usize) {
        let to = to.min(self.line.len());
        for cell in self.line.iter_mut().take(to).skip(from) {
            *cell = ' ';
        }
    }

    /// The common case in bulk: a run of printable ASCII at the end of the line is appended as it
    /// is, and a whole plain line goes straight to the output. Returns how many bytes of `text` it
    /// took (none unless that case holds). It stops short of `MAX_COLUMNS`, where `put` takes over.
    fn append_plain(&mut self, text: &str) -> usize {
        if self.state != Lex::Ground || self.col != self.line.len() || self.alt {
            return 0;
        }
        let bytes = text.as_bytes();
        let limit = bytes.len().min(MAX_COLUMNS.saturating_sub(self.col));
        let mut n = 0;
        while n < limit && (0x20..0x7f).contains(&bytes[n]) {
            n += 1;
        }
        if self.line.is_empty() {
            let ending = match &bytes[n..] {
                [b'\n', ..] => 1,
                [b'\r', b'\n', ..] => 2,
                _ => 0,
            };
            if ending > 0 {
                // Printable ASCII holds no blank but the space.
                let mut end = n;
                while end > 0 && bytes[end - 1] == b' ' {
                    end -= 1;
                }
                self.next_line();
                self.out.push_str(&text[..end]);
                self.line_began = self.pos + n + ending;
                return n + ending;
            }
        }
        self.line.extend(bytes[..n].iter().map(|b| char::from(*b)));
        self.col += n;
        n
    }

    fn put(&mut self, ch: char) {
        // A runaway line must not allocate without bound; it keeps its newest columns, which are
        // what a tail read shows and a wait is looking for.
        if self.col >= MAX_COLUMNS {
            let drop = MAX_COLUMNS / 2;
            self.line.drain(..drop.min(self.line.len()));
            self.col -= drop;
        }
        if self.col > self.line.len() {
            let gap = self.col - self.line.len();
            self.col = self.line.len() + self.spend(gap);
        }
        if self.col < self.line.len() {
            self.line[self.col] = ch;
        } else {
            self.line.resize(self.col, ' ');
            self.line.push(ch);
        }
        self.col += 1;
    }

    /// Takes up to `n` blanks from the padding budget; returns how many were granted.
    fn spend(&mut self, n: usize) -> usize {
        let granted = n.min(self.pad_budget);
        self.pad_budget -= granted;
        granted
    }

    /// Ends the line being built: its text, without trailing blanks, goes to the output.
    fn newline(&mut self) {
        self.next_line();
        let end = self.line.iter().rposition(|c| !c.is_whitespace()).map_or(0, |i| i + 1);
        self.out.extend(&self.line[..end]);
        self.line.clear();
    }

    fn next_line(&mut self) {
        if let Some(starts) = &mut self.starts {
            starts.push(self.line_began);
        }
        if self.lines > 0 {
            self.out.push('\n');
        }
        self.lines += 1;
        self.col = 0;
    }

    fn finish_with_starts(mut self) -> (String, Vec<usize>) {
        self.end_last_line();
        (self.out, self.starts.unwrap_or_default())
    }

    fn finish(mut self) -> (String, usize) {
        self.end_last_line();
        (self.out, self.lines)
    }

    /// Ends an unfinished last line that holds text (a prompt).
    fn end_last_line(&mut self) {
        if self.line.iter().any(|c| *c != ' ') {
            if self.to_cursor {
                let end = self.line.iter().rposition(|c| !c.is_whitespace()).map_or(0, |i| i + 1);
                let cursor = self.col.min(self.line.len()).max(end);
                self.next_line();
                self.out.extend(&self.line[..cursor]);
            } else {
                self.newline();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8]) -> String {
        let joined = render_joined(bytes, false);
        assert_eq!(joined, render(bytes, false).join("\n"));
        joined
    }

    #[test]
    fn the_cursor_line_keeps_its_blanks_up_to_the_cursor_when_asked() {
        assert_eq!(render_joined(b"a\r\n>>> ", false), "a\n>>>");
        assert_eq!(render_joined_to_cursor(b"a\r\n>>> ", false), "a\n>>> ");
        assert_eq!(render_joined_to_cursor(b"Password:   \x1b[2D", false), "Password: ");
        assert_eq!(render_joined_to_cursor(b"done  \r\n", false), "done", "a finished line");
        assert_eq!(render_joined_to_cursor(b"x\r\n   ", false), "x", "a blank line is no line");
    }

    #[test]
    fn carriage_return_overwrites() {
        assert_eq!(text(b"progress 10%\rprogress 100%\r\ndone\r\n"), "progress 100%\ndone");
        assert_eq!(text(b"abcdef\rXY\r\n"), "XYcdef");
    }

    #[test]
    fn colours_and_titles_are_dropped() {
        assert_eq!(text(b"\x1b[1;31mred\x1b[0m \x1b]0;title\x07plain\r\n"), "red plain");
        assert_eq!(text(b"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n"), "link");
        assert_eq!(text(b"\x1b(Bok\x1b[?25l\n"), "ok");
    }

    #[test]
    fn the_alternate_screen_is_left_out() {
        let vim =
            b"$ vim\r\n\x1b[?1049h\x1b[1;1H~ buffer\r\n\"f\" written\x1b[?1049l$ echo ok\r\nok\r\n";
        assert_eq!(text(vim), "$ vim\n$ echo ok\nok");
        for mode in ["47", "1047", "1049"] {
            let bytes = format!("a\x1b[?{mode}hDRAWN\n\x1b[?{mode}lb\n");
            assert_eq!(text(bytes.as_bytes()), "ab", "{mode}");
        }
        // A render that begins on the alternate screen shows nothing until it is left.
        assert_eq!(render_joined(b"DRAWN\r\n\x1b[?1049lmain\r\n", true), "main");
    }

    #[test]
    fn erase_and_cursor_moves_resolve() {
        assert_eq!(text(b"hello world\r\x1b[Kbye\n"), "bye");
        assert_eq!(text(b"abc\x08\x08X\n"), "aXc");
        assert_eq!(text(b"abc\x1b[2DZ\n"), "aZc");
        assert_eq!(text(b"a\tb\n"), "a       b");
        assert_eq!(text(b"12345\x1b[3G\x1b[P\n"), "1245");
    }

    #[test]
    fn utf8_split_anywhere_is_whole_when_rendered_together() {
        let word = "héllo wörld ✓ 🎉\n".as_bytes();
        for cut in 0..word.len() {
            let mut joined = word[..cut].to_vec();
            joined.extend_from_slice(&word[cut..]);
            assert_eq!(text(&joined), "héllo wörld ✓ 🎉");
        }
    }

    #[test]
    fn complete_len_holds_back_a_partial_character() {
        let check = "a✓".as_bytes(); // 'a' then three bytes
        assert_eq!(complete_len(&check[..1]), 1);
        assert_eq!(complete_len(&check[..2]), 1);
        assert_eq!(complete_len(&check[..3]), 1);
        assert_eq!(complete_len(check), 4);
        assert_eq!(complete_len(b"\xff"), 1);
    }

    #[test]
    fn prompt_without_newline_is_a_line() {
        assert_eq!(render(b"out\r\n$ ", false), vec!["out", "$"]);
        assert_eq!(render(b"out\r\n", false), vec!["out"]);
    }

    #[test]
    fn empty_lines_are_kept_and_no_lines_is_none() {
        assert_eq!(render(b"a\n\n  \nb\n", false), vec!["a", "", "", "b"]);
        assert_eq!(render(b"\n", false), vec![""]);
        assert!(render(b"", false).is_empty());
        assert!(render(b"   ", false).is_empty());
        assert_eq!(render_joined(b"a\n\nb", false), "a\n\nb");
    }

    #[test]
    fn plain_runs_meet_overwrites_and_escapes() {
        assert_eq!(text(b"ab\x1b[1Dcd\n"), "acd");
        assert_eq!(text(b"one\x1b[0mtwo\x1b]0;t\x07three\n"), "onetwothree");
        assert_eq!(text(b"12345\r12\r\n"), "12345");
        assert_eq!(text("é plain ✓ more\n".as_bytes()), "é plain ✓ more");
    }

    #[test]
    fn each_line_knows_where_it_began() {
        let bytes = b"one\r\n\x1b[1mtwo\x1b[0m\n\xff\xfethree\n\nlast";
        let (text, starts) = render_with_starts(bytes, false);
        assert_eq!(text, "one\ntwo\n\u{fffd}\u{fffd}three\n\nlast");
        assert_eq!(starts, [0, 5, 17, 25, 26]);
        for (line, start) in text.split('\n').zip(&starts) {
            assert_eq!(render_joined(&bytes[*start..], false).split('\n').next(), Some(line));
        }
        assert_eq!(render_with_starts(&"✓a\nb".as_bytes()[1..], false).1, [2, 4]);
        assert_eq!(render_with_starts(b"x\x1b[?1049hy\nz\n\x1b[?1049lw\n", false).1, [0]);
    }

    #[test]
    fn leading_continuation_bytes_are_skipped() {
        assert_eq!(text(&"✓ok\n".as_bytes()[1..]), "ok");
    }

    #[test]
    fn runaway_cursor_moves_are_bounded() {
        assert_eq!(text(b"\x1b[99999999Cx\n").len(), 10_001);
    }

    #[test]
    fn an_endless_line_keeps_its_newest_columns() {
        let mut line = vec![b'x'; 3 * MAX_COLUMNS];
        line.extend_from_slice(b"END");
        let rendered = render(&line, false);
        assert_eq!(rendered.len(), 1);
        assert!(rendered[0].len() <= MAX_COLUMNS && rendered[0].ends_with("xEND"));
    }

    #[test]
    fn padding_is_bounded_by_the_input() {
        let hostile = b"\x1b[9999Cx".repeat(10_000);
        let rendered: usize = render(&hostile, false).iter().map(String::len).sum();
        assert!(rendered <= 2 * hostile.len() + PAD_SLACK, "{rendered}");
        let inserts = b"ab\x1b[1G\x1b[9999@".repeat(10_000);
        let rendered: usize = render(&inserts, false).iter().map(String::len).sum();
        assert!(rendered <= 2 * inserts.len() + PAD_SLACK, "{rendered}");
        // Ordinary tabs and moves are untouched.
        assert_eq!(text(b"a\tb\x1b[3Cc\n"), "a       b   c");
    }
}
