//! The parallel tool's decisions from what it sees — its arguments, how each command ended, what
//! its progress says — tested without a PTY.

use super::*;
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
    let now = Instant::now();
    let timed_out = Stopped::TimedOut(now);
    assert_eq!(end_of(Some(&timed_out), Some(Exit::Code(0))), CommandEnd::Timeout);
    assert_eq!(end_of(None, Some(Exit::Code(0))), CommandEnd::Ok);
    assert_eq!(end_of(None, Some(Exit::Code(1))), CommandEnd::Failed);
    assert_eq!(end_of(None, Some(Exit::Signal(9))), CommandEnd::Failed);
    assert_eq!(end_of(None, None), CommandEnd::Failed);
}

#[test]
fn progress_names_the_commands_still_running() {
    assert_eq!(progress_message(3, &[], 9.0), "3/3 commands finished");
    let running = progress_message(3, &["build", "lint"], 12.4);
    assert_eq!(running, "1/3 commands finished; running 12s: build, lint");
}
