//! The wait's decisions from what it reads — which outcome a look finds, which prompt ends a
//! write's wait, where the command stands — tested with plain values, without a PTY.

use super::*;
use serde_json::json;

/// What a look would read of a pane, and the reads it made.
#[derive(Default)]
struct CommandShows {
    ended: Option<Outcome>,
    exited: Option<Gone>,
    matched: Option<Found>,
    asks: Option<Asks>,
    quiet: bool,
    read: Vec<&'static str>,
}

impl CommandReads for CommandShows {
    fn ended(&mut self) -> Option<Outcome> {
        self.read.push("ended");
        self.ended.take()
    }
    fn exited(&mut self) -> Option<Gone> {
        self.read.push("exited");
        self.exited.take()
    }
    fn matched(&mut self) -> Option<Found> {
        self.read.push("matched");
        self.matched.take()
    }
    fn asks(&mut self) -> Option<Asks> {
        self.read.push("asks");
        self.asks.take()
    }
    fn quiet(&mut self) -> bool {
        self.read.push("quiet");
        self.quiet
    }
}

fn prompt(number: u64, status: i32) -> Prompt {
    Prompt { number, exec: number, status, cwd: "/srv".into() }
}

fn found() -> Found {
    Found {
        matched: "READY".into(),
        line: "READY".into(),
        groups: Vec::new(),
        offset: 9,
        screen: false,
    }
}

/// The answer's fields for where the command stands.
fn fields(stand: Stand) -> Value {
    serde_json::to_value(stand).unwrap()
}

#[test]
fn the_prompt_after_the_command_wins_over_the_shell_ending_with_it() {
    let ended = Some(Outcome::Ended { prompt: prompt(4, 3), end: 120 });
    let mut shown =
        CommandShows { ended, exited: Some(Gone(Some(Exit::Code(0)))), ..CommandShows::default() };
    let Some(outcome @ Outcome::Ended { end: 120, .. }) = weigh(&mut shown) else {
        panic!("not the command's end")
    };
    assert_eq!(shown.read, ["ended"], "nothing is read after the outcome");
    assert!(!succeeded(&outcome, true));
    let said = fields(stand(outcome, None, true));
    assert_eq!(said, json!({"status": "failed", "exit_code": 3, "cwd": "/srv"}));
}

#[test]
fn an_exit_seen_ends_the_wait_before_any_question_and_says_whose_exit_it_was() {
    let asks = Some(Asks::Unanswered(Some("read".into())));
    let mut shown =
        CommandShows { exited: Some(Gone(Some(Exit::Code(0)))), asks, ..CommandShows::default() };
    let Some(outcome @ Outcome::Exited(_)) = weigh(&mut shown) else { panic!("not exited") };
    assert_eq!(shown.read, ["ended", "exited"], "no look at /proc for a program that ended");
    // A pane whose process is the command: the command's end, and it succeeded.
    assert!(succeeded(&outcome, false));
    assert_eq!(fields(stand(outcome, None, false)), json!({"status": "ok", "exit_code": 0}));
    // A shell pane: the shell ended, whatever its code.
    let exited = Outcome::Exited(Some(Exit::Code(0)));
    assert!(!succeeded(&exited, true));
    let cwd = Some("/home".to_string());
    let said = fields(stand(exited, cwd, true));
    assert_eq!(said, json!({"status": "exited", "exit_code": 0, "cwd": "/home"}));
    let killed = Outcome::Exited(Some(Exit::Signal(9)));
    assert!(!succeeded(&killed, false));
    let said = fields(stand(killed, None, false));
    assert_eq!(said["status"], "failed");
    assert_eq!(said["signal"], "SIGKILL");
}

#[test]
fn a_question_is_input_but_one_the_responses_answer_lets_the_wait_go_on() {
    let program = Some("apt".to_string());
    let asks = Some(Asks::Unanswered(program.clone()));
    let mut shown = CommandShows { asks, quiet: true, ..CommandShows::default() };
    let Some(Outcome::Input(asking)) = weigh(&mut shown) else { panic!("not input") };
    assert_eq!(asking, program, "a program that asks is input, not quiet");
    let mut answered = CommandShows { asks: Some(Asks::Answered), ..CommandShows::default() };
    assert!(weigh(&mut answered).is_none(), "answered: look again");
    assert_eq!(answered.read, ["ended", "exited", "matched", "asks", "quiet"]);
    let mut answered =
        CommandShows { asks: Some(Asks::Answered), quiet: true, ..CommandShows::default() };
    assert!(matches!(weigh(&mut answered), Some(Outcome::Quiet)), "silent after the answer");
    let said = fields(stand(Outcome::Input(Some("apt".into())), None, true));
    assert_eq!(said, json!({"status": "input", "program": "apt"}));
}

#[test]
fn the_pattern_is_ready_before_a_question_and_the_deadline_leaves_it_running() {
    let asks = Some(Asks::Unanswered(None));
    let mut shown = CommandShows { matched: Some(found()), asks, ..CommandShows::default() };
    let Some(outcome @ Outcome::Ready(_)) = weigh(&mut shown) else { panic!("not ready") };
    let said = fields(stand(outcome, Some("/w".into()), true));
    assert_eq!(
        said,
        json!({"status": "ready", "cwd": "/w", "match": "READY", "line": "READY", "groups": []})
    );
    assert!(weigh(&mut CommandShows::default()).is_none(), "nothing yet: look again");
    let said = fields(stand(Outcome::Running, Some("/w".into()), true));
    assert_eq!(said, json!({"status": "running", "cwd": "/w"}));
}

#[test]
fn a_writes_wait_ends_at_the_first_prompt_printed_after_it() {
    let marks = |p: &Prompt| match p.number {
        1 => Some(50),
        2 => Some(150),
        _ => None,
    };
    let end = || 999;
    // The prompt the input went to (its mark before the write at 100) is not the one after.
    let Some(Outcome::Ended { prompt: after, end: 150 }) =
        prompt_after(vec![prompt(1, 0), prompt(2, 1)], 100, marks, end)
    else {
        panic!("not the second prompt")
    };
    assert_eq!(after.number, 2);
    assert!(prompt_after(vec![prompt(1, 0)], 100, marks, end).is_none(), "wait for the next");
    // A prompt whose mark never came ends the output where it stands.
    let Some(Outcome::Ended { end: 999, .. }) = prompt_after(vec![prompt(3, 0)], 100, marks, end)
    else {
        panic!("not the end of the output")
    };
}
