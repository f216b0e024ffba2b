//! The names fugue gives what it creates: `fugue_run_pipeline` and agent pipelines are told apart
//! (a `run-pipeline-…` window of the orchestration session, a `pipeline-…` session).

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
