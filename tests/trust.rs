//! Answers an agent can trust (issue 33): a search of a pane that answers only the lines it
//! matches; cuts that say what they cut (`omitted: {lines, since, matter}` and a note in each
//! gap); runs of lines of one shape folded; the budget a ceiling, not a target; a dialogue
//! answered by order. Each through the real binary and real shells, the bytes counted as a client
//! receives them.

use crate::util::*;
use serde_json::{Value, json};

/// The size of an answer as a client receives its structured content.
fn size(answer: &Value) -> usize {
    answer.to_string().len()
}

/// A 30 KB log with one warning in the middle, printed by a pane that ends.
fn log_pane(f: &mut Fugue) -> String {
    let script = "i=0; while [ $i -lt 600 ]; do \
                  [ $i = 300 ] && echo 'WARNING: disk /var nearly full (97%)'; \
                  echo \"GET /api/items/$i 200 OK in 12 ms from 10.0.0.$((i % 250))\"; \
                  i=$((i+1)); done";
    let pane = f.pane(script);
    f.wait_exit(&pane);
    pane
}

#[test]
fn a_search_answers_the_matching_line_with_its_context_and_offset() {
    let mut f = Fugue::start();
    let pane = log_pane(&mut f);
    let whole = f.call(
        "fugue_get_output",
        json!({"pane_id": pane, "since": 0, "lines": 5000,
                                                   "max_bytes": 1 << 20}),
    );
    assert!(size(&whole) > 30_000, "the log is {} bytes", size(&whole));
    let found = f.call("fugue_get_output", json!({"pane_id": pane, "pattern": "(?i)warn"}));
    eprintln!("search: {} bytes: {found}", size(&found));
    assert!(size(&found) <= 300, "{} bytes: {found}", size(&found));
    assert_eq!(found["matches"], 1, "{found}");
    assert_eq!(
        found["output"],
        "GET /api/items/299 200 OK in 12 ms from 10.0.0.49\n\
         WARNING: disk /var nearly full (97%)\n\
         GET /api/items/300 200 OK in 12 ms from 10.0.0.50",
        "{found}"
    );
    // The group's offset reads from its first line on.
    let at = f.call(
        "fugue_get_output",
        json!({"pane_id": pane, "since": found["groups"][0],
                                                "lines": 1}),
    );
    assert_eq!(at["output"], "GET /api/items/299 200 OK in 12 ms from 10.0.0.49", "{at}");
    // No context, a range that holds no warning, and a bad pattern.
    let bare =
        f.call("fugue_get_output", json!({"pane_id": pane, "pattern": "WARN", "context": 0}));
    assert_eq!(bare["output"], "WARNING: disk /var nearly full (97%)", "{bare}");
    let before = f.call(
        "fugue_get_output",
        json!({"pane_id": pane, "pattern": "WARN",
                                                    "until": found["groups"][0]}),
    );
    assert_eq!((&before["matches"], &before["output"]), (&json!(0), &json!("")), "{before}");
    let err = f.call_err("fugue_get_output", json!({"pane_id": pane, "pattern": "("}));
    assert_eq!(err["code"], "invalid_regex", "{err}");
    let err =
        f.call_err("fugue_get_output", json!({"pane_id": pane, "pattern": "x", "context": 101}));
    assert_eq!(err["code"], "invalid_argument", "{err}");
    let err = f.call_err("fugue_get_output", json!({"pane_id": pane, "until": 5}));
    assert_eq!(err["code"], "invalid_argument", "until without pattern: {err}");
}

#[test]
fn a_search_with_more_matches_than_fit_says_what_it_left_out() {
    let mut f = Fugue::start();
    let pane = log_pane(&mut f);
    let found = f.call(
        "fugue_get_output",
        json!({"pane_id": pane, "pattern": "items/\\d*7 ",
                                                   "max_bytes": 1000}),
    );
    assert_eq!(found["matches"], 60, "{found}");
    let shown = found["groups"].as_array().unwrap().len();
    assert!(shown < 60 && found["output"].as_str().unwrap().len() <= 1000, "{found}");
    assert_eq!(found["omitted"]["lines"], 60 - shown, "{found}");
    // The search goes on from where the answer stopped.
    let rest = f.call(
        "fugue_get_output",
        json!({"pane_id": pane, "pattern": "items/\\d*7 ",
                                                  "since": found["omitted"]["since"]}),
    );
    assert_eq!(rest["matches"], 60 - shown, "{rest}");
}

#[test]
fn a_cut_says_what_it_cut_and_folds_what_repeats() {
    let dir = Dir::new("answers-cut");
    // 400 progress lines of one shape and one warning among them, then a success.
    let script = dir.write(
        "progress.sh",
        "i=1; while [ $i -le 400 ]; do \
         echo \"bundling module $i/400: src/mod$i.js ($((i * 3)) kB)\"; \
         [ $i = 200 ] && echo 'warning: src/mod200.js is larger than 500 kB'; i=$((i+1)); done\n",
    );
    let mut f = Fugue::start();
    let done = f.call("fugue_exec", json!({"command": format!("sh {}", script.display())}));
    eprintln!("progress: {} bytes: {done}", size(&done));
    assert_eq!(done["status"], "ok", "{done}");
    let output = done["output"].as_str().unwrap();
    assert!(size(&done) <= 800, "{} bytes: {done}", size(&done));
    assert!(output.contains("warning: src/mod200.js is larger than 500 kB"), "{output}");
    assert!(output.ends_with("bundling module 400/400: src/mod400.js (1200 kB)"), "{output}");
    assert!(output.contains("\n[… 198 more like this]\n"), "{output}");
    assert_eq!(done["omitted"]["matter"], 0, "nothing that matters was left out: {done}");
    let shown = output.lines().filter(|l| !l.starts_with("[… ")).count();
    assert_eq!(shown + done["omitted"]["lines"].as_u64().unwrap() as usize, 401, "{done}");
    // What the folds left out is read from `since`.
    let rest = f.call(
        "fugue_get_output",
        json!({"pane_id": done["pane_id"],
                                                  "since": done["omitted"]["since"], "lines": 1}),
    );
    assert_eq!(rest["output"], "bundling module 2/400: src/mod2.js (6 kB)", "{rest}");
    // `raw` is never folded.
    let raw = f.call(
        "fugue_get_output",
        json!({"pane_id": done["pane_id"], "format": "raw",
                                                 "lines": 30}),
    );
    assert!(!raw["output"].as_str().unwrap().contains("more like this"), "{raw}");
}

#[test]
fn a_gap_that_holds_errors_says_so_and_names_the_pattern() {
    let dir = Dir::new("answers-gap");
    // Twenty errors spread through varied noise: a tight budget leaves some out.
    let script = dir.write(
        "errors.sh",
        "i=0; while [ $i -lt 400 ]; do \
         case $((i % 3)) in 0) echo \"compiling unit $i\";; 1) echo \"  linking lib$i\";; \
         *) echo \"ok step $i\";; esac; \
         [ $((i % 20)) = 7 ] && echo \"src/u$i.c:1: error: bad thing $i\"; i=$((i+1)); done; exit 1\n",
    );
    let mut f = Fugue::start();
    let done = f.call(
        "fugue_exec",
        json!({"command": format!("sh {}", script.display()),
                                            "max_bytes": 600}),
    );
    assert_eq!(done["status"], "failed", "{done}");
    let output = done["output"].as_str().unwrap();
    assert!(output.len() <= 600, "{}", output.len());
    let matter = done["omitted"]["matter"].as_u64().unwrap();
    assert!(matter > 0, "errors were left out: {done}");
    let noted: u64 = output
        .lines()
        .filter_map(|l| l.split(", ").nth(1)?.split(" of them error").next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(noted, matter, "the notes count what omitted.matter counts: {output}");
    assert!(output.contains("pattern \"(?i)error\" lists them]"), "{output}");
    let listed = f.call(
        "fugue_get_output",
        json!({"pane_id": done["pane_id"], "context": 0,
                                                    "pattern": "error:", "max_bytes": 4000}),
    );
    assert_eq!(listed["matches"], 20, "{listed}");
}

#[test]
fn a_success_answers_its_end_and_a_failure_what_matters_not_the_beginning() {
    // Varied lines that fold into nothing: 300 of them, 60 bytes each.
    let noise = "i=0; while [ $i -lt 300 ]; do case $((i % 3)) in \
                 0) echo \"copying assets/image-$i.png to build\";; \
                 1) echo \"  generated docs page $i of the manual\";; \
                 *) echo \"checked link $i: https://example.com/$i\";; esac; i=$((i+1)); done";
    let mut f = Fugue::start();
    let ok = f.call("fugue_exec", json!({"command": format!("{noise}; echo all done")}));
    let output = ok["output"].as_str().unwrap();
    eprintln!("success: {} bytes", size(&ok));
    assert!(output.ends_with("all done") && output.lines().count() == 11, "{output}");
    assert!(output.starts_with("[… 291 lines, no errors or warnings]"), "{output}");
    assert!(size(&ok) <= 1000, "{} bytes: {ok}", size(&ok));
    let failed = f.call(
        "fugue_exec",
        json!({
        "command": format!("{noise} | sed '150s/.*/fatal: cannot open assets\\/x.png/'; exit 3")}),
    );
    let output = failed["output"].as_str().unwrap();
    eprintln!("failure: {} bytes", size(&failed));
    assert!(output.contains("fatal: cannot open assets/x.png"), "{output}");
    assert!(!output.contains("image-0.png"), "not the beginning: {output}");
    assert!(size(&failed) <= 1500, "{} bytes: {failed}", size(&failed));
    assert_eq!(failed["omitted"]["matter"], 0, "{failed}");
    // Where nothing matters, a failure shows its first lines; max_bytes raises the ceiling.
    let plain = f.call("fugue_exec", json!({"command": format!("{noise}; exit 3")}));
    assert!(plain["output"].as_str().unwrap().starts_with("copying assets/image-0.png"), "{plain}");
    let more = f.call(
        "fugue_exec",
        json!({"command": format!("{noise}; exit 3"),
                                           "max_bytes": 30000}),
    );
    assert!(more.get("omitted").is_none(), "{more}");
}

/// A script that asks seven questions, each on a line of its own, and says what it got.
pub const SEVEN_QUESTIONS: &str = "for q in name email port host user shell editor; do \
                                   printf '%s? ' \"$q\"; read -r a; echo \"got $q=$a\"; done";

#[test]
fn a_list_of_responses_answers_seven_questions_in_one_call() {
    let mut f = Fugue::start();
    let answers = ["ada", "ada@example.com", "8080", "db.local", "admin", "zsh", "vim"];
    let done = f.call(
        "fugue_exec",
        json!({"command": SEVEN_QUESTIONS, "responses": answers,
                                           "timeout_ms": 20000}),
    );
    eprintln!("seven questions: {} bytes", size(&done));
    assert_eq!(done["status"], "ok", "{done}");
    let output = done["output"].as_str().unwrap();
    assert!(output.contains("got name=ada") && output.ends_with("got editor=vim"), "{output}");
    let answered = done["answered"].as_array().unwrap();
    assert_eq!(answered.len(), 7, "{done}");
    assert_eq!(answered[6]["key"], "#7", "{done}");
    assert_eq!(answered[2]["question"], "port?", "{done}");
    assert!(!done["answered"].to_string().contains("8080"), "never the typed text: {done}");
    // A list that runs out leaves the next question to the agent, as today.
    let short = f.call(
        "fugue_exec",
        json!({"command": SEVEN_QUESTIONS, "responses": ["a", "b"],
                                            "timeout_ms": 20000}),
    );
    assert_eq!(short["status"], "input", "{short}");
    assert!(short["output"].as_str().unwrap().ends_with("port?"), "{short}");
    assert_eq!(short["answered"].as_array().unwrap().len(), 2, "{short}");
}

#[test]
fn a_debugger_session_by_order_is_one_call_with_the_values_in_output() {
    if !std::process::Command::new("python3").arg("-V").output().is_ok_and(|o| o.status.success()) {
        return skip("a_debugger_session_by_order", "python3 is not installed");
    }
    let dir = Dir::new("answers-pdb");
    let script = "values = [3, 5, 8, 13]\ntotal = 0\ncount = 0\n\n\nfor v in values:\n    \
                  total += v\n    count += 1\n\n\nprint('mean', total / count)\n";
    let path = dir.write("stats.py", script);
    let mut f = Fugue::start();
    let done = f.call(
        "fugue_exec",
        json!({
        "command": format!("python3 -m pdb {}", path.display()),
        "responses": ["break 11", "continue", "p total, count", "quit"], "timeout_ms": 30000}),
    );
    assert_eq!(done["status"], "ok", "{done}");
    assert!(done["output"].as_str().unwrap().contains("(29, 4)"), "{done}");
    assert_eq!(done["answered"].as_array().unwrap().len(), 4, "{done}");
}

#[test]
fn the_instructions_and_the_descriptions_teach_it_once() {
    let mut f = Fugue::spawn(&[]);
    let init = f.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "trust", "version": "1"}}),
    );
    let instructions = init["result"]["instructions"].as_str().unwrap().to_string();
    for word in ["`pattern`", "omitted.matter", "a list by order", "folded"] {
        assert!(instructions.contains(word), "the instructions lack {word}: {instructions}");
    }
    f.notify("notifications/initialized", json!({}));
    let list = f.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let described = |name: &str| -> String {
        let tool = tools.iter().find(|t| t["name"] == name).unwrap();
        format!("{} {}", tool["description"], tool["inputSchema"])
    };
    let read = described("fugue_get_output");
    for word in ["pattern", "context", "until", "groups", "matches", "matter", "fold"] {
        assert!(read.contains(word), "fugue_get_output does not say {word}: {read}");
    }
    assert!(described("fugue_exec").contains("[answers] by order"), "the list form of responses");
    // Said once: what matters is spelled out in fugue_get_output's description only.
    let spelled: Vec<&str> = tools
        .iter()
        .filter(|t| t["description"].as_str().unwrap().contains("errors, warnings"))
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(spelled, ["fugue_get_output"]);
}
