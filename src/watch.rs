//! `Watch`: the one way fugue announces a change — a pane's output, the mux's panes, a live shell's
//! prompt, an agent pipeline's state — to whoever blocks on it in `select!`.
//!
//! A leaf: panes, live shells, the mux and the agent pipelines all announce with it, so it lives
//! below all of them.

use crossbeam_channel::{Receiver, Sender, TrySendError};
use parking_lot::Mutex;

/// Wakes subscribers when something changes. Each subscriber has a one-slot channel, so a
/// burst of output costs a subscriber one wake-up, not one per read.
#[derive(Default)]
pub(crate) struct Watch {
    subscribers: Mutex<Vec<Sender<()>>>,
}

impl Watch {
    pub(crate) fn subscribe(&self) -> Receiver<()> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.subscribers.lock().push(tx);
        rx
    }

    pub(crate) fn notify(&self) {
        let mut subscribers = self.subscribers.lock();
        if !subscribers.is_empty() {
            subscribers.retain(|tx| !matches!(tx.try_send(()), Err(TrySendError::Disconnected(_))));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_coalesces_and_forgets_dropped_subscribers() {
        let watch = Watch::default();
        let rx = watch.subscribe();
        drop(watch.subscribe());
        watch.notify();
        watch.notify();
        assert_eq!(rx.try_iter().count(), 1);
        assert_eq!(watch.subscribers.lock().len(), 1);
    }
}
