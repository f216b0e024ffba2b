//! What the text view holds and what fugue_expect returns from it: output after `since` only, and
//! the main screen only (a full-screen program's alternate screen is for the screen view).

use crate::util::*;
use serde_json::json;

/// `return_output` with `since` returns what came after `since`, not the pane's last lines.
#[test]
fn return_output_with_since_holds_only_what_came_after_it() {
    let mut f = Fugue::start();
    let pane = f.shell();
    f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "echo early-$((6*7))", "submit": true}),
    );
    f.expect(&pane, "^early-42$");
    let sent = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "echo late-$((6*7))", "submit": true}),
    );
    let found = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^late-42$", "since": sent["offset"],
               "action": "return_output", "timeout_ms": 20000}),
    );
    assert_eq!(found["status"], "matched", "{found}");
    let output = found["output"].as_str().unwrap();
    assert!(output.contains("late-42"), "{found}");
    assert!(!output.contains("early"), "output from before `since` came back: {output:?}");

    // Bounded by `lines` all the same: the last of what came after `since`.
    let sent = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "seq 1 50; echo done-$((6*7))", "submit": true}),
    );
    let found = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^done-42$", "since": sent["offset"], "lines": 3,
               "action": "return_output", "timeout_ms": 20000}),
    );
    let output = found["output"].as_str().unwrap();
    assert!(output.lines().count() <= 3, "{output:?}");
    assert!(output.contains("done-42") && !output.contains("late"), "{output:?}");
}
