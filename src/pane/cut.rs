//! How a read of a pane's output is cut to what the call asked: forward from an offset, to at most
//! so many lines and bytes and never mid-character, always moving on by one character at least;
//! or back from the end, to the last lines that fit, starting at a line start when one is in
//! reach.

use super::text;

/// The view of the longest prefix of `bytes` that fits `lines` and `max_bytes`; returns it with the
/// number of bytes it covers. A view can be longer than its bytes (a replacement character for each
/// invalid byte, tabs, cursor moves), so a prefix whose view does not fit is shrunk in proportion
/// until it does. A read always covers at least one character, so paging always moves forward.
/// `view` renders a prefix as the call asked (text or raw).
pub(super) fn fit_forward(
    bytes: &[u8],
    (lines, max_bytes): (usize, usize),
    view: impl Fn(&[u8]) -> String,
) -> (String, usize) {
    let mut budget = max_bytes;
    loop {
        let cut = cut_point(bytes, lines, budget);
        let keep = text::complete_len(&bytes[..cut]);
        if keep == 0 && !bytes.is_empty() {
            let first = first_char_len(bytes);
            return (cap(view(&bytes[..first]), max_bytes), first);
        }
        let output = view(&bytes[..keep]);
        if output.len() <= max_bytes {
            return (output, keep);
        }
        let scaled = (keep as u128 * max_bytes as u128 / output.len() as u128) as usize;
        budget = scaled.min(keep - 1);
    }
}

/// The length of the character `bytes` begins with (1 for a byte that begins none).
fn first_char_len(bytes: &[u8]) -> usize {
    let need = match bytes[0] {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    };
    need.min(bytes.len())
}

/// Cuts `text` to at most `max` bytes at a character boundary.
fn cap(mut text: String, max: usize) -> String {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text
}

/// Where to stop a forward read: after `lines` newlines or `max_bytes` bytes, whichever comes
/// first, preferring a line end when the byte cap cuts a line.
fn cut_point(bytes: &[u8], lines: usize, max_bytes: usize) -> usize {
    let mut cut = bytes.len().min(max_bytes);
    if let Some(pos) =
        bytes[..cut].iter().enumerate().filter(|(_, b)| **b == b'\n').nth(lines.saturating_sub(1))
    {
        cut = pos.0 + 1;
    } else if cut < bytes.len()
        && let Some(pos) = bytes[..cut].iter().rposition(|b| *b == b'\n')
    {
        cut = pos + 1;
    }
    cut
}

/// The last `n` lines of `text` (lines joined by `\n`).
pub(super) fn last_lines(text: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    let mut start = text.len();
    for _ in 0..n {
        match text[..start].rfind('\n') {
            Some(nl) => start = nl,
            None => return text,
        }
    }
    &text[start + 1..]
}

/// Keeps at most `max` bytes from the end of `text`, starting at a line start when one is in reach.
pub(super) fn tail_bytes(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_string(), false);
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    if let Some(nl) = text[start..].find('\n') {
        start += nl + 1;
    }
    (text[start..].to_string(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_lines_counts_from_the_end() {
        assert_eq!(last_lines("a\nb\nc", 2), "b\nc");
        assert_eq!(last_lines("a\nb\nc", 3), "a\nb\nc");
        assert_eq!(last_lines("a\nb\nc", 9), "a\nb\nc");
        assert_eq!(last_lines("a\n\n", 1), "");
        assert_eq!(last_lines("a\nb", 0), "");
    }
}
