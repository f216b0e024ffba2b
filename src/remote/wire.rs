//! What two fugues say to each other beyond MCP, in `_meta` keys of their own that any other
//! client or server ignores: what a program asks, so a durable call here asks the client as a
//! local one does, and a cancel that stops the work too (a task's).

use crate::tool::Asking;
use serde_json::{Value, json};

/// The `_meta` key of a call to a host's fugue that asks for what a program there asks, and of the
/// answer that says it.
pub(crate) const ASKS: &str = "fugue/asks";
/// The `_meta` key of a `notifications/cancelled` that stops the call's work too (a task's
/// cancel), answered once the work has stopped.
pub(crate) const STOP_WORK: &str = "fugue/stopWork";

/// What a program asks, as the `_meta` of an answer to another fugue (`ASKS`).
pub(crate) fn asks_meta(asks: &Asking) -> Value {
    json!({"pane_id": asks.pane_id, "question": asks.question, "program": asks.program})
}

/// What the host's fugue said a program there asks (`asks_meta`), its pane named with its host.
pub(super) fn asking(said: &Value, host: &str) -> Option<Asking> {
    let pane = said["pane_id"].as_str()?;
    Some(Asking {
        pane_id: format!("{host}:{pane}"),
        question: said["question"].as_str().unwrap_or_default().to_string(),
        program: said["program"].as_str().map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_asks_goes_over_and_comes_back_with_its_host() {
        let asks = Asking { pane_id: "ab".into(), question: "Name?".into(), program: None };
        let back = asking(&asks_meta(&asks), "web1").unwrap();
        assert_eq!(back, Asking { pane_id: "web1:ab".into(), ..asks });
        assert_eq!(asking(&Value::Null, "web1"), None, "nothing asks");
    }
}
