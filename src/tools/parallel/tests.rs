//! The parallel tool's decisions from what it sees — its arguments, how each command ended, what
//! its progress says — tested without a PTY.

use super::job::JobLook;
use super::*;
use crate::pane::exit::Exit;
use crate::tool::args::Args;
use serde_json::{Map, Value, json};

/// The tasks of a call, its arguments read as the tool's table reads them.
fn parse(value: Value) -> Result<Vec<AskedCommand>> {
    let map: Map<String, Value> = value.as_object().unwrap().clone();
    let args = ParallelParams::read(&Args::new(&map))?;
    parse_tasks(args.commands, Path::new("/"), 1 << 20)
}

#[test]
fn commands_are_validated_before_anything_starts() {
    let eleven: Vec<Value> = (0..11).map(|_| json!({"command": "true"})).collect();
    for (bad, needle) in [
        (json!({"commands": []}), "1 to 10"),
        (json!({"commands": eleven}), "1 to 10"),
        (json!({}), "required"),
        (json!({"commands": [{"cwd": "/"}]}), "'commands[0].command' is required"),
        (json!({"commands": [{"command": "  "}]}), "blank"),
        (
            json!({"commands": [{"command": "true", "dir": "/"}]}),
            "unknown argument 'commands[0].dir'",
        ),
        (json!({"commands": [{"command": "true", "cwd": "/nonexistent/x"}]}), "nonexistent"),
        (
            json!({"commands": [{"command": "a", "name": "x"}, {"command": "b", "name": "x"}]}),
            "unique",
        ),
        (json!({"commands": ["true"]}), "an object"),
    ] {
        let err = parse(bad.clone()).err().unwrap_or_else(|| panic!("{bad} should fail"));
        assert!(err.message().contains(needle), "{bad}: {}", err.message());
    }
}

#[test]
fn names_default_to_their_position() {
    let tasks = parse(json!({"commands": [{"command": "a"}, {"command": "b", "name": "B"}]}));
    let names: Vec<String> = tasks.unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["task-1", "B"]);
}

#[test]
fn a_command_ends_as_it_was_stopped_or_as_its_exit_says() {
    let at = Instant::now();
    let timed_out = JobPhase::TimedOut(at);
    assert_eq!(timed_out.end(Some(Exit::Code(0))), CommandEnd::Timeout);
    assert_eq!(timed_out.stopped_at(), Some(at), "its duration ends when it was killed");
    assert_eq!(JobPhase::Ended.end(Some(Exit::Code(0))), CommandEnd::Ok);
    assert_eq!(JobPhase::Ended.end(Some(Exit::Code(1))), CommandEnd::Failed);
    assert_eq!(JobPhase::Ended.end(Some(Exit::Signal(9))), CommandEnd::Failed);
    assert_eq!(JobPhase::Ended.end(None), CommandEnd::Failed);
    assert_eq!(asked().end(Some(Exit::Code(0))), CommandEnd::Input);
    assert!(asked().stopped_at().is_some_and(|at| at <= Instant::now()));
    assert_eq!(JobPhase::Ended.stopped_at(), None, "its duration ends at its exit");
}

/// A command stopped at its question.
fn asked() -> JobPhase {
    JobPhase::Asked(Asked {
        at: Instant::now(),
        end: 0,
        screen: None,
        program: Some("read".into()),
    })
}

#[test]
fn a_running_command_moves_as_its_look_says_and_a_finished_one_stays() {
    for stop_asking in [true, false] {
        assert_eq!(JobPhase::Running.next(JobLook::Runs, stop_asking), JobMove::Wait);
        assert_eq!(JobPhase::Running.next(JobLook::Exited, stop_asking), JobMove::End);
        assert_eq!(JobPhase::Running.next(JobLook::Answered, stop_asking), JobMove::Rewatch);
    }
    assert_eq!(JobPhase::Running.next(JobLook::Asks, true), JobMove::Stop, "on_input: stop");
    assert_eq!(JobPhase::Running.next(JobLook::Asks, false), JobMove::Leave, "on_input: wait");
    let timed_out = JobPhase::TimedOut(Instant::now());
    for over in [JobPhase::Ended, timed_out, asked()] {
        for saw in [JobLook::Runs, JobLook::Exited, JobLook::Answered, JobLook::Asks] {
            assert_eq!(over.next(saw, true), JobMove::Wait, "{saw:?}");
        }
    }
}

#[test]
fn the_run_is_partial_when_the_deadline_left_some_commands_ended_on_their_own() {
    let (ended, timed_out) = (JobPhase::Ended, JobPhase::TimedOut(Instant::now()));
    let asked = asked();
    assert_eq!(run_status(true, &[Some(&ended), Some(&ended)]), RunStatus::Completed);
    assert_eq!(run_status(true, &[Some(&ended), None]), RunStatus::Completed, "a refused one");
    assert_eq!(run_status(true, &[Some(&ended), Some(&asked)]), RunStatus::Input);
    assert_eq!(run_status(false, &[Some(&timed_out), Some(&timed_out)]), RunStatus::Timeout);
    assert_eq!(run_status(false, &[Some(&ended), Some(&timed_out)]), RunStatus::Partial);
    assert_eq!(run_status(false, &[None, Some(&timed_out)]), RunStatus::Partial);
    assert_eq!(run_status(false, &[Some(&asked), Some(&timed_out)]), RunStatus::Partial);
}

#[test]
fn progress_names_the_commands_still_running() {
    assert_eq!(progress_message(3, &[], 9.0), "3/3 commands finished");
    let running = progress_message(3, &["build", "lint"], 12.4);
    assert_eq!(running, "1/3 commands finished; running 12s: build, lint");
}
