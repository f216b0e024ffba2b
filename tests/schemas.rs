//! What clients and models read in tools/list: every defaulted argument declares its default as a
//! JSON Schema `default` (the ones README documents), every integer its range, and the
//! descriptions name the traps. (Its size budget is checked in
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

/// README's table of tools documents each defaulted argument as `arg?=default` (a choice as its
/// words, the default first). The schemas, generated from each tool's parameter table, declare
/// exactly those defaults, and every default a schema declares is documented there.
#[test]
fn the_documented_defaults_are_the_schemas() {
    let tools = tools();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let documented = readme_defaults(&readme);
    assert!(documented.len() > 20, "README's table: {documented:?}");
    for (tool, arg, word) in &documented {
        let schema = property(&tools, tool, &[arg]);
        let valued = schema.get("enum").is_some()
            || ["integer", "boolean"].contains(&schema["type"].as_str().unwrap_or(""));
        if !valued {
            continue;
        }
        let declared =
            schema.get("default").unwrap_or_else(|| panic!("{tool} {arg}: no default: {schema}"));
        let said = match declared {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        assert_eq!(&said, word, "{tool} {arg}: README says {word}, the schema {declared}");
    }
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        for (arg, schema) in tool["inputSchema"]["properties"].as_object().unwrap() {
            if schema.get("default").is_some() {
                let found = documented.iter().any(|(t, a, _)| t == name && a == arg);
                assert!(found, "{name} {arg} declares a default README's table does not show");
            }
        }
    }
}

/// `(tool, argument, default)` for every `arg?=default` in README's table of tools.
fn readme_defaults(readme: &str) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for row in readme.lines().filter(|l| l.starts_with("| `fugue_")) {
        let row = row.replace("\\|", "/");
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let tool = cells[1].trim_matches('`').to_string();
        for arg in cells[2].trim_matches('`').split(", ") {
            let Some((name, default)) = arg.split_once("?=") else { continue };
            let default = default.split(['/', ' ', '`']).next().unwrap_or("");
            found.push((tool.clone(), name.trim().to_string(), default.to_string()));
        }
    }
    found
}

/// Every integer argument declares its range, and its default lies in it; every argument a
/// table limits in length says so (`minItems`/`maxItems` are checked by the hostile tests).
#[test]
fn every_integer_declares_its_range() {
    fn walk(tool: &str, at: &str, schema: &Value) {
        let Some(props) = schema["properties"].as_object() else { return };
        for (name, prop) in props {
            let at = format!("{at}{name}");
            if prop["type"] == "integer" {
                let min = prop["minimum"].as_u64().unwrap_or_else(|| panic!("{tool} {at}: {prop}"));
                let max = prop["maximum"].as_u64().unwrap_or(u64::MAX);
                if let Some(default) = prop["default"].as_u64() {
                    assert!((min..=max).contains(&default), "{tool} {at}: {prop}");
                }
            }
            walk(tool, &format!("{at}."), prop);
            walk(tool, &format!("{at}[]."), &prop["items"]);
        }
    }
    for tool in tools() {
        walk(tool["name"].as_str().unwrap(), "", &tool["inputSchema"]);
    }
}

/// Every wait a call takes is one rule: whole milliseconds from 0 to a day.
#[test]
fn every_timeout_is_one_rule() {
    let mut seen = 0;
    for tool in tools() {
        for (name, prop) in tool["inputSchema"]["properties"].as_object().unwrap() {
            if name == "timeout_ms" || name == "wait_ms" {
                assert_eq!(
                    (&prop["minimum"], &prop["maximum"]),
                    (&json!(0), &json!(86_400_000)),
                    "{} {name}",
                    tool["name"]
                );
                seen += 1;
            }
        }
    }
    assert_eq!(seen, 7);
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
