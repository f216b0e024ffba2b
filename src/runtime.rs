//! The runtime: everything one fugue server owns and acts on, in one value with one way to stop.
//!
//! A `Runtime` owns the registry of panes (`mux`), the agent-pipeline manager (`agents`), the
//! private temporary directories of pipelines and live shells (`temp_dirs`), the pool of fugue's
//! own shells (`shells`), the durable calls (`tasks`), what its sandboxed panes share (`holders`)
//! and the settings it started with (`config`,
//! read once here: the mux and the manager get their share as they are made). Tool handlers reach it through their
//! `Ctx`; protocol connections share it by `Arc` (it is `Send + Sync`), and whoever made it calls
//! `shutdown` once when the server stops.

use crate::agent::{self, manager::Manager};
use crate::config::Config;
use crate::mux::{Mux, Setup};
use crate::sandbox::{Holders, Policy};
use crate::tempdir::TempDirs;
use std::sync::Arc;

pub(crate) struct Runtime {
    /// Every session, window and pane.
    pub(crate) mux: Arc<Mux>,
    /// The agent pipelines this process knows about, and the runners of those it drives.
    pub(crate) agents: Arc<Manager>,
    /// Temporary directories of `fugue_run_pipeline` calls in progress and of live shells.
    pub(crate) temp_dirs: Arc<TempDirs>,
    /// fugue's own shells, where `fugue_exec` without `pane_id` runs.
    pub(crate) shells: crate::shell::pool::Pool,
    /// Durable calls (MCP Tasks): they outlive the request, and in a shared server the front.
    pub(crate) tasks: crate::tool::task::Tasks,
    /// The server's sandbox policy, fixed when it starts: a pane runs under it unless its call
    /// asked for a stricter one (the mux puts the one it runs under in its `PaneSpec`).
    pub(crate) sandbox: Arc<Policy>,
    /// What the sandboxed panes share: the network and layout templates' holders, the private
    /// `/tmp`, the kernel probe's answer. The mux hands it to each pane's start.
    pub(crate) holders: Arc<Holders>,
    /// The settings and limits, read once as the runtime starts: what is built here gets its
    /// share at construction, and handlers read the rest from here.
    pub(crate) config: Config,
}

impl Runtime {
    /// A runtime with no panes under the server's sandbox `policy`, its agent pipelines loaded
    /// from `FUGUE_STATE_DIR`. `drive` is false for `fugue call`, which ends with its one call and
    /// so only reads pipelines.
    pub(crate) fn start(drive: bool, sandbox: Arc<Policy>) -> Runtime {
        // Before any call makes directories of its own: those of fugues that were killed go.
        crate::tempdir::sweep_stale();
        let config = crate::config::config().clone();
        let temp_dirs = Arc::<TempDirs>::default();
        let shells = Arc::new(crate::shell::Shells(temp_dirs.clone()));
        let holders = Arc::<Holders>::default();
        let setup =
            Setup { sandbox: sandbox.clone(), holders: holders.clone(), ..Setup::of(&config) };
        let mux = Arc::new(Mux::new(shells, setup));
        let agents = agent::start(mux.clone(), agent::manager::Settings::of(&config), drive);
        let (shells, tasks) = (Default::default(), Default::default());
        Runtime { mux, agents, temp_dirs, shells, tasks, sandbox, holders, config }
    }

    /// Whether a connection to fugue's control or shared socket from process `pid` is a sandboxed
    /// pane's (`sandbox::refuses_peer`), under this runtime's policy and panes.
    pub(crate) fn refuses_peer(&self, pid: i32) -> bool {
        crate::sandbox::refuses_peer(&self.sandbox, &self.holders, pid)
    }

    /// Stops everything, in order: durable calls first, so none starts work on what is ending; then
    /// agent runners, so the panes ending next are not taken for failed attempts; then every pane's
    /// processes (fugue's own shells among them); then the temporary directories, which calls still
    /// unwinding no longer need; then the sandbox's holders and private `/tmp`, which no pane
    /// uses any more. Pipelines' state stays on disk for the next fugue.
    pub(crate) fn shutdown(&self) {
        self.tasks.shutdown();
        self.agents.shutdown();
        self.mux.shutdown();
        self.temp_dirs.remove_all();
        self.holders.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_is_shared_by_connections_on_several_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Runtime>();
        shareable::<Arc<Runtime>>();
    }
}
