//! Input on its way into a pane's terminal, written by the pane's own input thread.
//!
//! A program that stops reading its input (raw mode, busy, stopped) fills the terminal's buffer,
//! and then a write to the terminal blocks until the program reads again, perhaps never. So
//! callers never write themselves: they queue bytes and wait a bounded time for the input thread to
//! write them. The queue is bounded too, so a pane that never reads costs at most `MAX_PENDING`
//! bytes, and a caller always gets an answer: written, still pending, or a clear error.

use crate::error::{Error, ErrorKind, Result};
use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use std::io::Write;
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
    /// `None` once the pane is closed; dropping it ends the input thread.
    queue: Mutex<Option<Sender<Chunk>>>,
    /// Bytes queued and not yet written.
    pending: Arc<AtomicUsize>,
}

impl Input {
    /// Starts the input thread for the terminal behind `writer`.
    pub(crate) fn start(
        pane: &str,
        writer: Box<dyn Write + Send>,
        spawn: impl FnOnce(Box<dyn FnOnce() + Send>) -> Result<()>,
    ) -> Result<Input> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let pending = Arc::new(AtomicUsize::new(0));
        let counter = pending.clone();
        spawn(Box::new(move || write_loop(writer, rx, counter)))?;
        Ok(Input { pane: pane.to_string(), queue: Mutex::new(Some(tx)), pending })
    }

    /// Queues `parts` in order and waits up to `wait` for the last to be written. Returns how many
    /// bytes are still pending then (0 when all went in).
    pub(crate) fn send(&self, parts: &[&[u8]], wait: Duration) -> Result<usize> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        {
            let queue = self.queue.lock();
            let queue = queue.as_ref().ok_or_else(|| {
                Error::new(ErrorKind::PaneClosed, format!("pane {} is closed", self.pane))
            })?;
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
            self.pending.fetch_add(total, Ordering::SeqCst);
            for (i, part) in parts.iter().enumerate() {
                let done = (i + 1 == parts.len()).then(|| done_tx.clone());
                // The receiver lives as long as the input thread, which outlives the sender.
                let _ = queue.send(Chunk { bytes: part.to_vec(), done });
            }
        }
        match done_rx.recv_timeout(wait) {
            Ok(Ok(())) => Ok(0),
            Ok(Err(e)) => Err(Error::new(
                ErrorKind::PaneExited,
                format!("cannot write to pane {}: {e}", self.pane),
            )),
            Err(_) => Ok(self.pending.load(Ordering::SeqCst)),
        }
    }

    /// Queues a reply to the program (a cursor position report) without waiting; dropped when the
    /// queue is full, as a terminal whose program does not read would lose it too.
    pub(crate) fn reply(&self, bytes: &[u8]) {
        if let Some(queue) = self.queue.lock().as_ref()
            && self.pending.load(Ordering::SeqCst) + bytes.len() <= MAX_PENDING
        {
            self.pending.fetch_add(bytes.len(), Ordering::SeqCst);
            let _ = queue.send(Chunk { bytes: bytes.to_vec(), done: None });
        }
    }

    /// Refuses further input; the input thread ends once its current write returns (a write to a
    /// terminal whose processes are gone fails at once).
    pub(crate) fn close(&self) {
        self.queue.lock().take();
    }
}

fn write_loop(
    mut writer: Box<dyn Write + Send>,
    chunks: Receiver<Chunk>,
    pending: Arc<AtomicUsize>,
) {
    for chunk in chunks {
        let outcome = writer.write_all(&chunk.bytes).and_then(|_| writer.flush());
        pending.fetch_sub(chunk.bytes.len(), Ordering::SeqCst);
        if let Some(done) = chunk.done {
            let _ = done.send(outcome.map_err(|e| e.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    /// A terminal whose program never reads: a write blocks until the test lets go, then fails.
    struct Stuck(Receiver<()>);

    impl Write for Stuck {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            let _ = self.0.recv();
            Err(io::Error::other("closed"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn spawn(run: Box<dyn FnOnce() + Send>) -> Result<()> {
        std::thread::spawn(run);
        Ok(())
    }

    #[test]
    fn writes_arrive_in_order() {
        let (tx, rx) = crossbeam_channel::unbounded::<Vec<u8>>();
        struct Sink(Sender<Vec<u8>>);
        impl Write for Sink {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                let _ = self.0.send(b.to_vec());
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let input = Input::start("p", Box::new(Sink(tx)), spawn).unwrap();
        assert_eq!(input.send(&[b"ab", b"c"], WRITE_WAIT).unwrap(), 0);
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), vec![b"ab".to_vec(), b"c".to_vec()]);
    }

    #[test]
    fn a_stuck_terminal_costs_a_bounded_queue_and_no_blocked_caller() {
        let (unstick, stuck) = crossbeam_channel::bounded(0);
        let input = Input::start("p", Box::new(Stuck(stuck)), spawn).unwrap();
        let big = vec![b'y'; MAX_PENDING / 2];
        let wait = Duration::from_millis(10);
        assert_eq!(input.send(&[&big], wait).unwrap(), big.len());
        assert_eq!(input.send(&[&big], wait).unwrap(), MAX_PENDING);
        let err = input.send(&[b"x"], wait).unwrap_err();
        assert_eq!(err.code(), "limit_reached");
        input.reply(b"dropped");
        assert_eq!(input.pending.load(Ordering::SeqCst), MAX_PENDING);
        input.close();
        drop(unstick);
        assert_eq!(input.send(&[b"x"], wait).unwrap_err().code(), "pane_closed");
    }
}
