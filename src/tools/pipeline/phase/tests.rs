//! Every decision of a pipeline's look, from its phase and what it saw: no shell, no PTY.

use super::*;
use crate::tools::answer::CommandEnd;
use std::time::Duration;

/// A look at `now` that saw the pane running, no step running, `typed_any` steps typed, the
/// shell prompted, and the prompt's mark `drawn` or not.
fn saw(now: Instant, typed_any: bool, drawn: bool) -> Saw<impl FnOnce() -> bool> {
    Saw {
        now,
        pane_running: true,
        step_running: false,
        typed_any,
        prompted: true,
        drawn: move || drawn,
    }
}

/// Interrupted at the deadline, with the output's end then at 7.
fn stop() -> Stop {
    Stop { at: Instant::now(), end: 7, asked: None }
}

#[test]
fn the_first_step_is_typed_before_the_shell_prompts() {
    let mut phase = Phase::Starting;
    let look = Saw { prompted: false, ..saw(Instant::now(), false, false) };
    assert_eq!(phase.next(look), Act::Type);
    let look = Saw { prompted: false, step_running: true, ..saw(Instant::now(), true, false) };
    assert_eq!(phase.next(look), Act::Wait);
}

#[test]
fn the_first_prompt_begins_the_first_steps_time_once() {
    let mut phase = Phase::Starting;
    assert!(phase.prompted());
    assert!(matches!(phase, Phase::Typing { draw_by: None }));
    assert!(!phase.prompted());
}

#[test]
fn a_running_step_is_waited_for_in_every_phase() {
    for mut phase in [Phase::Starting, Phase::Typing { draw_by: None }, Phase::Done] {
        let look = Saw { step_running: true, ..saw(Instant::now(), true, true) };
        assert_eq!(phase.next(look), Act::Wait);
    }
}

#[test]
fn the_next_step_waits_for_the_prompts_mark() {
    let now = Instant::now();
    let mut phase = Phase::Typing { draw_by: None };
    assert_eq!(phase.next(saw(now, true, false)), Act::Wait);
    assert_eq!(phase.drawing_by(), Some(now + PROMPT_DRAWN_WAIT));
    // The time it types by is set once, at the first look after the record.
    assert_eq!(phase.next(saw(now + Duration::from_millis(1), true, false)), Act::Wait);
    assert_eq!(phase.drawing_by(), Some(now + PROMPT_DRAWN_WAIT));
    assert_eq!(phase.next(saw(now, true, true)), Act::Type);
    phase.typed();
    assert_eq!(phase.drawing_by(), None);
}

#[test]
fn a_prompt_that_lost_its_mark_is_waited_for_a_while_only() {
    let now = Instant::now();
    let mut phase = Phase::Typing { draw_by: None };
    assert_eq!(phase.next(saw(now, true, false)), Act::Wait);
    assert_eq!(phase.next(saw(now + PROMPT_DRAWN_WAIT, true, false)), Act::Type);
}

#[test]
fn no_prompt_reported_no_next_step() {
    let mut phase = Phase::Typing { draw_by: None };
    let look = Saw { prompted: false, ..saw(Instant::now(), true, true) };
    assert_eq!(phase.next(look), Act::Wait);
    assert_eq!(phase.drawing_by(), None);
}

#[test]
fn the_last_record_ends_the_run_and_an_earlier_one_does_not() {
    let mut phase = Phase::Typing { draw_by: None };
    phase.step_ended(false);
    assert!(matches!(phase, Phase::Typing { draw_by: None }));
    phase.step_ended(true);
    assert_eq!(phase.next(saw(Instant::now(), true, true)), Act::Over);
}

#[test]
fn an_interrupted_run_stays_interrupted_when_its_step_comes_back() {
    let mut phase = Phase::Typing { draw_by: None };
    phase.stop(stop());
    phase.step_ended(false);
    assert_eq!(phase.stopped().map(|s| s.end), Some(7));
    assert_eq!(phase.next(saw(Instant::now(), true, true)), Act::Over);
}

#[test]
fn the_shell_ending_ends_the_run_and_keeps_its_interrupt() {
    let mut phase = Phase::Stopped(stop());
    let look = Saw { pane_running: false, ..saw(Instant::now(), true, true) };
    assert_eq!(phase.next(look), Act::End);
    phase.end(Some(Exit::Code(3)));
    assert_eq!(phase.shell_exit(), Some(Exit::Code(3)));
    assert_eq!(phase.stopped().map(|s| s.end), Some(7));
    assert_eq!(phase.next(saw(Instant::now(), true, true)), Act::Over);
}

#[test]
fn a_shell_not_reaped_in_time_has_no_exit() {
    let mut phase = Phase::Typing { draw_by: Some(Instant::now()) };
    phase.end(None);
    assert_eq!(phase.shell_exit(), None);
    assert!(phase.stopped().is_none());
    assert_eq!(phase.drawing_by(), None);
}

#[test]
fn a_deadline_after_the_end_records_the_interrupt() {
    let mut phase = Phase::Ended { exit: Some(Exit::Code(0)), stopped: None };
    phase.stop(stop());
    assert!(phase.stopped().is_some());
    assert_eq!(phase.shell_exit(), Some(Exit::Code(0)));
}

#[test]
fn a_step_ends_as_its_status_says_unless_an_interrupt_came_first() {
    let at = Instant::now();
    let later = at + Duration::from_secs(1);
    assert_eq!(step_end(Some((at, 0)), None, false), CommandEnd::Ok);
    assert_eq!(step_end(Some((at, 2)), None, true), CommandEnd::Failed);
    // Ended before the interrupt: its own status stands.
    assert_eq!(step_end(Some((at, 0)), Some((later, CommandEnd::Timeout)), false), CommandEnd::Ok);
    // Ended at or after it: the interrupt's.
    assert_eq!(step_end(Some((later, 0)), Some((at, CommandEnd::Input)), false), CommandEnd::Input);
    assert_eq!(step_end(None, Some((at, CommandEnd::Timeout)), true), CommandEnd::Timeout);
}

#[test]
fn a_step_that_never_ended_exited_with_the_shell_or_timed_out() {
    assert_eq!(step_end(None, None, true), CommandEnd::Exited);
    assert_eq!(step_end(None, None, false), CommandEnd::Timeout);
}

#[test]
fn an_interrupt_at_the_deadline_times_the_step_out() {
    assert_eq!(stop().says().1, CommandEnd::Timeout);
}

#[test]
fn progress_tells_the_running_step_or_the_last_ended() {
    assert_eq!(progress_message(0, 3, Latest::None), "0/3 steps done");
    let running = Latest::Running { n: 2, name: "build", secs: 4.4 };
    assert_eq!(progress_message(1, 3, running), "step 2/3 build running 4s");
    let ended = Latest::Ended { name: "test", rc: 1 };
    assert_eq!(progress_message(2, 3, ended), "2/3 steps done; test exit 1");
}
