//! The dialogue figure: a five-question installer answered in one `fugue_exec` with `responses`,
//! against the round trips an agent makes without them (`fugue_exec` → `input`, then
//! `fugue_send_input` with `wait_ms` for each answer), in the same run and the same live bash.
//!
//! Both ways wait out fugue's input detection once per question, so their wall times are close;
//! what `responses` saves is calls (each one a model turn, not measured here) and bytes: the
//! arguments sent plus the structured answers read, which an agent pays for in context.

use crate::client::{Fugue, R};
use crate::clock::ms;
use crate::figures::Bench;
use crate::live::find;
use crate::report::Row;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

pub const DIALOGUE_FIG: &str = "five-question installer: one `fugue_exec` with `responses`";
const DIALOGUE_TARGET: &str = "1 call; bytes ≤ 0.6× round trips'; time ≤ 1.05× theirs";

/// Two questions, one asked twice, and a secret read without echo; the answers land in `result`.
const INSTALLER: &str = r#"printf 'Project name: '; read name
printf 'Install to [/opt/app]: '; read dir
printf 'Add a user? [y/n] '; read u1
printf 'Add a user? [y/n] '; read u2
stty -echo; printf 'Admin password: '; read pw; stty echo; printf '\n'
printf '%s|%s|%s%s|%s\n' "$name" "$dir" "$u1" "$u2" "$pw" > result
echo installed
"#;
const ANSWERS: [&str; 5] = ["demo", "/srv/demo", "y", "n", "s3cret"];
const EXPECTED: &str = "demo|/srv/demo|yn|s3cret\n";

/// One way of answering: its wall time, calls, and bytes sent and read.
struct Way {
    time: Duration,
    calls: usize,
    bytes: usize,
}

pub fn dialogue(b: &Bench) -> R<Vec<Row>> {
    let bash = find("bash").ok_or("bash is not installed")?;
    let dir = std::env::temp_dir().join(format!("fugue-bench-dialogue-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let measured = measure(b, &bash, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    measured
}

fn measure(b: &Bench, bash: &str, dir: &Path) -> R<Vec<Row>> {
    std::fs::write(dir.join("install.sh"), INSTALLER).map_err(|e| e.to_string())?;
    let cwd = dir.to_str().ok_or("temp dir is not UTF-8")?;
    let mut fugue = Fugue::start_with(&b.fugue, &[("FUGUE_SHELL", bash), ("HOME", cwd)])?;
    let pane = fugue.call("fugue_create_session", json!({}))?["pane_id"].clone();
    // The first exec waits for the shell's first prompt; it is not what is measured.
    fugue.call("fugue_exec", json!({"pane_id": pane, "command": "true"}))?;
    let (mut one, mut trips): (Option<Way>, Option<Way>) = (None, None);
    for _ in 0..b.reps(3) {
        let way = in_one_call(&mut fugue, &pane, cwd)?;
        check(dir, "one call")?;
        one = Some(best(one, way));
        let way = round_trips(&mut fugue, &pane, cwd)?;
        check(dir, "round trips")?;
        trips = Some(best(trips, way));
    }
    fugue.close()?;
    let (one, trips) = (one.ok_or("no run")?, trips.ok_or("no run")?);
    // Both wait out the input detection once per question: the time is the same work, give or
    // take the machine's noise.
    let pass =
        one.calls == 1 && one.bytes * 10 <= trips.bytes * 6 && one.time <= trips.time * 105 / 100;
    Ok(vec![
        Row {
            baseline: format!(
                "{} round trips: {:.2} s, {} B",
                trips.calls,
                ms(trips.time) / 1000.0,
                trips.bytes
            ),
            fugue: format!("{} call: {:.2} s, {} B", one.calls, ms(one.time) / 1000.0, one.bytes),
            ratio: format!(
                "{:.2}× time, {:.2}× bytes",
                ms(one.time) / ms(trips.time),
                one.bytes as f64 / trips.bytes as f64
            ),
            ..Row::new(DIALOGUE_FIG, DIALOGUE_TARGET)
        }
        .judge(pass),
    ])
}

fn best(old: Option<Way>, new: Way) -> Way {
    match old {
        Some(old) if old.time <= new.time => old,
        _ => new,
    }
}

/// The installer's answers, as it wrote them; the file is removed for the next run.
fn check(dir: &Path, how: &str) -> R<()> {
    let got = std::fs::read_to_string(dir.join("result")).map_err(|e| format!("{how}: {e}"))?;
    std::fs::remove_file(dir.join("result")).map_err(|e| e.to_string())?;
    if got != EXPECTED {
        return Err(format!("{how}: the installer got {got:?}"));
    }
    Ok(())
}

/// A call, counted: its arguments and its structured answer, in bytes.
fn counted(fugue: &mut Fugue, way: &mut Way, tool: &str, args: Value) -> R<Value> {
    let (answer, took) = fugue.call_timed(tool, args.clone())?;
    way.time += took;
    way.calls += 1;
    way.bytes += args.to_string().len() + answer.to_string().len();
    Ok(answer)
}

fn in_one_call(fugue: &mut Fugue, pane: &Value, cwd: &str) -> R<Way> {
    let mut way = Way { time: Duration::ZERO, calls: 0, bytes: 0 };
    let responses = json!({
        "Project name": ANSWERS[0],
        "Install to": ANSWERS[1],
        "Add a user\\?": [ANSWERS[2], ANSWERS[3]],
        "(?i)password": ANSWERS[4],
    });
    let args = json!({"pane_id": pane, "command": "sh install.sh", "cwd": cwd,
                      "responses": responses, "timeout_ms": 60000});
    let answer = counted(fugue, &mut way, "fugue_exec", args)?;
    if answer["status"] != "ok" {
        return Err(format!("the dialogue in one call: {answer}"));
    }
    Ok(way)
}

fn round_trips(fugue: &mut Fugue, pane: &Value, cwd: &str) -> R<Way> {
    let mut way = Way { time: Duration::ZERO, calls: 0, bytes: 0 };
    let args =
        json!({"pane_id": pane, "command": "sh install.sh", "cwd": cwd, "timeout_ms": 60000});
    let mut answer = counted(fugue, &mut way, "fugue_exec", args)?;
    for text in ANSWERS {
        if answer["status"] != "input" {
            return Err(format!("a round trip before {text:?}: {answer}"));
        }
        let args = json!({"pane_id": pane, "input": text, "submit": true, "wait_ms": 60000});
        answer = counted(fugue, &mut way, "fugue_send_input", args)?;
    }
    if answer["status"] != "ok" {
        return Err(format!("the last round trip: {answer}"));
    }
    Ok(way)
}
