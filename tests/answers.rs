//! Every tool's real answers against the `outputSchema` tools/list gives it: the binary is driven
//! through each tool, with several outcomes of the ones that report a status (fugue_exec,
//! fugue_send_input, fugue_wait, fugue_expect and the run tools), and each answer's
//! structuredContent is checked by a small validator: a key the schema declares has the declared
//! JSON type, a value the schema lists (`enum`, such as every `status`) is one of the list, nested
//! objects and arrays are checked against their `properties` and `items`, and a key the schema
//! leaves out must be documented in the tool's entry of the manual (man/fugue.1). The schemas
//! declare the keys an agent branches on, not every key (tools/list is paid for in every agent's
//! context, within 24 KiB); an answer key in neither place is one nobody was told of.

use crate::agent::{self, script};
use crate::util::*;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// What one answer broke: where, and how.
type Faults = Vec<String>;

/// The JSON type names of `value`: an integer is also a number.
fn types_of(value: &Value) -> &'static [&'static str] {
    match value {
        Value::Null => &["null"],
        Value::Bool(_) => &["boolean"],
        Value::Number(n) if n.is_i64() || n.is_u64() => &["integer", "number"],
        Value::Number(_) => &["number"],
        Value::String(_) => &["string"],
        Value::Array(_) => &["array"],
        Value::Object(_) => &["object"],
    }
}

/// Checks `value` against `schema` at `path`; keys no schema declares go to `undeclared`.
fn check(
    schema: &Value,
    value: &Value,
    path: &str,
    faults: &mut Faults,
    undeclared: &mut BTreeSet<String>,
) {
    let declared = match &schema["type"] {
        Value::String(kind) => vec![kind.as_str()],
        Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !declared.is_empty() && !types_of(value).iter().any(|t| declared.contains(t)) {
        faults.push(format!("{path}: {value} is not of type {}", schema["type"]));
    }
    if let Some(words) = schema["enum"].as_array()
        && !words.contains(value)
    {
        faults.push(format!("{path}: {value} is not one of {}", schema["enum"]));
    }
    match value {
        Value::Object(map) => {
            let properties = schema["properties"].as_object();
            for (key, item) in map {
                let at = format!("{path}.{key}");
                match properties.and_then(|p| p.get(key)) {
                    Some(inner) => check(inner, item, &at, faults, undeclared),
                    None if schema["additionalProperties"] == json!(false) => {
                        faults.push(format!("{at}: not declared, and the schema allows no other"));
                    }
                    None if properties.is_some() => {
                        undeclared.insert(key.clone());
                    }
                    None => {}
                }
            }
        }
        Value::Array(items) if schema.get("items").is_some() => {
            for (i, item) in items.iter().enumerate() {
                check(&schema["items"], item, &format!("{path}[{i}]"), faults, undeclared);
            }
        }
        _ => {}
    }
}

/// The tools/list entries by name.
fn listed(f: &mut Fugue) -> BTreeMap<String, Value> {
    let list = f.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    tools.iter().map(|t| (t["name"].as_str().unwrap().to_string(), t.clone())).collect()
}

/// The answers of one tool, as they came.
#[derive(Default)]
struct Answers(Vec<(String, Value)>);

impl Answers {
    #[track_caller]
    fn call(&mut self, f: &mut Fugue, tool: &str, args: Value) -> Value {
        let answer = f.call(tool, args);
        self.0.push((tool.to_string(), answer.clone()));
        answer
    }

    /// The faults of every answer against its tool's schema and manual entry, and the statuses
    /// each tool gave.
    fn check(
        &self,
        tools: &BTreeMap<String, Value>,
    ) -> (Faults, BTreeMap<String, BTreeSet<String>>) {
        let manual = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/man/fugue.1"));
        let manual = manual.expect("man/fugue.1");
        let mut faults = Vec::new();
        let mut statuses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (tool, answer) in &self.0 {
            let mut undeclared = BTreeSet::new();
            check(&tools[tool]["outputSchema"], answer, tool, &mut faults, &mut undeclared);
            let entry = manual_entry(&manual, tool);
            for key in undeclared.iter().filter(|k| !names(&entry, k)) {
                faults.push(format!(
                    "{tool}: answer key {key:?} is neither in its outputSchema nor in its entry \
                     of man/fugue.1"
                ));
            }
            statuses_in(answer, statuses.entry(tool.clone()).or_default());
        }
        (faults, statuses)
    }
}

/// The manual's entry of `tool`: from the tagged paragraph that introduces it (`.TP`, then
/// `.BI fugue_exec " command ..."`) to the next tool's, or the end of its section.
fn manual_entry(manual: &str, tool: &str) -> String {
    let lines: Vec<&str> = manual.lines().collect();
    let tag = |i: usize, name: Option<&str>| {
        let mut words = lines[i].split_whitespace();
        let named = matches!(words.next(), Some(".B" | ".BI"))
            && words.next().is_some_and(|w| name.map_or(w.starts_with("fugue_"), |n| w == n));
        i > 0 && lines[i - 1] == ".TP" && named
    };
    let start = (0..lines.len()).find(|i| tag(*i, Some(tool)));
    let start = start.unwrap_or_else(|| panic!("man/fugue.1 has no entry for {tool}"));
    let end = (start + 1..lines.len())
        .find(|i| tag(*i, None) || lines[*i].starts_with(".SH"))
        .unwrap_or(lines.len());
    // Font changes (`\fImatch\fR`) are not part of the words.
    let entry = lines[start..end].join("\n");
    ["\\fI", "\\fB", "\\fR", "\\fP"].iter().fold(entry, |text, font| text.replace(font, " "))
}

/// Whether `text` names `key` as a word of its own (not inside a longer name).
fn names(text: &str, key: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(key).any(|(at, _)| {
        let before = text[..at].chars().next_back().is_none_or(|c| !word(c));
        let after = text[at + key.len()..].chars().next().is_none_or(|c| !word(c));
        before && after
    })
}

/// Every `status` in an answer, nested ones as `results.ok`, `steps.failed`.
fn statuses_in(answer: &Value, seen: &mut BTreeSet<String>) {
    if let Some(status) = answer["status"].as_str() {
        seen.insert(status.to_string());
    }
    for key in ["results", "steps", "pipelines"] {
        for item in answer[key].as_array().into_iter().flatten() {
            if let Some(status) = item["status"].as_str() {
                seen.insert(format!("{key}.{status}"));
            }
        }
    }
}

/// Drives the pane tools, fugue_exec, fugue_send_input, fugue_wait and fugue_expect through their
/// outcomes.
fn drive_panes(f: &mut Fugue, a: &mut Answers) {
    let created = a.call(f, "fugue_create_session", json!({}));
    let session = created["session_id"].as_str().unwrap().to_string();
    let shell = created["pane_id"].as_str().unwrap().to_string();
    f.expect(&shell, r"[$#%>]$");
    let window = a.call(f, "fugue_create_window", json!({"session_id": session, "command": "cat"}));
    let window_id = window["window_id"].as_str().unwrap().to_string();
    let cat = window["pane_id"].as_str().unwrap().to_string();
    let short = a.call(
        f,
        "fugue_create_pane",
        json!({"session_id": session, "window_id": window_id, "command": "exit 4"}),
    );
    let short = short["pane_id"].as_str().unwrap().to_string();
    f.wait_exit(&short);

    let exec = |a: &mut Answers, f: &mut Fugue, args: Value| a.call(f, "fugue_exec", args);
    exec(a, f, json!({"command": "echo fine", "pane_id": shell}));
    exec(a, f, json!({"command": "echo no; false", "pane_id": shell}));
    exec(a, f, json!({"command": "seq 1 2000", "pane_id": shell, "max_bytes": 200}));
    let sleeper = exec(a, f, json!({"command": "sleep 30", "timeout_ms": 100}));
    let sleeper = sleeper["pane_id"].as_str().unwrap().to_string();
    exec(a, f, json!({"command": "echo up; sleep 30", "until": "^up$", "timeout_ms": 10000}));
    let asking = exec(a, f, json!({"command": "read -p 'Name? ' n; echo \"hi $n\""}));
    assert_eq!(asking["status"], "input", "{asking}");
    let pane = asking["pane_id"].as_str().unwrap().to_string();
    let replied = json!({"pane_id": pane, "input": "fugue", "submit": true, "wait_ms": 10000});
    a.call(f, "fugue_send_input", replied);
    let answered = json!({"command": "read -p 'Again? ' n", "responses": {"Again": "y"}});
    exec(a, f, answered);
    exec(a, f, json!({"command": "exit 0"}));

    a.call(f, "fugue_send_input", json!({"pane_id": cat, "input": "meow", "submit": true}));
    a.call(f, "fugue_send_input", json!({"pane_id": shell, "wait_ms": 100}));
    let asks = json!({"pane_id": shell, "input": "read -p 'Sure? ' x", "submit": true,
                      "wait_ms": 10000});
    a.call(f, "fugue_send_input", asks);
    a.call(f, "fugue_send_input", json!({"pane_id": shell, "input": "y", "submit": true}));

    let job = exec(a, f, json!({"command": "sleep 0.2; echo done", "timeout_ms": 1}));
    let job = job["pane_id"].as_str().unwrap().to_string();
    a.call(f, "fugue_wait", json!({"pane_ids": [job], "timeout_ms": 20000}));
    let both = json!({"pane_ids": [sleeper, short], "mode": "all", "timeout_ms": 100});
    a.call(f, "fugue_wait", both);
    let later = json!({"command": "sleep 0.2; echo purr; sleep 30", "timeout_ms": 1});
    let later = exec(a, f, later)["pane_id"].as_str().unwrap().to_string();
    a.call(f, "fugue_wait", json!({"pane_ids": [later], "until": "^purr", "timeout_ms": 20000}));
    let read = json!({"command": "read -p 'Name? ' n", "timeout_ms": 10000});
    let reading = exec(a, f, read)["pane_id"].as_str().unwrap().to_string();
    a.call(f, "fugue_wait", json!({"pane_ids": [reading], "timeout_ms": 20000}));

    let expect = |a: &mut Answers, f: &mut Fugue, args: Value| a.call(f, "fugue_expect", args);
    expect(a, f, json!({"pane_id": cat, "pattern": "m(e)ow", "action": "return_output"}));
    expect(a, f, json!({"pane_id": cat, "pattern": "never", "timeout_ms": 100}));
    expect(a, f, json!({"pane_id": reading, "pattern": "never", "on_input": "return"}));
    expect(a, f, json!({"pane_id": short, "pattern": "never"}));

    a.call(f, "fugue_get_output", json!({"pane_id": cat}));
    a.call(f, "fugue_get_output", json!({"pane_id": shell, "format": "screen"}));
    a.call(f, "fugue_get_output", json!({"pane_id": short}));
    a.call(f, "fugue_get_status", json!({"pane_id": shell}));
    a.call(f, "fugue_get_status", json!({"pane_id": short}));
    a.call(f, "fugue_list_sessions", json!({}));
    a.call(f, "fugue_resize_pane", json!({"pane_id": cat, "rows": 30, "cols": 100}));
    a.call(f, "fugue_close_pane", json!({"pane_id": short}));
    a.call(f, "fugue_close_pane", json!({"pane_ids": [cat]}));
    a.call(f, "fugue_close_session", json!({"session_id": session}));
}

/// Drives the run tools through their outcomes.
fn drive_runs(f: &mut Fugue, a: &mut Answers) {
    let run = |a: &mut Answers, f: &mut Fugue, args: Value| a.call(f, "fugue_run_parallel", args);
    run(
        a,
        f,
        json!({"commands": [{"command": "echo one"}, {"command": "exit 3"}], "tails": "all"}),
    );
    let slow =
        json!({"commands": [{"command": "true"}, {"command": "sleep 30"}], "timeout_ms": 500});
    run(a, f, slow);
    run(a, f, json!({"commands": [{"command": "sleep 30"}], "timeout_ms": 200}));
    run(a, f, json!({"commands": [{"command": "read -p 'Name? ' n"}]}));
    run(a, f, json!({"commands": [{"command": "true", "cwd": "/"}], "cleanup": false}));
    let answered = json!({"command": "read -p 'Name? ' n", "responses": {"Name": "x"}});
    run(a, f, json!({"commands": [answered]}));

    let pipe = |a: &mut Answers, f: &mut Fugue, args: Value| a.call(f, "fugue_run_pipeline", args);
    pipe(a, f, json!({"commands": [{"command": "cd /tmp"}, {"command": "true"}], "cleanup": true}));
    let failing = json!([{"command": "echo a"}, {"command": "false"}, {"command": "true"}]);
    pipe(a, f, json!({"commands": failing, "cleanup": true, "tails": "all"}));
    pipe(a, f, json!({"commands": [{"command": "sleep 30"}], "timeout_ms": 300, "cleanup": true}));
    pipe(a, f, json!({"commands": [{"command": "read -p 'Q? ' x"}], "cleanup": true}));
    pipe(a, f, json!({"commands": [{"command": "exit 5"}], "cleanup": true}));
}

/// Drives the agent tools: a pipeline whose implementer fails is blocked, then cancelled.
fn drive_agents(f: &mut Fugue, a: &mut Answers, dir: &Dir) {
    let repo = git_repo(dir);
    let failing = script(dir, "implementer", "echo broken; exit 1\n");
    let args = json!({"repo": path_str(&repo), "task": "Add a feature", "implementer": failing,
                      "limits": {"max_attempts": 1}});
    let created = a.call(f, "fugue_agent_pipeline_create", args);
    let id = created["pipeline_id"].as_str().unwrap().to_string();
    agent::settle(f, &id);
    a.call(f, "fugue_agent_pipeline_status", json!({"pipeline_id": id, "events": 3}));
    a.call(f, "fugue_agent_pipeline_status", json!({"wait_ms": 10}));
    a.call(f, "fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "cancel"}));
}

#[test]
fn every_answer_is_what_its_output_schema_says() {
    let dir = Dir::new("answers");
    let mut f = agent::start(&[]);
    let tools = listed(&mut f);
    let mut answers = Answers::default();
    drive_panes(&mut f, &mut answers);
    drive_runs(&mut f, &mut answers);
    drive_agents(&mut f, &mut answers, &dir);
    let (faults, statuses) = answers.check(&tools);
    assert!(faults.is_empty(), "answers that break their schema:\n{}", faults.join("\n"));
    let called: BTreeSet<&String> = answers.0.iter().map(|(tool, _)| tool).collect();
    let missed: Vec<&String> = tools.keys().filter(|t| !called.contains(t)).collect();
    assert!(missed.is_empty(), "tools never called: {missed:?}");
    let expected: &[(&str, &[&str])] = &[
        ("fugue_exec", &["ok", "failed", "running", "ready", "input", "exited"]),
        ("fugue_send_input", &["ok", "input"]),
        ("fugue_wait", &["done", "timeout", "results.ok", "results.matched", "results.input"]),
        ("fugue_wait", &["results.running", "results.exited"]),
        ("fugue_expect", &["matched", "timeout", "input", "exited"]),
        ("fugue_run_parallel", &["completed", "partial", "timeout", "input", "results.failed"]),
        ("fugue_run_pipeline", &["completed", "failed", "timeout", "input", "steps.exited"]),
    ];
    for (tool, words) in expected {
        let seen = &statuses[*tool];
        for word in *words {
            assert!(seen.contains(*word), "{tool} never answered {word}: {seen:?}");
            // The words of a status are declared, whatever the manual says of them.
            let schema = &tools[*tool]["outputSchema"]["properties"];
            let status = match word.split_once('.') {
                Some((list, _)) => &schema[list]["items"]["properties"]["status"],
                None => &schema["status"],
            };
            assert!(status["enum"].is_array(), "{tool} does not list its {word:?} words: {status}");
        }
    }
}

/// The validator itself: a key of the wrong type, a word outside the list, a nested one, and an
/// undescribed key are each a fault.
#[test]
fn the_validator_finds_what_breaks_a_schema() {
    let schema = json!({"type": "object", "properties": {
        "status": {"enum": ["ok", "failed"]},
        "exit_code": {"type": ["integer", "null"]},
        "steps": {"type": "array", "items": {"type": "object", "properties": {
            "status": {"enum": ["ok"]}}}},
    }});
    let good = json!({"status": "ok", "exit_code": null, "steps": [{"status": "ok", "x": 1}]});
    let (mut faults, mut undeclared) = (Vec::new(), BTreeSet::new());
    check(&schema, &good, "t", &mut faults, &mut undeclared);
    assert!(faults.is_empty(), "{faults:?}");
    assert_eq!(undeclared, BTreeSet::from(["x".to_string()]));
    let bad = json!({"status": "done", "exit_code": "3", "steps": [{"status": "failed"}]});
    check(&schema, &bad, "t", &mut faults, &mut undeclared);
    assert_eq!(faults.len(), 3, "{faults:?}");
}
