//! The pipelines this fugue process knows about: creating them, finding them, loading them from
//! disk and resuming them after a restart.
//!
//! Each pipeline is a `Handle`: its latest published state, a `Watch` woken on every change, and —
//! when this process drives it — the control channel into its runner thread and the `flock` that
//! tells other fugue processes it is taken. A pipeline another live fugue drives is shown from its
//! state file and cannot be controlled from here. State roots are loaded once: `FUGUE_STATE_DIR` at
//! start-up, or a repository's `.state` the first time a tool names that repository. On load, a
//! pipeline whose stage was running when its fugue died runs that stage again as a new attempt (or
//! blocks, if its attempts are spent), and a blocked one waits for control again.

use super::git;
use super::machine::{self, Control, Event, EventKind, Limits, Pipeline, Step};
use super::runner::{self, Command};
use super::store::{Lock, Problem, Store};
use crate::config::config;
use crate::error::{Error, ErrorKind, Result};
use crate::mux::{Mux, new_id, unix_ms};
use crate::pane::output::Watch;
use crate::tool::call::Cancel;
use crossbeam_channel::{Receiver, Sender, after, select};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How long a control action waits for the runner to take it.
const CONTROL_PATIENCE: Duration = Duration::from_secs(60);
/// How long shutdown waits for the runners to let go.
const SHUTDOWN_PATIENCE: Duration = Duration::from_secs(3);

pub(crate) fn now() -> u64 {
    unix_ms(SystemTime::now())
}

/// One pipeline as this process sees it.
pub(crate) struct Handle {
    pub(crate) id: String,
    pub(crate) store: Arc<Store>,
    state: Mutex<Pipeline>,
    watch: Watch,
    driver: Option<Driver>,
    /// Unfinished, yet no process holds its lock (seen from `fugue call`).
    orphaned: bool,
}

/// Present when this process drives the pipeline.
struct Driver {
    control: Sender<Command>,
    /// Held while the runner lives, dropped when it ends: a finished pipeline keeps no descriptor
    /// open (one per pipeline ever run, until fugue ran out of them).
    lock: Mutex<Option<Lock>>,
}

impl Handle {
    /// The pipeline's latest state: published by our runner, or read from disk when another
    /// process drives it.
    pub(crate) fn snapshot(&self) -> Pipeline {
        if self.driver.is_none()
            && !self.state.lock().status.is_terminal()
            && let Ok(fresh) = self.store.load(&self.id)
        {
            *self.state.lock() = fresh;
        }
        self.state.lock().clone()
    }

    /// Lets go of the pipeline's lock once its runner has ended.
    fn release_lock(&self) {
        if let Some(driver) = &self.driver {
            driver.lock.lock().take();
        }
    }

    pub(crate) fn is_driven_here(&self) -> bool {
        self.driver.is_some()
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
        self.watch.subscribe()
    }

    /// Publishes a new state to readers and waiters.
    pub(crate) fn publish(&self, pipeline: &Pipeline, manager: &Manager) {
        *self.state.lock() = pipeline.clone();
        self.watch.notify();
        manager.changed.notify();
    }
}

#[derive(Default)]
struct Inner {
    handles: Vec<Arc<Handle>>,
    /// State roots loaded so far.
    stores: HashMap<PathBuf, Arc<Store>>,
    problems: Vec<Problem>,
    /// Creations in progress, counted against the limit.
    reserved: usize,
}

pub(crate) struct Manager {
    pub(crate) mux: Arc<Mux>,
    /// False in `fugue call`: the process ends with the call, so it only reads.
    drive: bool,
    inner: Mutex<Inner>,
    /// Woken when any pipeline changes.
    changed: Watch,
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
    pub(crate) agents: machine::Agents,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) limits: Limits,
}

impl Manager {
    pub(crate) fn new(mux: Arc<Mux>, drive: bool) -> Arc<Manager> {
        Arc::new(Manager {
            mux,
            drive,
            inner: Mutex::new(Inner::default()),
            changed: Watch::default(),
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
    pub(crate) fn root_for(repo_main: &Path) -> PathBuf {
        config().state_dir.clone().unwrap_or_else(|| repo_main.join(".state"))
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

    /// Registers a pipeline read from disk, and drives it if it is unfinished and free.
    fn adopt(self: &Arc<Manager>, store: &Arc<Store>, pipeline: Pipeline) {
        if self.inner.lock().handles.iter().any(|h| h.id == pipeline.id) {
            return;
        }
        let lock = if pipeline.status.is_terminal() {
            None
        } else {
            match store.lock(&pipeline.id) {
                Ok(lock) => lock,
                Err(e) => {
                    crate::log::warn(&format!("pipeline {}: {e}", pipeline.id));
                    None
                }
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
        pipeline: Pipeline,
        drive: Option<(Lock, Step)>,
        orphaned: bool,
    ) -> Arc<Handle> {
        let (driver, start) = match drive {
            Some((lock, step)) => {
                let (tx, rx) = crossbeam_channel::bounded(8);
                (Some(Driver { control: tx, lock: Mutex::new(Some(lock)) }), Some((rx, step)))
            }
            None => (None, None),
        };
        let handle = Arc::new(Handle {
            id: pipeline.id.clone(),
            store: store.clone(),
            state: Mutex::new(pipeline.clone()),
            watch: Watch::default(),
            driver,
            orphaned,
        });
        self.inner.lock().handles.push(handle.clone());
        self.changed.notify();
        if let Some((control, step)) = start {
            let manager = self.clone();
            let runner_handle = handle.clone();
            let signal = ExitSignal(self.exits.0.clone());
            *self.runners.lock() += 1;
            let spawned = std::thread::Builder::new()
                .name(format!("pipeline-{}", &pipeline.id[..pipeline.id.len().min(8)]))
                .spawn(move || {
                    let _signal = signal;
                    runner::drive(manager, runner_handle.clone(), pipeline, control, step);
                    runner_handle.release_lock();
                });
            if let Err(e) = spawned {
                // The closure, and with it the signal, was dropped: the count is already even.
                crate::log::error(&format!("cannot start a pipeline thread: {e}"));
            }
        }
        handle
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
            .load_root(&Manager::root_for(&repo), true)?
            .ok_or_else(|| Error::internal("the state directory vanished"))?;
        self.reserve(req.name.as_deref())?;
        let created = self.create_reserved(&store, &repo, req);
        self.inner.lock().reserved -= 1;
        created
    }

    fn reserve(&self, name: Option<&str>) -> Result<()> {
        let mut inner = self.inner.lock();
        if let Some(name) = name
            && inner
                .handles
                .iter()
                .any(|h| h.snapshot().name.as_deref() == Some(name) || h.id == name)
        {
            return Err(Error::new(
                ErrorKind::NameTaken,
                format!("a pipeline named {name:?} already exists; pick another name"),
            ));
        }
        let active = inner.handles.iter().filter(|h| !h.snapshot().status.is_terminal()).count()
            + inner.reserved;
        if active >= config().max_pipelines {
            return Err(Error::new(
                ErrorKind::LimitReached,
                format!(
                    "{active} pipelines are already running or blocked (FUGUE_MAX_PIPELINES is \
                     {}); cancel one or wait for one to finish",
                    config().max_pipelines
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
        let id = new_id();
        let branch = format!("fugue/{}", &id[..8]);
        let worktree = store.worktree_path(&id);
        let lock = store.lock(&id)?.ok_or_else(|| Error::internal("a new pipeline id is taken"))?;
        if let Err(e) = git::add_worktree(repo, &worktree, &branch, &base_commit) {
            store.discard_lock(&id, lock);
            return Err(e);
        }
        let job = machine::Job {
            repo: repo.display().to_string(),
            base_branch,
            base_commit: base_commit.clone(),
            branch: branch.clone(),
            worktree: worktree.display().to_string(),
            task: req.task,
            env: req.env,
        };
        let at = now();
        let pipeline = Pipeline::new(id, req.name, req.idea_id, job, req.agents, req.limits, at);
        let start = machine::next(&pipeline, Event { at, kind: EventKind::Start });
        if let Err(e) = store.save(&start.pipeline) {
            git::discard_worktree(repo, &worktree, &branch, &base_commit);
            store.discard_lock(&start.pipeline.id, lock);
            return Err(e);
        }
        Ok(self.register(store, start.pipeline, Some((lock, start.step)), false))
    }

    /// Finds a pipeline by id or name.
    pub(crate) fn find(&self, key: &str) -> Result<Arc<Handle>> {
        let handles = self.inner.lock().handles.clone();
        handles
            .iter()
            .find(|h| h.id == key)
            .or_else(|| handles.iter().find(|h| h.state.lock().name.as_deref() == Some(key)))
            .cloned()
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

    /// Every pipeline known, oldest first.
    pub(crate) fn all(&self) -> Vec<Arc<Handle>> {
        self.inner.lock().handles.clone()
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
        let ended = |p: &Pipeline| {
            Error::new(
                ErrorKind::InvalidState,
                format!("the pipeline is {}; nothing is left to control", p.status.name()),
            )
        };
        let snapshot = handle.snapshot();
        if snapshot.status.is_terminal() {
            return Err(ended(&snapshot));
        }
        let Some(driver) = &handle.driver else {
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
        let command = Command { action, limits, reply };
        if driver.control.send_timeout(command, CONTROL_PATIENCE).is_err() {
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
fn resume(pipeline: Pipeline) -> (Pipeline, Step) {
    match pipeline.status {
        machine::PipelineStatus::Running => {
            let t = machine::next(&pipeline, Event { at: now(), kind: EventKind::Interrupted });
            match t.step {
                Step::Refuse(_) => (pipeline, Step::Wait),
                step => (t.pipeline, step),
            }
        }
        _ => (pipeline, Step::Wait),
    }
}
