//! How a running tool call reports progress to its caller (whether it was cancelled is a
//! `crate::cancel::Cancel`).
//!
//! `Progress` forwards `notifications/progress` to the client when it asked for them, and keeps
//! the values increasing as the spec requires.

use crate::waiter::{Reports, Standing};
use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use std::time::{Duration, Instant};

/// How often a waiting call reports progress when the client asked for it (the spec wants at most
/// 2 s between notifications).
const HEARTBEAT: Duration = Duration::from_secs(1);

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

/// A waiting call's progress, told by the waiter that drives it (`Waiter::drive_reporting`).
impl Reports for Progress {
    fn wanted(&self) -> bool {
        self.is_wanted()
    }

    /// Ticks every `HEARTBEAT` while progress is wanted, and never otherwise.
    fn heartbeat(&self) -> Receiver<Instant> {
        if self.is_wanted() {
            crossbeam_channel::tick(HEARTBEAT)
        } else {
            crossbeam_channel::never()
        }
    }

    fn tell(&self, said: &Standing) {
        self.report(said.done, said.total, &said.message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

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
