//! Measuring and cutting plain text in terminal cells, for the parts of the screen attach writes
//! itself: the status line, the help, scrollback lines and names that came from elsewhere.
//!
//! Pane contents never pass through here: the server cuts those with the emulator's own widths.
//! This is a small approximation of `wcwidth` — combining marks take no cell, East Asian wide and
//! emoji blocks take two — good enough for text that only has to fit.

/// The cells a character takes.
pub(crate) fn char_width(c: char) -> usize {
    let u = c as u32;
    if c.is_control() || is_zero_width(u) {
        0
    } else if is_wide(u) {
        2
    } else {
        1
    }
}

pub(crate) fn str_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// `s` in exactly `width` cells: cut with an ellipsis when longer, padded with blanks when shorter.
pub(crate) fn fit(s: &str, width: usize) -> String {
    let mut out = String::with_capacity(width);
    let full = str_width(s);
    let room = if full > width { width.saturating_sub(1) } else { width };
    let mut used = 0;
    for c in s.chars() {
        let w = char_width(c);
        if used + w > room {
            break;
        }
        out.push(c);
        used += w;
    }
    if full > width && width > 0 {
        out.push('…');
        used += 1;
    }
    out.extend(std::iter::repeat_n(' ', width - used));
    out
}

/// Splits `s` into pieces of at most `width` cells; an empty line stays one empty piece.
pub(crate) fn wrap(s: &str, width: usize) -> Vec<String> {
    let width = width.max(2);
    let mut pieces = vec![String::new()];
    let mut used = 0;
    for c in s.chars() {
        let w = char_width(c);
        if used + w > width {
            pieces.push(String::new());
            used = 0;
        }
        if let Some(last) = pieces.last_mut() {
            last.push(c);
        }
        used += w;
    }
    pieces
}

/// Text from elsewhere (names, commands, messages) made safe to print: controls become blanks.
pub(crate) fn printable(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// A styled row from the server, keeping only SGR sequences (`ESC [ digits ; m`) and printable
/// text, so that whatever arrives cannot move the cursor or change the terminal's modes.
pub(crate) fn sgr_only(row: &str) -> String {
    let mut out = String::with_capacity(row.len());
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            if !c.is_control() {
                out.push(c);
            }
            continue;
        }
        if chars.peek() != Some(&'[') {
            continue;
        }
        chars.next();
        let mut params = String::new();
        while let Some(p) = chars.next_if(|p| ('\x20'..='\x3f').contains(p)) {
            params.push(p);
        }
        let last = chars.next_if(|f| ('\x40'..='\x7e').contains(f));
        if last == Some('m') && params.chars().all(|p| p.is_ascii_digit() || p == ';') {
            out.push_str("\x1b[");
            out.push_str(&params);
            out.push('m');
        }
    }
    out
}

fn is_zero_width(u: u32) -> bool {
    matches!(u,
        0x0300..=0x036F | 0x0483..=0x0489 | 0x0591..=0x05BD | 0x0610..=0x061A | 0x064B..=0x065F
        | 0x0E31 | 0x0E34..=0x0E3A | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x200B..=0x200F
        | 0x202A..=0x202E | 0x2060..=0x2064 | 0x20D0..=0x20FF | 0xFE00..=0xFE0F | 0xFE20..=0xFE2F
        | 0xFEFF)
}

fn is_wide(u: u32) -> bool {
    matches!(u,
        0x1100..=0x115F | 0x231A..=0x231B | 0x2329..=0x232A | 0x23E9..=0x23EC | 0x23F0 | 0x23F3
        | 0x25FD..=0x25FE | 0x2614..=0x2615 | 0x2648..=0x2653 | 0x267F | 0x2693 | 0x26A1
        | 0x26AA..=0x26AB | 0x26BD..=0x26BE | 0x26C4..=0x26C5 | 0x26CE | 0x26D4 | 0x26EA
        | 0x26F2..=0x26F3 | 0x26F5 | 0x26FA | 0x26FD | 0x2705 | 0x270A..=0x270B | 0x2728 | 0x274C
        | 0x274E | 0x2753..=0x2755 | 0x2757 | 0x2795..=0x2797 | 0x27B0 | 0x27BF | 0x2B1B..=0x2B1C
        | 0x2B50 | 0x2B55 | 0x2E80..=0x303E | 0x3041..=0x33FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF
        | 0xA000..=0xA4CF | 0xA960..=0xA97F | 0xAC00..=0xD7A3 | 0xF900..=0xFAFF | 0xFE10..=0xFE19
        | 0xFE30..=0xFE6F | 0xFF00..=0xFF60 | 0xFFE0..=0xFFE6 | 0x1F004 | 0x1F0CF | 0x1F18E
        | 0x1F191..=0x1F19A | 0x1F200..=0x1F251 | 0x1F300..=0x1F64F | 0x1F680..=0x1F6FF
        | 0x1F7E0..=0x1F7EB | 0x1F90C..=0x1F9FF | 0x1FA70..=0x1FAFF | 0x20000..=0x3FFFD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_count_cells() {
        assert_eq!(str_width("abc"), 3);
        assert_eq!(str_width("漢字"), 4);
        assert_eq!(str_width("e\u{301}"), 1);
        assert_eq!(str_width("a\tb"), 2);
    }

    #[test]
    fn fit_pads_and_cuts_to_the_cell() {
        assert_eq!(fit("ab", 4), "ab  ");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("漢字漢", 4), "漢… ");
        assert_eq!(fit("abc", 0), "");
    }

    #[test]
    fn wrap_keeps_every_character() {
        assert_eq!(wrap("abcdefg", 3), vec!["abc", "def", "g"]);
        assert_eq!(wrap("", 3), vec![""]);
        assert_eq!(wrap("漢字漢", 4), vec!["漢字", "漢"]);
    }

    #[test]
    fn only_sgr_survives() {
        let row = "\x1b[0;31mred\x1b[0m \x1b[2J\x1b[5;5Hx\x07\x1b[?25l\x1b]0;title\x07y";
        assert_eq!(sgr_only(row), "\x1b[0;31mred\x1b[0m x]0;titley");
        assert_eq!(printable("a\nb\x1bc"), "a b c");
    }
}
