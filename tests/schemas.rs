//! What clients and models read in tools/list: every defaulted argument declares its default as a
//! JSON Schema `default`, and the descriptions name the traps. (Its size budget is checked in
//! `protocol::tools_list_is_fixed_ordered_and_truthful`.)

use crate::util::*;
use serde_json::{Value, json};

fn tools() -> Vec<Value> {
    let mut f = Fugue::start();
    let list = f.request("tools/list", json!({}));
    list["result"]["tools"].as_array().unwrap().clone()
}

fn property<'a>(tools: &'a [Value], tool: &str, path: &[&str]) -> &'a Value {
    let found = tools.iter().find(|t| t["name"] == tool).unwrap_or_else(|| panic!("no {tool}"));
    let mut schema = &found["inputSchema"];
    for name in path {
        schema = &schema["properties"][*name];
    }
    schema
}

/// The defaults README.md and the seeds (FEAT-094/095/096) document, as the schemas must declare
/// them. fugue_run_parallel and fugue_run_pipeline: `parallel::the_run_tools_declare_their_defaults`.
#[test]
fn the_documented_defaults_are_in_the_schemas() {
    let tools = tools();
    let expected = [
        ("fugue_send_input", &["submit"][..], json!(false)),
        ("fugue_get_output", &["lines"], json!(100)),
        ("fugue_get_output", &["format"], json!("text")),
        ("fugue_get_output", &["max_bytes"], json!(3584)),
        ("fugue_expect", &["timeout_ms"], json!(60000)),
        ("fugue_expect", &["action"], json!("notify")),
        ("fugue_expect", &["poll_interval_ms"], json!(200)),
        ("fugue_expect", &["lines"], json!(100)),
        ("fugue_agent_pipeline_status", &["wait_ms"], json!(0)),
        ("fugue_agent_pipeline_status", &["until"], json!("change")),
        ("fugue_agent_pipeline_create", &["limits", "max_attempts"], json!(2)),
        ("fugue_agent_pipeline_create", &["limits", "max_followups"], json!(3)),
        ("fugue_agent_pipeline_create", &["limits", "max_qa_loops"], json!(2)),
        ("fugue_agent_pipeline_create", &["limits", "max_duration_s"], json!(7200)),
        ("fugue_agent_pipeline_create", &["limits", "max_cost_usd"], Value::Null),
    ];
    for (tool, path, default) in expected {
        let schema = property(&tools, tool, path);
        assert!(schema.get("default").is_some(), "{tool} {path:?} declares no default: {schema}");
        assert_eq!(schema["default"], default, "{tool} {path:?}");
    }
}

/// Every integer, boolean or enum argument whose description speaks of a default declares it, and
/// every declared default is a value of its argument's type.
#[test]
fn every_default_is_declared_and_well_typed() {
    fn walk(tool: &str, at: &str, schema: &Value) {
        let Some(props) = schema["properties"].as_object() else { return };
        for (name, prop) in props {
            let at = format!("{at}{name}");
            let kind = &prop["type"];
            let described = prop["description"].as_str().unwrap_or("").to_lowercase();
            let valued = prop.get("enum").is_some() || *kind == "integer" || *kind == "boolean";
            if valued && described.contains("default") {
                assert!(
                    prop.get("default").is_some(),
                    "{tool} {at}: default only in words: {prop}"
                );
            }
            if let Some(default) = prop.get("default") {
                let ok = match kind.as_str() {
                    Some("integer") => default.is_u64(),
                    Some("boolean") => default.is_boolean(),
                    Some("string") => default.is_string(),
                    _ => true,
                };
                assert!(ok, "{tool} {at}: default {default} is not a {kind}");
                if let Some(choices) = prop["enum"].as_array() {
                    assert!(choices.contains(default), "{tool} {at}: {default} not in {choices:?}");
                }
            }
            walk(tool, &format!("{at}."), prop);
        }
    }
    for tool in tools() {
        walk(tool["name"].as_str().unwrap(), "", &tool["inputSchema"]);
    }
}

/// What a model would otherwise learn by a failed call: the regex dialect's gaps, that closing
/// a session's last pane removes the session, and that `lines` cuts the screen view too.
#[test]
fn descriptions_name_the_traps() {
    let tools = tools();
    let lines = property(&tools, "fugue_get_output", &["lines"])["description"].as_str().unwrap();
    assert!(lines.contains("screen"), "{lines}");
    let pattern = property(&tools, "fugue_expect", &["pattern"])["description"].as_str().unwrap();
    assert!(pattern.contains("look-around") && pattern.contains("backreferences"), "{pattern}");
    let close = tools.iter().find(|t| t["name"] == "fugue_close_pane").unwrap();
    assert!(close["description"].as_str().unwrap().contains("last pane the session"), "{close}");
}
