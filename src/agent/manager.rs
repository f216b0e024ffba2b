//! The pipelines this fugue process knows about: creating them, finding them, loading them from
//! disk and resuming them after a restart.
//!
//! Each unfinished pipeline is a `Handle` (see `handle`) in memory; a finished one leaves memory
//! when its runner ends and is read from its state file when asked for. A pipeline another live
//! fugue drives is shown from its state file (read explicitly, `refresh`) and cannot be controlled
//! from here. State roots are loaded once: `FUGUE_STATE_DIR` at
//! start-up, or a repository's `.state` the first time a tool names that repository. On load, a
//! pipeline whose stage was running when its fugue died runs that stage again as a new attempt (or
//! blocks, if its attempts are spent), and a blocked one waits for control again.

use super::git;
use super::handle::{Handle, RunnerLink};
use super::machine::{self, Control, Event, EventKind, Step};
use super::record::{self, AgentPipeline, Limits, now};
use super::runner::{self, ControlRequest, Env};
use super::store::{Problem, Store, valid_id};
use crate::cancel::Cancel;
use crate::error::{Error, ErrorKind, Result};
use crate::files::FileLock;
use crate::ids::{PipelineId, short_id};
use crate::mux::Mux;
use crate::watch::Watch;
use crate::words::Words;
use crossbeam_channel::{Receiver, Sender, after, select};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a control action waits for the runner to take it.
const CONTROL_PATIENCE: Duration = Duration::from_secs(60);
/// How long shutdown waits for the runners to let go.
const SHUTDOWN_PATIENCE: Duration = Duration::from_secs(3);

#[derive(Default)]
struct Ledger {
    /// The unfinished pipelines. A finished one leaves when its runner ends (or, driven by another
    /// process, when a refresh finds it finished): its state stays on disk and is read from there
    /// when asked for, so memory does not grow with the pipelines a server has run.
    handles: Vec<Arc<Handle>>,
    /// State roots loaded so far.
    stores: HashMap<PathBuf, Arc<Store>>,
    problems: Vec<Problem>,
    /// Creations in progress, counted against the limit.
    reserved: usize,
}

/// What the manager is given at start-up (from `Config`).
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// Where pipelines keep their state (`FUGUE_STATE_DIR`); `None`: `.state` in each repository.
    pub(crate) state_dir: Option<PathBuf>,
    /// Pipelines running or blocked at once (`FUGUE_MAX_PIPELINES`).
    pub(crate) max_pipelines: usize,
}

impl Settings {
    /// The settings `config` gives.
    pub(crate) fn of(config: &crate::config::Config) -> Settings {
        Settings { state_dir: config.state_dir.clone(), max_pipelines: config.max_pipelines }
    }
}

pub(crate) struct Manager {
    pub(crate) mux: Arc<Mux>,
    settings: Settings,
    /// False in `fugue call`: the process ends with the call, so it only reads.
    drive: bool,
    inner: Mutex<Ledger>,
    /// Woken when any pipeline changes.
    changed: Arc<Watch>,
    /// Cancelled when fugue stops: runners leave their state as it is and return.
    pub(crate) stopping: Cancel,
    /// Runner threads alive, and the channel each one signals on its way out.
    runners: Mutex<usize>,
    exits: (Sender<()>, Receiver<()>),
}

/// Signals a runner's end, however it ends (a panic included).
struct ExitSignal(Sender<()>);

impl Drop for ExitSignal {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// What `create` needs, already checked for type.
pub(crate) struct NewPipeline {
    pub(crate) repo: PathBuf,
    pub(crate) task: String,
    pub(crate) base_branch: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) idea_id: Option<String>,
    pub(crate) agents: record::Agents,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) limits: Limits,
}

impl Manager {
    pub(crate) fn new(mux: Arc<Mux>, settings: Settings, drive: bool) -> Arc<Manager> {
        Arc::new(Manager {
            mux,
            settings,
            drive,
            inner: Mutex::new(Ledger::default()),
            changed: Arc::default(),
            stopping: Cancel::default(),
            runners: Mutex::new(0),
            exits: crossbeam_channel::unbounded(),
        })
    }

    /// A channel woken when any pipeline changes.
    pub(crate) fn subscribe(&self) -> Receiver<()> {
        self.changed.subscribe()
    }

    /// The state root for a repository: `FUGUE_STATE_DIR`, or `.state` in its main working tree.
    pub(crate) fn root_for(&self, repo_main: &Path) -> PathBuf {
        self.settings.state_dir.clone().unwrap_or_else(|| repo_main.join(".state"))
    }

    /// Loads a state root once, resuming what it holds. Without `create`, a root that has no
    /// pipelines directory is left alone (looking never creates files in a repository).
    pub(crate) fn load_root(
        self: &Arc<Manager>,
        root: &Path,
        create: bool,
    ) -> Result<Option<Arc<Store>>> {
        if let Some(store) = self.inner.lock().stores.get(root) {
            return Ok(Some(store.clone()));
        }
        if !create && !root.join("pipelines").is_dir() {
            return Ok(None);
        }
        let store = Arc::new(Store::open(root)?);
        {
            let mut inner = self.inner.lock();
            if let Some(store) = inner.stores.get(root) {
                return Ok(Some(store.clone()));
            }
            inner.stores.insert(root.to_path_buf(), store.clone());
        }
        let loaded = store.load_all();
        self.inner.lock().problems.extend(loaded.problems);
        for pipeline in loaded.pipelines {
            self.adopt(&store, pipeline);
        }
        Ok(Some(store))
    }

    /// Registers an unfinished pipeline read from disk, and drives it if it is free. A finished one
    /// stays on disk only.
    fn adopt(self: &Arc<Manager>, store: &Arc<Store>, pipeline: AgentPipeline) {
        if pipeline.status.is_terminal()
            || self.inner.lock().handles.iter().any(|h| h.id == pipeline.id)
        {
            return;
        }
        let lock = match store.lock(&pipeline.id) {
            Ok(lock) => lock,
            Err(e) => {
                crate::log::warn(&format!("pipeline {}: {e}", pipeline.id));
                None
            }
        };
        let lock = match lock {
            Some(lock) if self.drive => lock,
            // `fugue call` only looks: a free lock means no process drives the pipeline now.
            free => {
                self.register(store, pipeline, None, free.is_some());
                return;
            }
        };
        runner::end_strays(&pipeline);
        let (pipeline, step) = resume(pipeline);
        if let Err(e) = store.save(&pipeline) {
            crate::log::error(&format!("pipeline {}: cannot save its state: {e}", pipeline.id));
        }
        self.register(store, pipeline, Some((lock, step)), false);
    }

    /// Adds a handle; with a lock and a first step, starts its runner.
    fn register(
        self: &Arc<Manager>,
        store: &Arc<Store>,
        pipeline: AgentPipeline,
        drive: Option<(FileLock, Step)>,
        orphaned: bool,
    ) -> Arc<Handle> {
        let mut handle = Handle::new(store, pipeline.clone(), self.changed.clone());
        handle.orphaned = orphaned;
        let start = drive.map(|(lock, step)| {
            let (tx, rx) = crossbeam_channel::bounded(8);
            handle.runner = Some(RunnerLink { commands: tx, lock: Mutex::new(Some(lock)) });
            (rx, step)
        });
        let handle = Arc::new(handle);
        self.inner.lock().handles.push(handle.clone());
        self.changed.notify();
        if let Some((control, step)) = start {
            self.start_runner(&handle, pipeline, control, step);
        }
        handle
    }

    /// Starts the thread that drives `handle`'s pipeline; when it ends with the pipeline
    /// finished, the pipeline leaves memory.
    fn start_runner(
        self: &Arc<Manager>,
        handle: &Arc<Handle>,
        pipeline: AgentPipeline,
        control: Receiver<ControlRequest>,
        step: Step,
    ) {
        let env = Env {
            mux: self.mux.clone(),
            stopping: self.stopping.receiver().clone(),
            store: handle.store.clone(),
            latest: handle.latest.clone(),
        };
        let manager = self.clone();
        let handle = handle.clone();
        let signal = ExitSignal(self.exits.0.clone());
        *self.runners.lock() += 1;
        let name = format!("pipeline-{}", short_id(&pipeline.id));
        let spawned = crate::threads::spawn(
            &name,
            None,
            Box::new(move || {
                let _signal = signal;
                runner::drive(env, pipeline, control, step);
                handle.release_lock();
                if handle.is_terminal() {
                    manager.retire(&handle.id);
                }
            }),
        );
        if let Err(e) = spawned {
            // The closure, and with it the signal, was dropped: the count is already even.
            crate::log::error(&format!("cannot start a pipeline thread: {e}"));
        }
    }

    /// A finished pipeline leaves memory; readers find it on disk from now on.
    fn retire(&self, id: &PipelineId) {
        self.inner.lock().handles.retain(|h| h.id != *id);
        self.changed.notify();
    }

    /// Creates the worktree and the state, then starts the runner.
    pub(crate) fn create(self: &Arc<Manager>, req: NewPipeline) -> Result<Arc<Handle>> {
        if !self.drive {
            return Err(Error::new(
                ErrorKind::InvalidState,
                "`fugue call` ends with the call, so it cannot drive a pipeline; create it \
                 through the MCP server (`fugue`)",
            ));
        }
        let repo = git::main_worktree(&req.repo)?;
        let repo = repo.canonicalize().unwrap_or(repo);
        let store = self
            .load_root(&self.root_for(&repo), true)?
            .ok_or_else(|| Error::internal("the state directory vanished"))?;
        self.reserve(req.name.as_deref())?;
        let created = self.create_reserved(&store, &repo, req);
        self.inner.lock().reserved -= 1;
        created
    }

    fn reserve(&self, name: Option<&str>) -> Result<()> {
        self.refresh_foreign();
        let finished = match name {
            Some(_) => self.finished(),
            None => Vec::new(),
        };
        let mut inner = self.inner.lock();
        if let Some(name) = name
            && inner
                .handles
                .iter()
                .chain(&finished)
                .any(|h| h.name.as_deref() == Some(name) || h.id == name)
        {
            return Err(Error::new(
                ErrorKind::NameTaken,
                format!("a pipeline named {name:?} already exists; pick another name"),
            ));
        }
        let active = inner.handles.iter().filter(|h| !h.is_terminal()).count() + inner.reserved;
        if active >= self.settings.max_pipelines {
            return Err(Error::new(
                ErrorKind::LimitReached,
                format!(
                    "{active} pipelines are already running or blocked (FUGUE_MAX_PIPELINES is \
                     {}); cancel one or wait for one to finish",
                    self.settings.max_pipelines
                ),
            ));
        }
        inner.reserved += 1;
        Ok(())
    }

    fn create_reserved(
        self: &Arc<Manager>,
        store: &Arc<Store>,
        repo: &Path,
        req: NewPipeline,
    ) -> Result<Arc<Handle>> {
        let base_branch = match req.base_branch {
            Some(branch) => branch,
            None => git::current_branch(repo)?,
        };
        git::check_branch_name(repo, &base_branch)?;
        let base_commit = git::branch_commit(repo, &base_branch)?;
        let id = PipelineId::new(|h| store.taken(h));
        let branch = format!("fugue/{}", short_id(&id));
        let worktree = store.worktree_path(&id)?;
        let lock = store.lock(&id)?.ok_or_else(|| Error::internal("a new pipeline id is taken"))?;
        if let Err(e) = git::add_worktree(repo, &worktree, &branch, &base_commit) {
            store.discard_lock(&id, lock);
            return Err(e);
        }
        let job = record::Assignment {
            repo: repo.display().to_string(),
            base_branch,
            base_commit: base_commit.clone(),
            branch: branch.clone(),
            worktree: worktree.display().to_string(),
            task: req.task,
            env: req.env,
        };
        let at = now();
        let pipeline =
            AgentPipeline::new(id, req.name, req.idea_id, job, req.agents, req.limits, at);
        let start = machine::next(&pipeline, Event { at, kind: EventKind::Start });
        if let Err(e) = store.save(&start.pipeline) {
            git::discard_worktree(repo, &worktree, &branch, &base_commit);
            store.discard_lock(&start.pipeline.id, lock);
            return Err(e);
        }
        Ok(self.register(store, start.pipeline, Some((lock, start.step)), false))
    }

    /// Finds a pipeline by id or name: in memory, else a finished one on disk.
    pub(crate) fn find(&self, key: &str) -> Result<Arc<Handle>> {
        let named = |handles: &[Arc<Handle>]| {
            handles
                .iter()
                .find(|h| h.id == key)
                .or_else(|| handles.iter().find(|h| h.name.as_deref() == Some(key)))
                .cloned()
        };
        named(&self.live())
            .or_else(|| self.finished_by_id(key))
            .or_else(|| named(&self.finished()))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::PipelineNotFound,
                    format!(
                        "no pipeline with id or name {key:?}; fugue_agent_pipeline_status lists \
                     them (give `repo` to load a repository's pipelines)"
                    ),
                )
            })
    }

    /// The pipelines in memory (the unfinished ones, and any just finishing), oldest first.
    pub(crate) fn live(&self) -> Vec<Arc<Handle>> {
        self.inner.lock().handles.clone()
    }

    /// Every pipeline known, oldest first: those in memory, and the finished ones read from disk.
    pub(crate) fn all(&self) -> Vec<Arc<Handle>> {
        let live = self.live();
        let mut all: Vec<Arc<Handle>> = self.finished();
        all.retain(|f| !live.iter().any(|h| h.id == f.id));
        all.extend(live);
        crate::sort::sort_by_key(&mut all, |h| h.created_at);
        all
    }

    /// The finished pipeline with this id, read from its state file: one file, not all of them.
    /// A key that reads as no pipeline id names none.
    fn finished_by_id(&self, key: &str) -> Option<Arc<Handle>> {
        let id: PipelineId = key.parse().ok().filter(|id: &PipelineId| valid_id(id))?;
        let stores: Vec<Arc<Store>> = self.inner.lock().stores.values().cloned().collect();
        stores.iter().find_map(|store| {
            let pipeline = store.load(&id).ok().filter(|p| p.status.is_terminal())?;
            Some(Arc::new(Handle::new(store, pipeline, Arc::default())))
        })
    }

    /// The finished pipelines of every loaded state root, read from disk now.
    fn finished(&self) -> Vec<Arc<Handle>> {
        let stores: Vec<Arc<Store>> = self.inner.lock().stores.values().cloned().collect();
        let mut finished = Vec::new();
        for store in &stores {
            for pipeline in store.load_finished() {
                finished.push(Arc::new(Handle::new(store, pipeline, Arc::default())));
            }
        }
        finished
    }

    /// Reads the state of the pipelines other processes drive; those found finished leave memory.
    pub(crate) fn refresh_foreign(&self) {
        for handle in self.live().iter().filter(|h| !h.is_driven_here()) {
            handle.refresh();
        }
        self.inner.lock().handles.retain(|h| h.is_driven_here() || !h.is_terminal());
    }

    /// How many pipelines are held in memory.
    #[cfg(test)]
    fn in_memory(&self) -> usize {
        self.inner.lock().handles.len()
    }

    /// State files that could not be loaded.
    pub(crate) fn problems(&self) -> Vec<Problem> {
        self.inner.lock().problems.clone()
    }

    /// Hands a control action to the pipeline's runner and waits until it is applied.
    pub(crate) fn control(
        &self,
        handle: &Handle,
        action: Control,
        limits: Option<Limits>,
        cancel: &Cancel,
    ) -> Result<()> {
        let ended = |p: &AgentPipeline| {
            Error::new(
                ErrorKind::InvalidState,
                format!("the pipeline is {}; nothing is left to control", p.status.name()),
            )
        };
        handle.refresh();
        let snapshot = handle.snapshot();
        if snapshot.status.is_terminal() {
            return Err(ended(&snapshot));
        }
        let Some(runner) = &handle.runner else {
            return Err(Error::new(
                ErrorKind::InvalidState,
                format!(
                    "this process does not drive the pipeline ({}); control it through the fugue \
                     server that does",
                    handle.driven_by()
                ),
            ));
        };
        let (reply, answer) = crossbeam_channel::bounded(1);
        let command = ControlRequest { action, limits, reply };
        if runner.commands.send_timeout(command, CONTROL_PATIENCE).is_err() {
            return Err(ended(&handle.snapshot()));
        }
        select! {
            recv(answer) -> got => got.unwrap_or_else(|_| Err(ended(&handle.snapshot()))),
            recv(cancel.receiver()) -> _ => Err(Error::cancelled()),
            recv(after(CONTROL_PATIENCE)) -> _ => Err(Error::new(
                ErrorKind::InvalidState,
                "the pipeline's runner did not take the action within 60 s (a git command may be \
                 slow); check its status and try again",
            )),
        }
    }

    /// Stops every runner without changing any state, so the next fugue resumes them.
    pub(crate) fn shutdown(&self) {
        self.stopping.cancel();
        let deadline = Instant::now() + SHUTDOWN_PATIENCE;
        let mut running = self.runners.lock();
        while *running > 0 && self.exits.1.recv_deadline(deadline).is_ok() {
            *running -= 1;
        }
    }
}

/// Where a pipeline read from disk picks up: a running stage runs again as a new attempt (or
/// blocks when its attempts are spent); a blocked pipeline waits for control.
fn resume(pipeline: AgentPipeline) -> (AgentPipeline, Step) {
    match pipeline.status {
        record::PipelineStatus::Running => {
            let t = machine::next(&pipeline, Event { at: now(), kind: EventKind::Interrupted });
            match t.step {
                Step::Refuse(_) => (pipeline, Step::Wait),
                step => (t.pipeline, step),
            }
        }
        _ => (pipeline, Step::Wait),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::record::PipelineStatus;

    fn cancelled(name: String) -> AgentPipeline {
        let mut p = crate::agent::record::sample(&crate::ids::new_handle(|_| false), Some(name));
        p.status = PipelineStatus::Cancelled;
        p
    }

    #[test]
    fn finished_pipelines_leave_memory_and_are_read_from_disk() {
        let root = std::env::temp_dir().join(format!("fugue-manager-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let manager =
            Manager::new(Arc::new(Mux::default()), Settings::of(crate::config::config()), true);
        let store = manager.load_root(&root, true).unwrap().unwrap();
        let mut ids = Vec::new();
        for n in 0..5 {
            let pipeline = cancelled(format!("p{n}"));
            store.save(&pipeline).unwrap();
            let lock = store.lock(&pipeline.id).unwrap().unwrap();
            ids.push(pipeline.id.clone());
            // Its runner publishes the end and returns, as after a cancel.
            manager.register(&store, pipeline, Some((lock, Step::Done)), false);
        }
        // Each runner signals on its way out, after its pipeline left memory.
        for _ in &ids {
            manager.exits.1.recv_timeout(Duration::from_secs(10)).unwrap();
        }
        assert_eq!(manager.in_memory(), 0);
        assert_eq!(manager.all().len(), ids.len());
        for (n, id) in ids.iter().enumerate() {
            let found = manager.find(id).unwrap();
            assert_eq!(found.snapshot().status, PipelineStatus::Cancelled);
            assert_eq!(manager.find(&format!("p{n}")).unwrap().id, *id);
        }
        // A finished pipeline's name stays taken.
        assert_eq!(manager.reserve(Some("p0")).unwrap_err().kind(), ErrorKind::NameTaken);
        let _ = std::fs::remove_dir_all(&root);
    }
}
