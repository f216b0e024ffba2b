//! Size-capped line reading, for every line protocol fugue reads: JSON-RPC on stdin and through a
//! shared server's socket (both ends), the control socket and the hellos.
//!
//! A line is stored only up to its cap, so a peer that never sends a newline costs at most the
//! cap in memory; the rest of an over-long line is left unread for the caller, who either drops
//! the connection or skips the line with `skip_line` (which stores nothing) and reads on.

use std::io::{BufRead, Read};

/// Why a line could not be read.
#[derive(Debug)]
pub(crate) enum LineError {
    /// Longer than the cap; `max + 1` bytes of it were read, the rest is left unread.
    TooLong,
    Io(std::io::Error),
}

/// Reads one line without its newline (a last line without one counts); `None` at end of input.
/// A line longer than `max` is an error, after reading at most `max + 1` bytes of it.
pub(crate) fn read_line(
    input: &mut impl BufRead,
    max: usize,
) -> Result<Option<Vec<u8>>, LineError> {
    let mut line = Vec::new();
    let cap = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    let n = input.by_ref().take(cap).read_until(b'\n', &mut line).map_err(LineError::Io)?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() > max {
        return Err(LineError::TooLong);
    }
    Ok(Some(line))
}

/// Reads and drops the rest of a line, newline included, without storing it: at most `limit`
/// bytes, fewer at end of input. Returns how many bytes it dropped.
pub(crate) fn skip_line(input: &mut impl BufRead, limit: u64) -> std::io::Result<u64> {
    let mut dropped = 0;
    while dropped < limit {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            break;
        }
        let newline = buf.iter().position(|b| *b == b'\n');
        let left = usize::try_from(limit - dropped).unwrap_or(usize::MAX);
        let n = newline.map_or(buf.len(), |i| i + 1).min(left);
        input.consume(n);
        dropped += n as u64;
        if newline.is_some_and(|i| i < n) {
            break;
        }
    }
    Ok(dropped)
}

/// What `next_line` read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    Line(Vec<u8>),
    /// A line over the cap, skipped to its end without being stored: its length in bytes.
    TooLong(u64),
    /// End of input, or a failed read.
    End,
}

/// Reads one line for a loop that goes on past an over-long one (JSON-RPC's): that line is read to
/// its end without being stored, and reported with its length.
pub(crate) fn next_line(input: &mut impl BufRead, max: usize) -> Next {
    match read_line(input, max) {
        Ok(Some(line)) => Next::Line(line),
        Ok(None) | Err(LineError::Io(_)) => Next::End,
        Err(LineError::TooLong) => match skip_line(input, u64::MAX) {
            Ok(rest) => Next::TooLong(max as u64 + 1 + rest),
            Err(_) => Next::End,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each line as `next_line` sees it with a cap of 8.
    fn lines(input: &[u8]) -> Vec<String> {
        let mut input = std::io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            match next_line(&mut input, 8) {
                Next::Line(line) => out.push(String::from_utf8(line).unwrap()),
                Next::TooLong(n) => out.push(format!("too long: {n}")),
                Next::End => return out,
            }
        }
    }

    #[test]
    fn lines_are_split_and_capped() {
        assert_eq!(lines(b"short\n12345678\nend"), ["short", "12345678", "end"]);
        assert_eq!(lines(b"123456789\nnext\n"), ["too long: 10", "next"]);
        assert_eq!(lines(b"a-line-of-20-bytes..\n\n"), ["too long: 21", ""]);
        assert_eq!(lines(b"no-newline-ever-at-all"), ["too long: 22"]);
        assert_eq!(lines(b"123456789"), ["too long: 9"]);
        assert_eq!(lines(b"\r\n\n"), ["\r", ""]);
    }

    #[test]
    fn an_over_long_line_stops_the_read_at_its_cap() {
        let mut input = std::io::BufReader::with_capacity(4, &b"123456789abc\nnext\n"[..]);
        assert!(matches!(read_line(&mut input, 8), Err(LineError::TooLong)));
        // The rest is still there for the caller: a connection closed now drops it.
        assert_eq!(read_line(&mut input, 8).unwrap().unwrap(), b"abc");
    }

    #[test]
    fn skipping_stops_at_its_limit() {
        let mut input = std::io::BufReader::with_capacity(4, &b"abcdefghij\nnext\n"[..]);
        assert_eq!(skip_line(&mut input, 5).unwrap(), 5);
        assert_eq!(read_line(&mut input, 8).unwrap().unwrap(), b"fghij");
        assert_eq!(read_line(&mut input, 8).unwrap().unwrap(), b"next");
    }
}
