//! Ids and times as fugue writes them: a new id, its short form for people, a time in Unix
//! milliseconds.
//!
//! A leaf: panes, the mux, live shells, agent pipelines and the front-ends all name things with
//! these, so they live below all of them rather than in any one.

use std::time::{SystemTime, UNIX_EPOCH};

/// A new id: a UUID v4.
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The first eight characters of an id: enough to tell ids apart where a person reads them (a
/// window, a branch, a thread name).
pub(crate) fn short_id(id: &str) -> &str {
    id.char_indices().nth(8).map_or(id, |(end, _)| &id[..end])
}

pub(crate) fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
