//! Input on its way into a pane's terminal, written by the pane's own input thread.
//!
//! A program that stops reading its input (raw mode, busy, stopped) fills the terminal's buffer,
//! and a write then has to wait until the program reads again, perhaps never. So callers never
//! write themselves: they queue bytes and wait a bounded time for the input thread to write them.
//! The queue is bounded too, so a pane that never reads costs at most `MAX_PENDING` bytes, and a
//! caller always gets an answer: written, still pending, or a clear error. The thread writes to the
//! non-blocking terminal and waits for room in `poll` together with a stop pipe that closing the
//! pane hangs up, so it ends with its pane whatever the program does.

use super::fd;
use crate::error::{Error, ErrorKind, Result};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;
use std::fs::File;
use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The most input queued for one pane and not yet taken by its program: two of the largest
/// `fugue_send_input` calls.
pub(crate) const MAX_PENDING: usize = 2 << 20;

/// How long a caller waits for its input to be written before it answers "pending".
pub(crate) const WRITE_WAIT: Duration = Duration::from_secs(2);

struct Chunk {
    bytes: Vec<u8>,
    /// Told the outcome once the chunk is written (or failed).
    done: Option<Sender<std::result::Result<(), String>>>,
}

pub(crate) struct Input {
    pane: String,
    /// `None` once the pane is closed: no more input is taken.
    queue: Mutex<Option<Sender<Chunk>>>,
    /// Dropped when the pane is closed, which hangs up the pipe the input thread waits on.
    stop: Mutex<Option<File>>,
    /// Bytes queued and not yet written.
    pending: Arc<AtomicUsize>,
}

impl Input {
    /// Starts the input thread for `terminal`, a non-blocking descriptor of the pane's terminal.
    pub(crate) fn start(
        pane: &str,
        terminal: File,
        spawn: impl FnOnce(Box<dyn FnOnce() + Send>) -> Result<()>,
    ) -> Result<Input> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let (stopped, stop) = fd::pipe()?;
        let pending = Arc::new(AtomicUsize::new(0));
        let counter = pending.clone();
        spawn(Box::new(move || write_loop(&terminal, &stopped, rx, &counter)))?;
        Ok(Input {
            pane: pane.to_string(),
            queue: Mutex::new(Some(tx)),
            stop: Mutex::new(Some(stop)),
            pending,
        })
    }

    /// Bytes queued and not yet written into the terminal.
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::SeqCst)
    }

    /// Queues `parts` in order and waits up to `wait` for the last to be written. Returns how many
    /// bytes are still pending then (0 when all went in).
    pub(crate) fn send(&self, parts: &[&[u8]], wait: Duration) -> Result<usize> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        {
            let queue = self.queue.lock();
            let queue = queue.as_ref().ok_or_else(|| self.closed())?;
            let pending = self.pending.load(Ordering::SeqCst);
            if pending + total > MAX_PENDING {
                return Err(Error::new(
                    ErrorKind::LimitReached,
                    format!(
                        "pane {} has not read the {pending} bytes of input it was sent before; \
                         it is not reading its input. Wait for it, or close the pane",
                        self.pane
                    ),
                ));
            }
            for (i, part) in parts.iter().enumerate() {
                let done = (i + 1 == parts.len()).then(|| done_tx.clone());
                self.enqueue(queue, part, done).map_err(|_| self.closed())?;
            }
        }
        match done_rx.recv_timeout(wait) {
            Ok(Ok(())) => Ok(0),
            Ok(Err(e)) => Err(Error::new(
                ErrorKind::PaneExited,
                format!("cannot write to pane {}: {e}", self.pane),
            )),
            Err(RecvTimeoutError::Timeout) => Ok(self.pending.load(Ordering::SeqCst)),
            // The input thread is gone, and what was queued with it.
            Err(RecvTimeoutError::Disconnected) => Err(self.closed()),
        }
    }

    /// Queues a reply to the program (a cursor position report) without waiting; dropped when the
    /// queue is full, as a terminal whose program does not read would lose it too.
    pub(crate) fn reply(&self, bytes: &[u8]) {
        if let Some(queue) = self.queue.lock().as_ref()
            && self.pending.load(Ordering::SeqCst) + bytes.len() <= MAX_PENDING
        {
            let _ = self.enqueue(queue, bytes, None);
        }
    }

    /// Refuses further input and ends the input thread, even in the middle of a write.
    pub(crate) fn close(&self) {
        self.queue.lock().take();
        self.stop.lock().take();
    }

    fn enqueue(
        &self,
        queue: &Sender<Chunk>,
        bytes: &[u8],
        done: Option<Sender<std::result::Result<(), String>>>,
    ) -> std::result::Result<(), ()> {
        self.pending.fetch_add(bytes.len(), Ordering::SeqCst);
        queue.send(Chunk { bytes: bytes.to_vec(), done }).map_err(|_| {
            self.pending.fetch_sub(bytes.len(), Ordering::SeqCst);
        })
    }

    fn closed(&self) -> Error {
        Error::new(ErrorKind::PaneClosed, format!("pane {}'s terminal is closed", self.pane))
    }
}

fn write_loop(terminal: &File, stopped: &File, chunks: Receiver<Chunk>, pending: &AtomicUsize) {
    let mut gone = false;
    // Runs until the pane is closed (or dropped) and its queue with it. Once the terminal is gone,
    // what is still queued fails at once.
    for chunk in chunks {
        let mut left = chunk.bytes.len();
        let outcome = if gone {
            Err(gone_error())
        } else {
            write_all(terminal, &chunk.bytes, stopped, |n| {
                left -= n;
                pending.fetch_sub(n, Ordering::SeqCst);
            })
        };
        pending.fetch_sub(left, Ordering::SeqCst);
        gone |= outcome.as_ref().is_err_and(|e| e.kind() == io::ErrorKind::BrokenPipe);
        if let Some(done) = chunk.done {
            let _ = done.send(outcome.map_err(|e| e.to_string()));
        }
    }
}

fn gone_error() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the pane's terminal is closed")
}

/// Writes all of `bytes` to the non-blocking terminal, waiting in `poll` for room and telling
/// `written` each part that went in. Gives up with `BrokenPipe` when `stopped` hangs up (the pane
/// is closing) or the terminal does.
fn write_all(
    terminal: &File,
    mut bytes: &[u8],
    stopped: &File,
    mut written: impl FnMut(usize),
) -> io::Result<()> {
    while !bytes.is_empty() {
        let mut writer = terminal;
        match writer.write(bytes) {
            Ok(0) => return Err(gone_error()),
            Ok(n) => {
                bytes = &bytes[n..];
                written(n);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let [room, stop] = fd::wait([(terminal, libc::POLLOUT), (stopped, libc::POLLIN)])?;
                if stop != 0 || room & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                    return Err(gone_error());
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::EIO) => return Err(gone_error()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::AsRawFd;

    fn spawn(run: Box<dyn FnOnce() + Send>) -> Result<()> {
        std::thread::spawn(run);
        Ok(())
    }

    /// A pipe standing in for a terminal: non-blocking, so it fills up like one.
    fn terminal() -> (File, File) {
        let (read, write) = fd::pipe().unwrap();
        // SAFETY: sets O_NONBLOCK on a descriptor this test owns.
        unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        (read, write)
    }

    #[test]
    fn writes_arrive_in_order() {
        let (mut read, write) = terminal();
        let input = Input::start("p", write, spawn).unwrap();
        assert_eq!(input.send(&[b"ab", b"c"], WRITE_WAIT).unwrap(), 0);
        let mut got = [0u8; 3];
        read.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"abc");
    }

    #[test]
    fn a_full_terminal_costs_a_bounded_queue_and_closing_ends_the_writer() {
        let (read, write) = terminal();
        let input = Input::start("p", write, spawn).unwrap();
        let half = vec![b'y'; MAX_PENDING / 2];
        let wait = Duration::from_millis(10);
        // The pipe takes its 64 KiB and then nothing more: the rest stays pending.
        let pending = input.send(&[&half], wait).unwrap();
        assert!(pending > 0 && pending < half.len(), "{pending}");
        assert!(input.send(&[&half], wait).unwrap() > half.len());
        let err = input.send(&[&half], wait).unwrap_err();
        assert_eq!(err.code(), "limit_reached");
        // Closing wakes the writer out of its wait; what was queued is dropped.
        input.close();
        let deadline = std::time::Instant::now() + WRITE_WAIT;
        while input.pending.load(Ordering::SeqCst) != 0 {
            assert!(std::time::Instant::now() < deadline, "the writer did not end");
            std::thread::yield_now();
        }
        assert_eq!(input.send(&[b"x"], wait).unwrap_err().code(), "pane_closed");
        drop(read);
    }
}
