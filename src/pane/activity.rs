//! What a pane is doing: working, or waiting for someone to type.
//!
//! A program "waits for the terminal" when every thread of the terminal's foreground process group
//! sleeps, at least one of them in a read of the pane's terminal (or a poll/select/epoll set that
//! holds it plus only benign descriptors), and none waits on anything else that could wake it: a
//! socket, a pipe read, another terminal, a child still working. A process of the group that works
//! but cannot print to the terminal is left out. The answer comes from one look at /proc per
//! question (`look`), in which a thread caught awake gets a few more looks milliseconds apart
//! before it counts as working; nothing looks in the background. A wait that nothing but a key
//! press can end (no timeout in the call, no thread on a timer but a runtime's own, nothing typed
//! still on its way, and not a live shell at its own prompt) is a question at once; any other only
//! once the pane has been quiet for the quiet period. Waiters
//! apply that rule in `InputWatch`, which spaces its looks (at most twenty a second) and wants two
//! agreeing looks with no output between them. When in doubt the answer is "busy": a false
//! "input" stops real work, a missed one only costs a wait.

use super::Pane;
use crate::log;
use std::fs;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod goruntime;
mod interactive;
mod proc;
mod syscalls;
mod terminal;

pub(crate) use super::seen::Activity;
use super::seen::Probe;
pub(crate) use proc::one_scan;
use proc::{Waiting, group_wait};
use terminal::Terminal;

/// Two looks this far apart, with no output between them, must agree before a waiter says input
/// after a quiet period.
const CONFIRM_GAP: Duration = Duration::from_millis(150);
/// How long a program blocked on the terminal with no timeout must have printed nothing before the
/// first look that may answer at once: its question's last bytes are through fugue's reader.
const FAST_QUIET: Duration = Duration::from_millis(100);
/// The gap between the two agreeing looks that answer at once.
const FAST_GAP: Duration = Duration::from_millis(50);
/// After a look that said busy, the next one waits this long (so at most four looks a second,
/// plus the confirming ones, while a call waits on a quiet busy pane).
const RETRY_GAP: Duration = Duration::from_millis(250);
/// How long a status probe's verdict stands for a pane that printed nothing since: a status
/// listing (`fugue_list_sessions`, `fugue attach`'s view) asked again and again of many idle panes
/// looks at /proc for each at most this often. Waits (`InputWatch`) always look afresh. The pane
/// keeps its last verdict (`Pane::probed`).
const PROBE_REUSE: Duration = Duration::from_millis(250);

/// Busy or Input for a live pane right now, and the program that asks: Input if its foreground is
/// blocked on the terminal with no timeout and printed nothing for `FAST_QUIET`, or waits for the
/// terminal (where the kernel cannot say for how long) and printed nothing for its quiet period
/// (`Pane::quiet`). Never Prompt: shell integration knows when a shell sits at its prompt and says
/// so itself.
pub(crate) fn probe(pane: &Pane) -> (Activity, Option<String>) {
    let quiet_for = pane.output().last_print().elapsed();
    if quiet_for < FAST_QUIET || !pane.is_running() {
        return (Activity::Busy, None);
    }
    let end = pane.output().end();
    let stands = |p: &&Probe| p.end == end && p.at.elapsed() < PROBE_REUSE;
    if let Some(probe) = pane.probed.lock().as_ref().filter(stands) {
        return (probe.activity, probe.program.clone());
    }
    let (activity, program) = match look(pane) {
        Foreground::Asks(asker) => (Activity::Input, asker.program),
        Foreground::Quiet(asker) if quiet_for >= pane.quiet => (Activity::Input, asker.program),
        Foreground::Quiet(_) | Foreground::Busy => (Activity::Busy, None),
    };
    let probe = Probe { at: Instant::now(), end, activity, program: program.clone() };
    *pane.probed.lock() = Some(probe);
    (activity, program)
}

/// What one look at /proc says about the pane's terminal foreground.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Foreground {
    /// It works, waits on something else, or input is on its way to it: no question.
    Busy,
    /// It waits for the terminal, but on a timer or where the kernel cannot say how (a shell at
    /// its own prompt, a password prompt /proc will not show): a question once it has been quiet
    /// for the quiet period.
    Quiet(Asker),
    /// Blocked on the terminal with no timeout, nothing typed still unread: only a key press ends
    /// the wait. A question at once.
    Asks(Asker),
}

/// The process that waits for the terminal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Asker {
    /// Its name (`/proc/PID/comm`).
    pub(crate) program: Option<String>,
    /// It is an interactive shell at its own prompt, or in a builtin fugue cannot tell from it:
    /// no program reads, so no `responses` key may answer it.
    pub(crate) shell_prompt: bool,
}

/// Whether the pane's live shell is its terminal's foreground itself and, as far as its
/// integration knows, at its own prompt: no command it was given runs.
fn shell_at_prompt(pane: &Pane) -> bool {
    pane.above().is_some_and(|above| {
        Terminal::group(pane).is_some_and(|group| u32::try_from(group) == Ok(pane.own_pid()))
            && !above.runs_command(pane.output())
    })
}

/// One look at /proc: does the pane's terminal foreground process group wait for the terminal and
/// nothing else, and for how long? Busy when in doubt.
pub(crate) fn look(pane: &Pane) -> Foreground {
    let Some(terminal) = Terminal::of(pane) else { return Foreground::Busy };
    let (verdict, asker) = group_wait(&terminal, &pane.processes);
    // The bench counts these lines to check that nothing looks while nothing waits.
    log::debug(&format!("activity probe of pane {}: {verdict:?}", pane.id));
    let own = u32::try_from(terminal.group) == Ok(pane.own_pid());
    match verdict {
        Waiting::Terminal { timed } => {
            let asker = asker.map(|pid| who(pane, pid)).unwrap_or_default();
            // A shell with fugue's integration at its own prompt: its prompt record, not the
            // kernel, says when; in a command it was given (its builtin `read`), that asks as a
            // child would.
            let at_prompt =
                own && pane.above().is_some_and(|above| !above.runs_command(pane.output()));
            if !timed && terminal.settled && !at_prompt {
                Foreground::Asks(asker)
            } else {
                Foreground::Quiet(asker)
            }
        }
        // /proc would not say what the threads wait in: a cooked terminal without echo is a
        // password prompt, anything else stays busy.
        Waiting::Denied if terminal.secret_prompt => Foreground::Quiet(
            u32::try_from(terminal.group).map(|pid| who(pane, pid)).unwrap_or_default(),
        ),
        Waiting::Denied | Waiting::Busy | Waiting::Neutral | Waiting::Timer => Foreground::Busy,
    }
}

/// Process `pid` of `pane`'s foreground, which waits for the terminal, as an `Asker`.
fn who(pane: &Pane, pid: u32) -> Asker {
    let program =
        fs::read_to_string(format!("/proc/{pid}/comm")).ok().map(|c| c.trim_end().to_string());
    Asker { program, shell_prompt: interactive::at_prompt(pane, pid) }
}

/// The rule for one waiting call: the waiter blocks on the pane's events with the deadline
/// `next_check`, and calls `check` on every wake. A program blocked on the terminal with no
/// timeout asks once it has printed nothing for `FAST_QUIET` and two looks `FAST_GAP` apart
/// agree; one the kernel cannot vouch for asks once it has been quiet for the quiet period and two
/// looks `CONFIRM_GAP` apart agree. Output between two looks voids the first.
pub(crate) struct InputWatch {
    pane: Arc<Pane>,
    quiet: Duration,
    /// The output end at the last check: a change means the pane printed.
    seen_end: u64,
    /// The earliest time of the next look at /proc.
    next_probe: Instant,
    /// The first of two agreeing looks, with no output since: whether it vouched for a question
    /// at once.
    first_yes: Option<Yes>,
    /// When input was last typed: it may still sit unread while the program's last print is long
    /// past, so the quiet period of a look that cannot vouch counts from then too.
    typed: Option<Instant>,
    /// The process the confirming looks found waiting.
    asker: Asker,
}

/// What a look that found the program waiting said.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Yes {
    /// Blocked on the terminal with no timeout.
    AtOnce,
    /// Waiting for the terminal; a question only after the quiet period.
    AfterQuiet,
}

impl InputWatch {
    /// Watches `pane`, with its quiet period (`Pane::quiet`).
    pub(crate) fn new(pane: &Arc<Pane>) -> Self {
        InputWatch {
            pane: pane.clone(),
            quiet: pane.quiet,
            seen_end: pane.output().end(),
            next_probe: Instant::now(),
            first_yes: None,
            typed: None,
            asker: Asker::default(),
        }
    }

    /// Says that input was typed into the pane at `at`.
    pub(crate) fn typed_at(&mut self, at: Instant) {
        self.typed = Some(self.typed.map_or(at, |t| t.max(at)));
    }

    /// The name of the program found asking, once `check` said so.
    pub(crate) fn program(&self) -> Option<String> {
        self.asker.program.clone()
    }

    /// Whether what was found asking is a program that reads, which a `responses` key may
    /// answer: not an interactive shell at its own prompt (`Asker::shell_prompt`).
    pub(crate) fn answerable(&self) -> bool {
        !self.asker.shell_prompt
    }

    /// When the waiter should wake next to call `check`; None when there is nothing to watch
    /// (the pane's process ended).
    pub(crate) fn next_check(&self) -> Option<Instant> {
        self.pane.is_running().then(|| self.due())
    }

    /// Where the quiet period of a look that cannot vouch counts from.
    fn quiet_from(&self) -> Instant {
        let last_print = self.pane.output().last_print();
        self.typed.map_or(last_print, |t| t.max(last_print))
    }

    /// The earliest moment of the next look. The first of two agreeing looks after a quiet period
    /// comes `CONFIRM_GAP` before it ends and the second as it ends, so such a question is answered
    /// at the end of the quiet period, not a gap after it.
    fn due(&self) -> Instant {
        let fast = self.pane.output().last_print() + FAST_QUIET;
        let slow = self.quiet_from() + self.quiet;
        let at = match self.first_yes {
            None => fast.min(self.quiet_from() + self.quiet.saturating_sub(CONFIRM_GAP)),
            Some(Yes::AtOnce) => fast,
            Some(Yes::AfterQuiet) => slow,
        };
        at.max(self.next_probe)
    }

    /// True once two looks with no output between them say the program asks: at once if the
    /// kernel vouches for it, else after the quiet period.
    pub(crate) fn check(&mut self) -> bool {
        self.saw_output();
        if !self.pane.is_running() || Instant::now() < self.due() {
            return false;
        }
        if Instant::now() < self.quiet_from() + self.quiet.saturating_sub(CONFIRM_GAP)
            && shell_at_prompt(&self.pane)
        {
            // Only its prompt record or the quiet period tells a shell's prompt from its `read`:
            // a look at /proc now could not answer, and would hold up the wait for the record.
            self.first_yes = None;
            self.next_probe = Instant::now() + RETRY_GAP;
            return false;
        }
        let look = look(&self.pane);
        let now = Instant::now();
        let (yes, asker) = match look {
            Foreground::Asks(asker) => (Some(Yes::AtOnce), asker),
            Foreground::Quiet(asker) => (Some(Yes::AfterQuiet), asker),
            Foreground::Busy => (None, Asker::default()),
        };
        // Every look spaces the next one, whatever follows.
        self.next_probe = now
            + match yes {
                Some(Yes::AtOnce) => FAST_GAP,
                Some(Yes::AfterQuiet) => CONFIRM_GAP,
                None => RETRY_GAP,
            };
        if self.saw_output() || yes.is_none() {
            self.first_yes = None;
            return false;
        }
        if yes == Some(Yes::AfterQuiet)
            && now < self.quiet_from() + self.quiet.saturating_sub(CONFIRM_GAP)
        {
            // Not quiet long enough for a look that cannot vouch; its timer may end in a wait
            // without one (vim's after 4 s), so look again as at a busy pane.
            self.first_yes = None;
            self.next_probe = now + RETRY_GAP;
            return false;
        }
        self.asker = asker;
        match (self.first_yes, yes) {
            (Some(Yes::AtOnce), Some(Yes::AtOnce)) => true,
            (Some(Yes::AfterQuiet), Some(_)) => now >= self.quiet_from() + self.quiet,
            (_, yes) => {
                self.first_yes = yes;
                false
            }
        }
    }

    /// Whether the pane printed since the last look; output voids a first "yes".
    fn saw_output(&mut self) -> bool {
        let end = self.pane.output().end();
        if end == self.seen_end {
            return false;
        }
        self.seen_end = end;
        self.first_yes = None;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activity_serializes_as_a_word() {
        let words: Vec<String> = [Activity::Prompt, Activity::Busy, Activity::Input]
            .iter()
            .map(|a| serde_json::to_string(a).unwrap())
            .collect();
        assert_eq!(words, ["\"prompt\"", "\"busy\"", "\"input\""]);
    }
}
