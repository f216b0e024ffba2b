//! The agent pipeline: one task taken through implementer → analyzer → QA → merger in its own git
//! worktree.
//!
//! `machine` is the policy, `record` the state a pipeline keeps, `runner` the thread that drives
//! one, `manager` the pipelines in memory (each a `handle`), `git` the worktree and the merge,
//! `store` the state files, `verdict` the analyzer's protocol. The tools that drive it over MCP are
//! in `tools`, above the runtime; everything else here sits below it, and `start` is what the
//! runtime calls.

pub(crate) mod git;
pub(crate) mod handle;
pub(crate) mod machine;
pub(crate) mod manager;
pub(crate) mod record;
pub(crate) mod runner;
pub(crate) mod store;
pub(crate) mod verdict;

use crate::mux::Mux;
use manager::{Manager, Settings};
use std::sync::Arc;

/// Starts the pipeline manager and resumes the pipelines in `FUGUE_STATE_DIR`. `drive` is false
/// for `fugue call`, which only reads.
pub(crate) fn start(mux: Arc<Mux>, settings: Settings, drive: bool) -> Arc<Manager> {
    let state_dir = settings.state_dir.clone();
    let manager = Manager::new(mux, settings, drive);
    if let Some(root) = &state_dir
        && let Err(e) = manager.load_root(root, false)
    {
        crate::log::warn(&format!("cannot load pipelines from {}: {e}", root.display()));
    }
    manager
}
