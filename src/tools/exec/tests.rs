//! `fugue_exec`'s look before it types: where the shell stands, from plain values, without a
//! PTY.

use super::*;

/// A shell as a look reads it: started, idle at its drawn prompt, unless changed.
struct ShellSeen {
    running: bool,
    pending: Option<&'static str>,
    prompted: bool,
    idle: bool,
    drawn: bool,
}

const READY: ShellSeen =
    ShellSeen { running: true, pending: None, prompted: true, idle: true, drawn: true };

impl ShellReads for ShellSeen {
    fn running(&self) -> bool {
        self.running
    }
    fn pending(&self) -> Option<String> {
        self.pending.map(str::to_string)
    }
    fn prompted(&self) -> bool {
        self.prompted
    }
    fn idle(&self) -> bool {
        self.idle
    }
    fn drawn(&self) -> bool {
        self.drawn
    }
}

fn look(shell: &ShellSeen) -> Before {
    before(shell, &mut None, Instant::now())
}

#[test]
fn a_shell_that_ended_or_runs_something_is_no_place_to_type() {
    let ended = ShellSeen { running: false, pending: Some("make"), ..READY };
    assert_eq!(look(&ended), Before::Exited, "its end says more than what it ran");
    let exec = ShellSeen { pending: Some("make"), idle: false, ..READY };
    assert_eq!(look(&exec), Before::Pending("make".into()));
    assert_eq!(look(&ShellSeen { idle: false, ..READY }), Before::Busy);
    assert_eq!(look(&READY), Before::Ready);
}

#[test]
fn a_starting_shell_is_waited_for_and_so_is_its_prompt_until_drawn_by() {
    assert_eq!(look(&ShellSeen { prompted: false, idle: false, ..READY }), Before::Starting);
    let drawing = ShellSeen { drawn: false, ..READY };
    let (mut drawn_by, t0) = (None, Instant::now());
    assert_eq!(before(&drawing, &mut drawn_by, t0), Before::Drawing);
    assert_eq!(drawn_by, Some(t0 + PROMPT_DRAWN_WAIT), "set at the first idle look");
    let later = t0 + PROMPT_DRAWN_WAIT / 2;
    assert_eq!(before(&drawing, &mut drawn_by, later), Before::Drawing, "not moved by a look");
    assert_eq!(before(&READY, &mut drawn_by, later), Before::Ready, "the mark came");
    let past = t0 + PROMPT_DRAWN_WAIT;
    assert_eq!(before(&drawing, &mut drawn_by, past), Before::Ready, "a theme that drops it");
}
