//! What a running tool call can see of its caller: whether it was cancelled, and how to report
//! progress.
//!
//! `Cancel` is a channel that disconnects when the call is cancelled, so a tool that
//! blocks in `select!` wakes at once instead of noticing on its next timeout. `Progress` forwards
//! `notifications/progress` to the client when it asked for them, and keeps the values increasing
//! as the spec requires.

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often a waiting call reports progress when the client asked for it (the spec wants at most
/// 2 s between notifications).
const HEARTBEAT: Duration = Duration::from_secs(1);

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

type Sink = Box<dyn Fn(f64, Option<f64>, &str) + Send + Sync>;

/// Progress reporting for one call; a no-op when the client gave no `progressToken`.
pub(crate) struct Progress {
    sink: Option<Sink>,
    last: Mutex<f64>,
}

impl Progress {
    pub(crate) fn none() -> Progress {
        Progress { sink: None, last: Mutex::new(f64::NEG_INFINITY) }
    }

    pub(crate) fn new(sink: Sink) -> Progress {
        Progress { sink: Some(sink), last: Mutex::new(f64::NEG_INFINITY) }
    }

    pub(crate) fn is_wanted(&self) -> bool {
        self.sink.is_some()
    }

    /// Ticks every `HEARTBEAT` while progress is wanted, and never otherwise: the arm of a waiting
    /// call's `select!` that reports how long it has waited.
    pub(crate) fn heartbeat(&self) -> Receiver<Instant> {
        if self.is_wanted() {
            crossbeam_channel::tick(HEARTBEAT)
        } else {
            crossbeam_channel::never()
        }
    }

    /// Reports `progress` of `total`. A value that does not increase is nudged up a little, since
    /// the spec demands strictly increasing progress and a heartbeat may repeat a count.
    pub(crate) fn report(&self, progress: f64, total: Option<f64>, message: &str) {
        let Some(sink) = &self.sink else { return };
        let value = {
            let mut last = self.last.lock();
            let value = if progress > *last { progress } else { *last + 0.001 };
            *last = value;
            value
        };
        sink(value, total, message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

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

    #[test]
    fn progress_strictly_increases() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink_seen = seen.clone();
        let progress = Progress::new(Box::new(move |p, _, _| sink_seen.lock().push(p)));
        progress.report(1.0, Some(3.0), "a");
        progress.report(1.0, Some(3.0), "b");
        progress.report(2.0, Some(3.0), "c");
        let seen = seen.lock();
        assert!(seen.windows(2).all(|w| w[1] > w[0]), "{seen:?}");
    }
}
