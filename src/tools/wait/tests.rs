//! `fugue_wait`'s decisions from what it reads — which outcome a pane has, where an ended
//! command's output ends, when the wait has its answer, what its progress says — tested with
//! plain values, without a PTY.

use super::*;

/// What a look would read of a pane, and the reads it made.
#[derive(Default)]
struct PaneShows {
    matched: Option<Found>,
    exited: bool,
    ended: Option<Fired>,
    /// The program that asks, if one does.
    asks: Option<String>,
    asked: bool,
    quiet: bool,
    read: Vec<&'static str>,
}

impl PaneReads for PaneShows {
    fn matched(&mut self) -> Option<Found> {
        self.read.push("matched");
        self.matched.take()
    }
    fn exited(&mut self) -> bool {
        self.read.push("exited");
        self.exited
    }
    fn ended(&mut self) -> Option<Fired> {
        self.read.push("ended");
        self.ended.take()
    }
    fn asks(&mut self) -> bool {
        self.read.push("asks");
        self.asked
    }
    fn program(&self) -> Option<String> {
        self.asks.clone()
    }
    fn quiet(&mut self) -> bool {
        self.read.push("quiet");
        self.quiet
    }
}

fn found() -> Found {
    let line = "listening on :8080".to_string();
    Found { matched: "listening".into(), line, groups: Vec::new(), offset: 40, screen: false }
}

fn ended(status: i32) -> Option<Fired> {
    Some(Fired::Ended { status, cwd: "/srv".into(), end: 70 })
}

#[test]
fn a_match_printed_before_the_pane_ended_is_the_outcome() {
    let mut shown = PaneShows { matched: Some(found()), exited: true, ..PaneShows::default() };
    let Some(Fired::Matched(found)) = weigh(&mut shown) else { panic!("not matched") };
    assert_eq!(found.line, "listening on :8080");
    assert_eq!(shown.read, ["matched"], "nothing is read after the outcome");
}

#[test]
fn an_exit_seen_comes_before_the_command_end_and_a_question() {
    let mut shown =
        PaneShows { exited: true, ended: ended(0), asked: true, ..PaneShows::default() };
    assert!(matches!(weigh(&mut shown), Some(Fired::Exited)));
    assert_eq!(shown.read, ["matched", "exited"], "no look at /proc for a pane that ended");
    let mut shown = PaneShows { ended: ended(2), asked: true, ..PaneShows::default() };
    let Some(Fired::Ended { status: 2, end: 70, .. }) = weigh(&mut shown) else {
        panic!("not the command's end")
    };
}

#[test]
fn a_program_that_asks_is_input_and_not_quiet() {
    let asks = Some("sudo".to_string());
    let mut shown = PaneShows { asks, asked: true, quiet: true, ..PaneShows::default() };
    let Some(Fired::Input(program)) = weigh(&mut shown) else { panic!("not input") };
    assert_eq!(program.as_deref(), Some("sudo"));
    let mut shown = PaneShows { quiet: true, ..PaneShows::default() };
    assert!(matches!(weigh(&mut shown), Some(Fired::Quiet)));
    let mut shown = PaneShows::default();
    assert!(weigh(&mut shown).is_none(), "nothing yet: wait on");
    assert_eq!(shown.read, ["matched", "exited", "ended", "asks", "quiet"]);
}

#[test]
fn an_ended_commands_output_waits_for_its_mark_until_the_catch_up_is_over() {
    let end = || 500;
    assert_eq!(output_end(Some(320), false, end), Some(320), "the mark is in: it ends there");
    assert_eq!(output_end(Some(320), true, end), Some(320));
    assert_eq!(output_end(None, false, end), None, "the mark may be on its way: look again");
    assert_eq!(output_end(None, true, end), Some(500), "given up: the output's end");
}

#[test]
fn any_ends_at_the_first_outcome_and_all_at_the_last() {
    assert!(!enough(0, 3, false));
    assert!(enough(1, 3, false));
    assert!(!enough(2, 3, true));
    assert!(enough(3, 3, true));
}

#[test]
fn progress_names_the_panes_still_waited_on() {
    let running = [("0a1b2c3d", Some("make test")), ("99887766", None)];
    assert_eq!(waiting_on(&running), "waiting on 0a1b2c3d (make test), 99887766");
}
