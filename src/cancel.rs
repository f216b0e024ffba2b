//! A cancel: a channel that disconnects when someone cancels, so work that blocks in `select!`
//! wakes at once instead of noticing on its next timeout. A tool call gets one (its client's
//! `notifications/cancelled`, a task's `tasks/cancel`), and so does the agent-pipeline manager
//! (fugue stopping).

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether something was cancelled, as a flag and as a channel to wait on.
pub(crate) struct Cancel {
    tx: Mutex<Option<Sender<()>>>,
    rx: Receiver<()>,
    /// The cancel stops the work too, not only the wait (a task's `tasks/cancel`).
    work: AtomicBool,
}

impl Default for Cancel {
    fn default() -> Cancel {
        let (tx, rx) = crossbeam_channel::bounded(0);
        Cancel { tx: Mutex::new(Some(tx)), rx, work: AtomicBool::new(false) }
    }
}

impl Cancel {
    /// Ends the call's wait. What the call started goes on: a cancelled `fugue_exec` leaves its
    /// command running, as `notifications/cancelled` promises.
    pub(crate) fn cancel(&self) {
        self.tx.lock().take();
    }

    /// Ends the call and the work it waits on: a task's cancel, after which the shell must not be
    /// left busy.
    pub(crate) fn stop_work(&self) {
        self.work.store(true, Ordering::SeqCst);
        self.cancel();
    }

    /// Whether the call has been cancelled.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.tx.lock().is_none()
    }

    /// Whether the cancel asks the work to stop as well.
    pub(crate) fn stops_work(&self) -> bool {
        self.work.load(Ordering::SeqCst)
    }

    /// Becomes ready (disconnected) when the call is cancelled; use it as one arm of a `select!`.
    pub(crate) fn receiver(&self) -> &Receiver<()> {
        &self.rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_wakes_a_select() {
        let cancel = Cancel::default();
        assert!(cancel.receiver().try_recv().is_err());
        cancel.cancel();
        assert!(matches!(
            cancel.receiver().recv_timeout(std::time::Duration::from_secs(5)),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected)
        ));
    }
}
