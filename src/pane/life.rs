//! How far a pane's life has gone, as one value: what its process and its terminal have done.
//!
//! The process's exit and the terminal's end of file come in either order (a child can hold the
//! terminal past the exit; the reader can see the end before the exit is reaped), and fugue may
//! close the pane at any time. `Life` holds each combination once, with the exit and the time it
//! was seen together, so no pane can have an exit without its time; its transitions are pure and
//! unit-tested below. `output.rs` keeps it under the output's lock.

use super::exit::Exit;
use std::time::Instant;

/// The process's exit, and when fugue saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Exited {
    pub(crate) exit: Exit,
    pub(crate) at: Instant,
}

/// How far a pane's life has gone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Life {
    /// The process runs and its terminal is open.
    #[default]
    Running,
    /// The terminal reached end of file; the process has not been reaped yet.
    Drained,
    /// The process exited; its terminal is open (a child may hold it).
    Exited(Exited),
    /// The process exited and its terminal reached end of file: nothing more will come.
    Ended(Exited),
    /// fugue is closing or has closed the pane: waiters stop. The exit, if it was seen, is kept.
    Closed(Option<Exited>),
}

impl Life {
    /// The terminal reached end of file.
    pub(crate) fn drained(self) -> Life {
        match self {
            Life::Running => Life::Drained,
            Life::Exited(exited) => Life::Ended(exited),
            other => other,
        }
    }

    /// The process exited with `exit`, seen at `at`.
    pub(crate) fn exited(self, exit: Exit, at: Instant) -> Life {
        let exited = Exited { exit, at };
        match self {
            Life::Running | Life::Exited(_) => Life::Exited(exited),
            Life::Drained | Life::Ended(_) => Life::Ended(exited),
            Life::Closed(_) => Life::Closed(Some(exited)),
        }
    }

    /// fugue closes the pane.
    pub(crate) fn closed(self) -> Life {
        Life::Closed(self.exit_seen())
    }

    /// The exit and when it was seen, if the process has exited.
    pub(crate) fn exit_seen(self) -> Option<Exited> {
        match self {
            Life::Exited(exited) | Life::Ended(exited) | Life::Closed(Some(exited)) => Some(exited),
            Life::Running | Life::Drained | Life::Closed(None) => None,
        }
    }

    pub(crate) fn exit(self) -> Option<Exit> {
        self.exit_seen().map(|e| e.exit)
    }

    pub(crate) fn exited_at(self) -> Option<Instant> {
        self.exit_seen().map(|e| e.at)
    }

    pub(crate) fn is_closed(self) -> bool {
        matches!(self, Life::Closed(_))
    }

    /// No more output will come: the terminal reached end of file, or the pane is closed.
    pub(crate) fn is_over(self) -> bool {
        matches!(self, Life::Drained | Life::Ended(_) | Life::Closed(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_exit_and_the_end_of_file_end_a_pane_in_either_order() {
        let at = Instant::now();
        let first = Life::Running.exited(Exit::Code(3), at);
        assert!(!first.is_over(), "a child may still print");
        assert_eq!(first.drained(), Life::Ended(Exited { exit: Exit::Code(3), at }));
        let first = Life::Running.drained();
        assert!(first.is_over());
        assert_eq!((first.exit(), first.exited_at()), (None, None));
        assert_eq!(
            first.exited(Exit::Code(3), at),
            Life::Ended(Exited { exit: Exit::Code(3), at })
        );
    }

    #[test]
    fn a_close_keeps_the_exit_and_takes_one_after_it() {
        let at = Instant::now();
        let closed = Life::Running.closed();
        assert!(closed.is_closed() && closed.is_over());
        assert_eq!(closed.exit(), None);
        let killed = closed.exited(Exit::Signal(9), at).drained();
        assert_eq!(killed, Life::Closed(Some(Exited { exit: Exit::Signal(9), at })));
        let kept = Life::Running.exited(Exit::Code(0), at).closed();
        assert_eq!((kept.exit(), kept.exited_at()), (Some(Exit::Code(0)), Some(at)));
    }

    #[test]
    fn a_later_exit_replaces_an_earlier_one_with_its_time() {
        let (at, later) = (Instant::now(), Instant::now() + Duration::from_secs(1));
        let life = Life::Running.exited(Exit::Code(1), at).exited(Exit::Code(2), later);
        assert_eq!((life.exit(), life.exited_at()), (Some(Exit::Code(2)), Some(later)));
        assert!(!Life::Running.is_over() && !Life::Running.is_closed());
    }
}
