//! panes tests.

use crate::util::*;
use serde_json::json;

#[test]
fn a_command_pane_keeps_its_output_and_exit_code() {
    let mut f = Fugue::start();
    let pane = f.pane("printf 'héllo\\nworld'; exit 3");
    let status = f.wait_exit(&pane);
    assert_eq!(status["exit_code"], 3);
    assert_eq!(f.text(&pane), "héllo\nworld");
}
