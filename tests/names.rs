//! The names fugue gives what it creates: `fugue_run_pipeline` and agent pipelines are told apart
//! (a `run-pipeline-…` window of the orchestration session, a `pipeline-…` session), and the ids
//! it hands out are short handles.

use crate::util::Fugue;
use serde_json::json;

#[test]
fn a_run_pipeline_is_a_run_pipeline_window_and_makes_no_pipeline_session() {
    let mut f = Fugue::start();
    let run = f.call("fugue_run_pipeline", json!({"commands": [{"command": "true"}]}));
    assert_eq!(run["status"], "completed", "{run}");
    let pane = run["pane_id"].as_str().unwrap();
    let sessions = f.call("fugue_list_sessions", json!({}));
    let sessions = sessions["sessions"].as_array().unwrap();
    let names: Vec<&str> = sessions.iter().filter_map(|s| s["name"].as_str()).collect();
    assert!(!names.iter().any(|n| n.starts_with("pipeline-")), "{names:?}");
    let holder = sessions
        .iter()
        .flat_map(|s| s["windows"].as_array().unwrap().iter().map(move |w| (s, w)))
        .find(|(_, w)| w["panes"].as_array().unwrap().iter().any(|p| p["id"] == pane));
    let (session, window) =
        holder.unwrap_or_else(|| panic!("pane {pane} not listed: {sessions:?}"));
    assert_eq!(session["name"], "__orchestration__");
    let window = window["name"].as_str().unwrap_or_default();
    assert!(
        window.starts_with("run-pipeline-") && window.len() == "run-pipeline-".len() + 8,
        "{window}"
    );
}

/// Every id an answer hands out is 8 lowercase hex digits, each unique, and a prefix of one still
/// names its pane.
#[test]
fn the_ids_fugue_hands_out_are_eight_hex_digits() {
    let mut f = Fugue::start();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let created = f.call("fugue_create_session", json!({"command": "sleep 60"}));
        for key in ["session_id", "window_id", "pane_id"] {
            ids.push(created[key].as_str().unwrap().to_string());
        }
    }
    for id in &ids {
        let hex = id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        assert!(id.len() == 8 && hex, "{id:?} is no 8-digit handle");
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    let pane = &ids[2];
    let by_prefix = f.call("fugue_get_status", json!({"pane_id": &pane[..4]}));
    assert_eq!(by_prefix["pane_id"], pane.as_str(), "{by_prefix}");
}
