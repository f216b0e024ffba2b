//! The output of one pane as a byte ring with absolute offsets.
//!
//! The reader thread appends what the PTY prints; readers copy ranges out by absolute offset. When the
//! ring is full the oldest bytes are dropped and `start` moves forward, so an offset handed to a client
//! stays meaningful forever: a read from a dropped offset simply begins at `start`.

use std::collections::VecDeque;

pub(crate) struct Ring {
    bytes: VecDeque<u8>,
    /// Absolute offset of `bytes[0]`: how many bytes were ever dropped.
    start: u64,
    capacity: usize,
}

impl Ring {
    pub(crate) fn new(capacity: usize) -> Ring {
        Ring { bytes: VecDeque::new(), start: 0, capacity }
    }

    /// Absolute offset of the oldest byte still held.
    pub(crate) fn start(&self) -> u64 {
        self.start
    }

    /// Absolute offset just past the newest byte: the total ever printed.
    pub(crate) fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }

    pub(crate) fn push(&mut self, data: &[u8]) {
        let end = self.end() + data.len() as u64;
        let keep = &data[data.len().saturating_sub(self.capacity)..];
        let overflow = (self.bytes.len() + keep.len()).saturating_sub(self.capacity);
        self.bytes.drain(..overflow);
        self.bytes.extend(keep);
        self.start = end - self.bytes.len() as u64;
    }

    /// Copies `[from, to)` clamped to what is held; returns the bytes and the offset they begin at.
    pub(crate) fn copy(&self, from: u64, to: u64) -> (Vec<u8>, u64) {
        let from = from.clamp(self.start, self.end());
        let to = to.clamp(from, self.end());
        let (a, b) = ((from - self.start) as usize, (to - self.start) as usize);
        let (head, tail) = self.bytes.as_slices();
        let mut out = Vec::with_capacity(b - a);
        if a < head.len() {
            out.extend_from_slice(&head[a..b.min(head.len())]);
        }
        if b > head.len() {
            out.extend_from_slice(&tail[a.saturating_sub(head.len())..b - head.len()]);
        }
        (out, from)
    }

    /// How many newlines `[from, to)` holds, of what is held.
    pub(crate) fn newlines(&self, from: u64, to: u64) -> usize {
        let from = from.clamp(self.start, self.end());
        let to = to.clamp(from, self.end());
        let range = (from - self.start) as usize..(to - self.start) as usize;
        self.bytes.range(range).filter(|b| **b == b'\n').count()
    }

    /// The offset where the line holding the `n`-th newline from the end starts, looking back at most
    /// `limit` bytes: where a tail of `n` lines begins.
    pub(crate) fn tail_start(&self, n: usize, limit: usize) -> u64 {
        let len = self.bytes.len();
        let floor = len.saturating_sub(limit);
        let mut seen = 0;
        let mut i = len;
        // A final newline ends the last line; it does not begin an empty one.
        if i > floor && self.bytes[i - 1] == b'\n' {
            i -= 1;
        }
        while i > floor {
            if self.bytes[i - 1] == b'\n' {
                seen += 1;
                if seen == n {
                    return self.start + i as u64;
                }
            }
            i -= 1;
        }
        self.start + floor as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_survive_dropping() {
        let mut ring = Ring::new(8);
        ring.push(b"abcdef");
        ring.push(b"ghij");
        assert_eq!((ring.start(), ring.end()), (2, 10));
        assert_eq!(ring.copy(0, 100), (b"cdefghij".to_vec(), 2));
        assert_eq!(ring.copy(6, 8), (b"gh".to_vec(), 6));
    }

    #[test]
    fn oversized_push_keeps_the_newest_bytes() {
        let mut ring = Ring::new(4);
        ring.push(b"0123456789");
        assert_eq!((ring.start(), ring.end()), (6, 10));
        assert_eq!(ring.copy(0, 10).0, b"6789");
    }

    #[test]
    fn copy_across_the_wrap() {
        let mut ring = Ring::new(6);
        for chunk in [&b"abcd"[..], b"ef", b"gh", b"ij"] {
            ring.push(chunk);
        }
        assert_eq!(ring.copy(4, 10), (b"efghij".to_vec(), 4));
        assert_eq!(ring.copy(7, 9), (b"hi".to_vec(), 7));
    }

    #[test]
    fn tail_start_counts_lines() {
        let mut ring = Ring::new(100);
        ring.push(b"one\ntwo\nthree\n");
        assert_eq!(ring.tail_start(1, 100), 8);
        assert_eq!(ring.tail_start(2, 100), 4);
        assert_eq!(ring.tail_start(5, 100), 0);
        ring.push(b"four");
        assert_eq!(ring.tail_start(1, 100), 14);
        assert_eq!(ring.tail_start(1, 2), 16);
    }
}
