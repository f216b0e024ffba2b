//! What the person pressed: raw bytes from the terminal, split into keys.
//!
//! A read from a terminal holds whole key presses, so an escape sequence is parsed within one read
//! and a lone `ESC` at the end of a read is the Escape key. Keys that `fugue_send_input` can name
//! (arrows, PageUp, F5, ...) come out `Named`, so that when they are typed into a pane they are
//! re-encoded for the pane's own cursor-key mode; anything unrecognised is kept as its bytes.

/// One key press.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Key {
    /// A printable character.
    Char(char),
    /// Control plus a letter: `Ctrl(b'b')` is C-b, byte 0x02.
    Ctrl(u8),
    /// A key with a name in `pane::keys`.
    Named(&'static str),
    /// Anything else, as the terminal sent it (Alt combinations, modified arrows, ...).
    Raw(Vec<u8>),
}

impl Key {
    /// The bytes that type this key into a pane.
    pub(crate) fn bytes(&self, application_cursor: bool) -> Vec<u8> {
        match self {
            Key::Char(c) => c.to_string().into_bytes(),
            Key::Ctrl(letter) => vec![letter & 0x1f],
            Key::Named(name) => {
                crate::pane::keys::bytes(name, application_cursor).unwrap_or_default()
            }
            Key::Raw(bytes) => bytes.clone(),
        }
    }
}

/// Splits one read from the terminal into keys.
pub(crate) fn parse(bytes: &[u8]) -> Vec<Key> {
    let mut keys = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let (key, used) = one(&bytes[i..]);
        keys.push(key);
        i += used.max(1);
    }
    keys
}

/// The first key of `bytes` and how many bytes it took.
fn one(bytes: &[u8]) -> (Key, usize) {
    match bytes[0] {
        0x1b => escape(bytes),
        b'\r' => (Key::Named("Enter"), 1),
        b'\t' => (Key::Named("Tab"), 1),
        0x7f => (Key::Named("Backspace"), 1),
        b @ 0x01..=0x1a => (Key::Ctrl(b'a' + b - 1), 1),
        b @ (0x00 | 0x1c..=0x1f) => (Key::Raw(vec![b]), 1),
        b if b < 0x80 => (Key::Char(char::from(b)), 1),
        _ => utf8(bytes),
    }
}

fn utf8(bytes: &[u8]) -> (Key, usize) {
    let len = match bytes[0] {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    };
    match bytes.get(..len).and_then(|b| std::str::from_utf8(b).ok()).and_then(|s| s.chars().next())
    {
        Some(c) => (Key::Char(c), len),
        None => (Key::Raw(vec![bytes[0]]), 1),
    }
}

fn escape(bytes: &[u8]) -> (Key, usize) {
    match bytes.get(1) {
        None | Some(0x1b) => (Key::Named("Escape"), 1),
        Some(b'[') => csi(bytes),
        Some(b'O') => match bytes.get(2) {
            Some(&f) => (ss3(f).map_or_else(|| Key::Raw(bytes[..3].to_vec()), Key::Named), 3),
            None => (Key::Raw(bytes.to_vec()), bytes.len()),
        },
        // Alt plus a key: ESC, then that key's bytes.
        Some(_) => {
            let (_, used) = one(&bytes[1..]);
            (Key::Raw(bytes[..1 + used].to_vec()), 1 + used)
        }
    }
}

/// `ESC [ params final`.
fn csi(bytes: &[u8]) -> (Key, usize) {
    let body = &bytes[2..];
    let Some(end) = body.iter().position(|b| (0x40..=0x7e).contains(b)) else {
        return (Key::Raw(bytes.to_vec()), bytes.len());
    };
    let used = 2 + end + 1;
    let params = &body[..end];
    let name = match (params, body[end]) {
        (b"", b'A') => Some("Up"),
        (b"", b'B') => Some("Down"),
        (b"", b'C') => Some("Right"),
        (b"", b'D') => Some("Left"),
        (b"", b'H') | (b"1" | b"7", b'~') => Some("Home"),
        (b"", b'F') | (b"4" | b"8", b'~') => Some("End"),
        (b"", b'Z') => Some("BTab"),
        (b"2", b'~') => Some("Insert"),
        (b"3", b'~') => Some("Delete"),
        (b"5", b'~') => Some("PageUp"),
        (b"6", b'~') => Some("PageDown"),
        (b"15", b'~') => Some("F5"),
        (b"17", b'~') => Some("F6"),
        (b"18", b'~') => Some("F7"),
        (b"19", b'~') => Some("F8"),
        (b"20", b'~') => Some("F9"),
        (b"21", b'~') => Some("F10"),
        (b"23", b'~') => Some("F11"),
        (b"24", b'~') => Some("F12"),
        _ => None,
    };
    (name.map_or_else(|| Key::Raw(bytes[..used].to_vec()), Key::Named), used)
}

/// `ESC O final`: cursor keys in application mode, and F1-F4.
fn ss3(f: u8) -> Option<&'static str> {
    Some(match f {
        b'A' => "Up",
        b'B' => "Down",
        b'C' => "Right",
        b'D' => "Left",
        b'H' => "Home",
        b'F' => "End",
        b'P' => "F1",
        b'Q' => "F2",
        b'R' => "F3",
        b'S' => "F4",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_controls_and_named_keys_split() {
        assert_eq!(
            parse(b"a\x02o\r\x7f\x03"),
            vec![
                Key::Char('a'),
                Key::Ctrl(b'b'),
                Key::Char('o'),
                Key::Named("Enter"),
                Key::Named("Backspace"),
                Key::Ctrl(b'c'),
            ]
        );
        assert_eq!(
            parse(b"\x1b[A\x1bOB\x1b[5~\x1b[6~\x1b[1~\x1b[F"),
            vec![
                Key::Named("Up"),
                Key::Named("Down"),
                Key::Named("PageUp"),
                Key::Named("PageDown"),
                Key::Named("Home"),
                Key::Named("End"),
            ]
        );
    }

    #[test]
    fn escape_alone_alt_and_unknown_sequences() {
        assert_eq!(parse(b"\x1b"), vec![Key::Named("Escape")]);
        assert_eq!(parse(b"\x1bx"), vec![Key::Raw(b"\x1bx".to_vec())]);
        assert_eq!(parse(b"\x1b[1;5A"), vec![Key::Raw(b"\x1b[1;5A".to_vec())]);
        assert_eq!(parse(b"\x1b[12"), vec![Key::Raw(b"\x1b[12".to_vec())]);
        assert_eq!(parse("é漢".as_bytes()), vec![Key::Char('é'), Key::Char('漢')]);
        assert_eq!(parse(b"\xff"), vec![Key::Raw(vec![0xff])]);
    }

    #[test]
    fn keys_type_back_in_the_pane_mode() {
        assert_eq!(Key::Named("Up").bytes(false), b"\x1b[A");
        assert_eq!(Key::Named("Up").bytes(true), b"\x1bOA");
        assert_eq!(Key::Ctrl(b'c').bytes(false), vec![3]);
        assert_eq!(Key::Char('漢').bytes(false), "漢".as_bytes());
    }
}
