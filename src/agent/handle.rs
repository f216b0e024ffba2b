//! One agent pipeline as this process sees it: its state in memory, the watch woken when it
//! changes, and — when this process drives it — the command channel into its runner and the lock
//! that tells other fugue processes it is taken. The `Manager` holds the unfinished ones.

use super::record::AgentPipeline;
use super::runner::{ControlRequest, Published};
use super::store::Store;
use crate::files::FileLock;
use crate::ids::PipelineId;
use crate::watch::Watch;
use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use std::sync::Arc;

/// One pipeline as this process sees it.
pub(crate) struct Handle {
    pub(crate) id: PipelineId,
    /// Its name, fixed at creation, so that finding it by name needs no copy of its state.
    pub(super) name: Option<String>,
    pub(super) created_at: u64,
    pub(crate) store: Arc<Store>,
    /// Its state in memory: published by our runner, or read from disk (`refresh`) when another
    /// process drives it.
    pub(super) latest: Arc<Published>,
    pub(super) runner: Option<RunnerLink>,
    /// Unfinished, yet no process holds its lock (seen from `fugue call`).
    pub(super) orphaned: bool,
}

/// This process's link to the runner thread that drives the pipeline, present when it is here:
/// the runner's command channel and the pipeline's lock.
pub(super) struct RunnerLink {
    pub(super) commands: Sender<ControlRequest>,
    /// Held while the runner lives, dropped when it ends: a finished pipeline keeps no descriptor
    /// open (one per pipeline ever run, until fugue ran out of them).
    pub(super) lock: Mutex<Option<FileLock>>,
}

impl Handle {
    pub(super) fn new(store: &Arc<Store>, pipeline: AgentPipeline, any: Arc<Watch>) -> Handle {
        Handle {
            id: pipeline.id.clone(),
            name: pipeline.name.clone(),
            created_at: pipeline.created_at,
            store: store.clone(),
            latest: Arc::new(Published::new(pipeline, any)),
            runner: None,
            orphaned: false,
        }
    }

    /// The pipeline's latest state, from memory; it never reads the disk.
    pub(crate) fn snapshot(&self) -> AgentPipeline {
        self.latest.get()
    }

    pub(super) fn is_terminal(&self) -> bool {
        self.latest.with(|p| p.status.is_terminal())
    }

    /// Reads the state file of a pipeline another process drives, which only that process
    /// publishes. A pipeline driven here, or finished, is already current in memory.
    pub(crate) fn refresh(&self) {
        if self.runner.is_none()
            && !self.is_terminal()
            && let Ok(fresh) = self.store.load(&self.id)
        {
            self.latest.replace(fresh);
        }
    }

    /// Lets go of the pipeline's lock once its runner has ended.
    pub(super) fn release_lock(&self) {
        if let Some(runner) = &self.runner {
            runner.lock.lock().take();
        }
    }

    pub(crate) fn is_driven_here(&self) -> bool {
        self.runner.is_some()
    }

    /// Who drives an unfinished pipeline this process does not drive, in words.
    pub(crate) fn driven_by(&self) -> &'static str {
        if self.orphaned {
            "no fugue server: the next one started with this state resumes it"
        } else {
            "another fugue process (status read from its state file)"
        }
    }

    /// A channel woken on every change of this pipeline; subscribe before looking.
    pub(crate) fn subscribe(&self) -> Receiver<()> {
        self.latest.subscribe()
    }
}
