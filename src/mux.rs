//! The registry of sessions, windows and panes.
//!
//! Sessions hold windows, windows hold panes, and every pane is also indexed by id. Ids are UUID v4;
//! every lookup also accepts the object's unique name. Panes are spawned outside the registry lock
//! (a spawn forks and execs), with a reservation so that limits and names hold under concurrency.
//! A reservation also takes the pane's place in its window before the spawn, so the pane starts at
//! the size of its final tile: several panes reserved together start at the sizes they will keep,
//! and a program that reads its terminal size as it starts sees its tile, never the whole window.
//! When fugue exits, `shutdown` ends every pane at once. Watchers (`fugue attach`, through the
//! control socket) subscribe to `changes`, which wakes them when panes come and go or a window is
//! resized; a pane's own output has its own watch.

use crate::config::config;
use crate::error::{Error, ErrorKind, Result};
use crate::ids::new_id;
use crate::layout;
use crate::pane::exit::Exit;
use crate::pane::{Pane, Spec};
use crate::tempdir::TempDirs;
use crate::watch::Watch;
use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

/// The fewest characters of a pane id that name it by prefix: fewer would collide too often.
const MIN_PREFIX: usize = 4;

/// The session that `fugue_run_parallel` and `fugue_run_pipeline` put their panes in by default.
pub(crate) const ORCHESTRATION_SESSION: &str = "__orchestration__";

/// What a new pane runs, where, and under what name.
#[derive(Clone)]
pub(crate) struct PaneArgs {
    pub(crate) name: Option<String>,
    pub(crate) command: Option<String>,
    /// The caller's choice made absolute against its own directory (`tool::Ctx::dir`): a pane
    /// always says where it starts, so a shared server never falls back to its own `/`.
    pub(crate) cwd: PathBuf,
    pub(crate) env: Vec<(String, String)>,
    /// An interactive shell gets fugue's shell integration (on unless `integration: false`).
    pub(crate) integration: bool,
    /// A sandbox stricter than the server's (`None`: the server's).
    pub(crate) sandbox: Option<crate::sandbox::Mode>,
    /// In a sandbox, the only writable roots, in place of the server's (an agent stage's
    /// worktree).
    pub(crate) roots: Option<Vec<PathBuf>>,
}

impl PaneArgs {
    /// An interactive shell in `cwd`, with the integration.
    pub(crate) fn shell(cwd: PathBuf) -> PaneArgs {
        PaneArgs {
            name: None,
            command: None,
            cwd,
            env: Vec::new(),
            integration: true,
            sandbox: None,
            roots: None,
        }
    }
}

pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) created_at: SystemTime,
    pub(crate) windows: Vec<Window>,
    next_window: u64,
}

pub(crate) struct Window {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) rows: u16,
    pub(crate) cols: u16,
    /// The panes in tiling order, including reserved ones still starting (not yet in the
    /// registry's pane index): the tiling counts them, so nobody's tile changes when they arrive.
    pub(crate) panes: Vec<String>,
}

#[derive(Default)]
struct Inner {
    sessions: Vec<Session>,
    panes: HashMap<String, Arc<Pane>>,
    /// Pane names and slots held by spawns in progress.
    reserved_names: HashSet<String>,
    reserved_panes: usize,
    next_session: u64,
}

#[derive(Default)]
pub(crate) struct Mux {
    inner: Mutex<Inner>,
    /// Woken after a pane is added or removed and after a window is resized.
    changes: Watch,
    /// Where live shells register their private directories (the runtime's registry).
    temp_dirs: Arc<TempDirs>,
}

/// Where a new pane goes.
pub(crate) enum Place<'a> {
    /// A window of its own, made for it.
    NewWindow { session: &'a str, name: Option<String> },
    /// An existing window, beside the panes already there.
    Window { session: &'a str, window: &'a str },
}

/// A pane's slot, held in the registry from `reserve` until `start`: it counts against the limits,
/// holds its name and its tile, and knows its size. Dropped without being started, it gives all
/// of that back.
pub(crate) struct Reserved<'m> {
    mux: &'m Mux,
    /// `None` once started.
    slot: Option<Slot>,
}

struct Slot {
    spec: Spec,
    /// The window was made for this pane, so it goes if the pane cannot start.
    own_window: bool,
    /// An interactive shell gets a live shell above it (see `shell::stand_above`).
    integration: bool,
    /// A live shell made beforehand (see `Reserved::with_shell`).
    shell: Option<Arc<crate::shell::Shell>>,
}

impl Reserved<'_> {
    /// Sets what the pane's `command` shows in place of the command it runs.
    pub(crate) fn show_as(&mut self, shown: String) {
        if let Some(slot) = &mut self.slot {
            slot.spec.shown = Some(shown);
        }
    }

    /// Gives the pane a shell integration made beforehand, for a command that ends by starting an
    /// interactive shell with it (a kept pipeline pane's shell, which replaces the steps' one).
    pub(crate) fn with_shell(&mut self, shell: Arc<crate::shell::Shell>) {
        if let Some(slot) = &mut self.slot {
            slot.shell = Some(shell);
        }
    }
}

impl Reserved<'_> {
    /// Keeps the pane's own private directory `dir` reachable from inside its sandbox.
    pub(crate) fn keep(&mut self, dir: PathBuf) {
        if let Some(slot) = &mut self.slot {
            slot.spec.keep.push(dir);
        }
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let spec = &slot.spec;
            let name = spec.name.as_ref();
            self.mux.inner.lock().release(&spec.id, &spec.window_id, name, slot.own_window);
            self.mux.changes.notify();
        }
    }
}

impl Mux {
    /// A registry whose live shells register their private directories in `temp_dirs`.
    pub(crate) fn new(temp_dirs: Arc<TempDirs>) -> Mux {
        Mux { temp_dirs, ..Mux::default() }
    }

    pub(crate) fn create_session(
        &self,
        name: Option<String>,
        pane: PaneArgs,
    ) -> Result<(String, String, Arc<Pane>)> {
        let session_id = self.add_session(name)?;
        let place = Place::NewWindow { session: &session_id, name: None };
        match self.add_pane(place, pane) {
            Ok(pane) => Ok((session_id, pane.window_id.clone(), pane)),
            Err(e) => {
                self.inner.lock().sessions.retain(|s| s.id != session_id);
                Err(e)
            }
        }
    }

    pub(crate) fn create_window(
        &self,
        session: &str,
        name: Option<String>,
        pane: PaneArgs,
    ) -> Result<Arc<Pane>> {
        self.add_pane(Place::NewWindow { session, name }, pane)
    }

    pub(crate) fn create_pane(
        &self,
        session: &str,
        window: &str,
        pane: PaneArgs,
    ) -> Result<Arc<Pane>> {
        self.add_pane(Place::Window { session, window }, pane)
    }

    /// The id of the session named `name`, created empty if it does not exist yet.
    pub(crate) fn ensure_session(&self, name: &str) -> Result<String> {
        if let Some(s) = self.inner.lock().sessions.iter().find(|s| s.name == name) {
            return Ok(s.id.clone());
        }
        self.add_session(Some(name.to_string())).or_else(|e| {
            // Another call may have created it between the look and the add.
            let inner = self.inner.lock();
            inner.sessions.iter().find(|s| s.name == name).map(|s| s.id.clone()).ok_or(e)
        })
    }

    /// Adds an empty window to a session, for callers that then start several panes in it at once
    /// (`reserve`, then `start` each). A window left empty stays until its session is closed.
    pub(crate) fn add_window(&self, session: &str, name: Option<String>) -> Result<String> {
        let mut inner = self.inner.lock();
        let (s, w) = inner.new_window(session, name)?;
        Ok(inner.sessions[s].windows[w].id.clone())
    }

    /// The pane `key` names: see `Inner::find_pane`.
    pub(crate) fn pane(&self, key: &str) -> Result<Arc<Pane>> {
        self.inner.lock().find_pane(key).cloned()
    }

    /// Removes the pane from the registry, then ends its processes. Lookups fail from the moment the
    /// call begins, so no new input reaches a pane that is going away.
    pub(crate) fn close_pane(&self, key: &str) -> Result<(Arc<Pane>, Option<Exit>)> {
        let pane = self.inner.lock().detach_pane(key)?;
        self.changes.notify();
        let exit = pane.close();
        Ok((pane, exit))
    }

    /// Closes several panes at once, in the order named; every key is looked up before any pane
    /// is touched, so an unknown one closes nothing.
    pub(crate) fn close_panes(&self, keys: &[String]) -> Result<Vec<(Arc<Pane>, Option<Exit>)>> {
        let panes = {
            let mut inner = self.inner.lock();
            let mut ids: Vec<String> = Vec::with_capacity(keys.len());
            for key in keys {
                let id = inner.find_pane(key)?.id.clone();
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            ids.iter().map(|id| inner.detach_pane(id)).collect::<Result<Vec<_>>>()?
        };
        self.changes.notify();
        Ok(close_all(panes))
    }

    /// Closes together those of `panes` still in the registry, removing them first as
    /// `close_pane` does; one that someone else closed meanwhile is already gone and is skipped.
    pub(crate) fn close_remaining(&self, panes: &[Arc<Pane>]) -> Vec<(Arc<Pane>, Option<Exit>)> {
        let panes: Vec<Arc<Pane>> = {
            let mut inner = self.inner.lock();
            // By id only: the pane, not whatever a name or prefix would find now.
            let present: Vec<&Arc<Pane>> =
                panes.iter().filter(|p| inner.panes.contains_key(&p.id)).collect();
            present.into_iter().filter_map(|p| inner.detach_pane(&p.id).ok()).collect()
        };
        if !panes.is_empty() {
            self.changes.notify();
        }
        close_all(panes)
    }

    /// Closes every pane of a session at once and removes it; returns each pane with its exit.
    pub(crate) fn close_session(&self, key: &str) -> Result<Vec<(Arc<Pane>, Option<Exit>)>> {
        let panes = {
            let mut inner = self.inner.lock();
            let index = inner.session_index(key).ok_or_else(|| session_not_found(key))?;
            let session = inner.sessions.remove(index);
            let ids: Vec<String> = session.windows.iter().flat_map(|w| w.panes.clone()).collect();
            ids.iter().filter_map(|id| inner.panes.remove(id)).collect::<Vec<_>>()
        };
        self.changes.notify();
        Ok(close_all(panes))
    }

    /// Ends every pane; used when fugue exits.
    pub(crate) fn shutdown(&self) {
        let panes: Vec<Arc<Pane>> = {
            let mut inner = self.inner.lock();
            inner.sessions.clear();
            inner.panes.drain().map(|(_, p)| p).collect()
        };
        self.changes.notify();
        close_all(panes);
    }

    /// Sets a window's size and re-tiles its running panes to share it; what an attached terminal
    /// does when it shows the window or changes size.
    pub(crate) fn resize_window(
        &self,
        session: &str,
        window: &str,
        rows: u16,
        cols: u16,
    ) -> Result<()> {
        crate::pane::check_size(rows, cols)?;
        {
            let mut inner = self.inner.lock();
            let s = inner.session_index(session).ok_or_else(|| session_not_found(session))?;
            let session = &mut inner.sessions[s];
            let w = window_index(session, window).ok_or_else(|| window_not_found(window))?;
            let window = &mut session.windows[w];
            window.rows = rows;
            window.cols = cols;
            let ids = window.panes.clone();
            inner.retile(&ids, rows, cols);
        }
        self.changes.notify();
        Ok(())
    }

    /// A channel that receives a token after every change of the tree or of a window's size.
    /// Subscribe before looking, as with a pane's output.
    pub(crate) fn subscribe(&self) -> Receiver<()> {
        self.changes.subscribe()
    }

    /// Runs `f` over the sessions in creation order, under the registry lock.
    pub(crate) fn with_sessions<T>(
        &self,
        f: impl FnOnce(&[Session], &dyn Fn(&str) -> Option<Arc<Pane>>) -> T,
    ) -> T {
        let inner = self.inner.lock();
        let lookup = |id: &str| inner.panes.get(id).cloned();
        f(&inner.sessions, &lookup)
    }

    fn add_session(&self, name: Option<String>) -> Result<String> {
        let mut inner = self.inner.lock();
        if inner.sessions.len() >= config().max_sessions {
            return Err(Error::new(
                ErrorKind::LimitReached,
                format!(
                    "fugue already has {} sessions (FUGUE_MAX_SESSIONS); close one with \
                     fugue_close_session",
                    inner.sessions.len()
                ),
            ));
        }
        let name = match name {
            Some(name) => {
                if inner.sessions.iter().any(|s| s.name == name || s.id == name) {
                    return Err(name_taken("session", &name));
                }
                name
            }
            None => inner.free_session_name(),
        };
        let id = new_id();
        inner.sessions.push(Session {
            id: id.clone(),
            name,
            created_at: SystemTime::now(),
            windows: Vec::new(),
            next_window: 0,
        });
        Ok(id)
    }

    fn add_pane(&self, place: Place<'_>, args: PaneArgs) -> Result<Arc<Pane>> {
        let reserved = self.reserve(&place, std::slice::from_ref(&args)).pop();
        self.start(reserved.unwrap_or_else(|| Err(Error::internal("no reservation")))?)
    }

    /// Reserves a slot for each pane at `place`, all under one lock, and sizes each to the tile it
    /// will have once all of them are there. A `NewWindow` place makes a window for each.
    pub(crate) fn reserve(
        &self,
        place: &Place<'_>,
        args: &[PaneArgs],
    ) -> Vec<Result<Reserved<'_>>> {
        let mut inner = self.inner.lock();
        let mut slots: Vec<Result<Slot>> = args.iter().map(|a| inner.reserve(place, a)).collect();
        for slot in slots.iter_mut().flatten() {
            inner.size(&mut slot.spec);
        }
        slots.into_iter().map(|slot| slot.map(|s| Reserved { mux: self, slot: Some(s) })).collect()
    }

    /// Spawns a reserved pane at its reserved size and puts it in its place.
    pub(crate) fn start(&self, mut reserved: Reserved<'_>) -> Result<Arc<Pane>> {
        let Some(Slot { mut spec, own_window, integration, shell }) = reserved.slot.take() else {
            return Err(Error::internal("a pane's slot was started twice"));
        };
        let (id, window, name) = (spec.id.clone(), spec.window_id.clone(), spec.name.clone());
        let spawned = crate::shell::stand_above(&mut spec, shell, integration, &self.temp_dirs)
            .and_then(|()| Pane::spawn(spec));
        let mut inner = self.inner.lock();
        let pane = match spawned {
            Ok(pane) => {
                inner.unreserve(name.as_ref());
                pane
            }
            Err(e) => {
                inner.release(&id, &window, name.as_ref(), own_window);
                drop(inner);
                self.changes.notify();
                return Err(e);
            }
        };
        if let Err(e) = inner.attach(&pane) {
            drop(inner);
            pane.close();
            return Err(e);
        }
        drop(inner);
        self.changes.notify();
        Ok(pane)
    }
}

impl Inner {
    /// The pane `key` names, as an agent would say it: its id or name; a session's or window's id
    /// or name when that holds exactly one pane; or an unambiguous prefix of its id, at least
    /// `MIN_PREFIX` characters long (an ambiguous one is an error that lists the candidates).
    fn find_pane(&self, key: &str) -> Result<&Arc<Pane>> {
        let by_name = || self.panes.values().find(|p| p.name.as_deref() == Some(key));
        if let Some(pane) = self.panes.get(key).or_else(by_name).or_else(|| self.only_pane(key)) {
            return Ok(pane);
        }
        if key.chars().count() < MIN_PREFIX {
            return Err(pane_not_found(key));
        }
        let mut found: Vec<(&String, &Arc<Pane>)> =
            self.panes.iter().filter(|(id, _)| id.starts_with(key)).collect();
        match found.len() {
            0 => Err(pane_not_found(key)),
            1 => Ok(found[0].1),
            _ => {
                found.sort_by(|a, b| a.0.cmp(b.0));
                let ids: Vec<&str> = found.iter().map(|(id, _)| id.as_str()).collect();
                Err(Error::invalid(format!(
                    "pane id prefix {key:?} names {} panes: {}; give more of the id",
                    ids.len(),
                    ids.join(", ")
                )))
            }
        }
    }

    /// The one pane of the session or window whose id or name is `key`, when exactly one pane
    /// is meant.
    fn only_pane(&self, key: &str) -> Option<&Arc<Pane>> {
        let sessions = self.sessions.iter().filter(|s| s.id == key || s.name == key);
        let windows = self.sessions.iter().flat_map(|s| &s.windows);
        let windows = windows.filter(|w| w.id == key || w.name == key);
        let holders = sessions
            .map(|s| s.windows.iter().flat_map(|w| &w.panes).collect::<Vec<_>>())
            .chain(windows.map(|w| w.panes.iter().collect()));
        let mut only = None;
        for ids in holders {
            let [id] = ids.as_slice() else { return None };
            match only {
                Some(seen) if seen != *id => return None,
                _ => only = Some(*id),
            }
        }
        self.panes.get(only?)
    }

    fn session_index(&self, key: &str) -> Option<usize> {
        self.sessions
            .iter()
            .position(|s| s.id == key)
            .or_else(|| self.sessions.iter().position(|s| s.name == key))
    }

    fn free_session_name(&mut self) -> String {
        loop {
            let name = self.next_session.to_string();
            self.next_session += 1;
            if !self.sessions.iter().any(|s| s.name == name) {
                return name;
            }
        }
    }

    /// Checks limits and names, creates the window if asked, and holds a slot for the pane at the
    /// end of its window. The size is set by `size` once every slot of a batch is taken.
    fn reserve(&mut self, place: &Place<'_>, args: &PaneArgs) -> Result<Slot> {
        let cfg = config();
        if self.panes.len() + self.reserved_panes >= cfg.max_panes {
            return Err(Error::new(
                ErrorKind::LimitReached,
                format!(
                    "fugue already has {} panes (FUGUE_MAX_PANES); close some with fugue_close_pane",
                    self.panes.len() + self.reserved_panes
                ),
            ));
        }
        if let Some(name) = &args.name
            && (self.panes.contains_key(name)
                || self.panes.values().any(|p| p.name.as_ref() == Some(name))
                || self.reserved_names.contains(name))
        {
            return Err(name_taken("pane", name));
        }
        let (s, w) = match place {
            Place::NewWindow { session, name } => self.new_window(session, name.clone())?,
            Place::Window { session, window } => {
                let s = self.session_index(session).ok_or_else(|| session_not_found(session))?;
                let w = window_index(&self.sessions[s], window)
                    .ok_or_else(|| window_not_found(window))?;
                (s, w)
            }
        };
        let id = new_id();
        let session = &mut self.sessions[s];
        let window = &mut session.windows[w];
        window.panes.push(id.clone());
        let spec = Spec {
            id,
            session_id: session.id.clone(),
            window_id: window.id.clone(),
            name: args.name.clone(),
            command: args.command.clone(),
            shown: None,
            program: cfg.shell.clone(),
            args: args.command.iter().flat_map(|c| ["-c".to_string(), c.clone()]).collect(),
            cwd: args.cwd.clone(),
            env: args.env.clone(),
            rows: window.rows,
            cols: window.cols,
            above: None,
            sandbox: args.sandbox,
            roots: args.roots.clone(),
            keep: Vec::new(),
        };
        self.reserved_panes += 1;
        if let Some(name) = &args.name {
            self.reserved_names.insert(name.clone());
        }
        let own_window = matches!(place, Place::NewWindow { .. });
        Ok(Slot { spec, own_window, integration: args.integration, shell: None })
    }

    /// Sets a reserved pane's size to its tile in its window as the window is now.
    fn size(&self, spec: &mut Spec) {
        let Some(window) = self.window(&spec.window_id) else { return };
        let rects = layout::tile(window.panes.len(), window.rows, window.cols);
        if let Some(at) = window.panes.iter().position(|id| *id == spec.id) {
            spec.rows = rects[at].rows;
            spec.cols = rects[at].cols;
        }
    }

    fn window(&self, id: &str) -> Option<&Window> {
        self.sessions.iter().flat_map(|s| &s.windows).find(|w| w.id == id)
    }

    /// Adds an empty window; returns its session's and its own index.
    fn new_window(&mut self, session: &str, name: Option<String>) -> Result<(usize, usize)> {
        let s = self.session_index(session).ok_or_else(|| session_not_found(session))?;
        let session = &mut self.sessions[s];
        let name = match name {
            Some(name) => {
                if window_index(session, &name).is_some() {
                    return Err(name_taken("window", &name));
                }
                name
            }
            None => loop {
                let name = session.next_window.to_string();
                session.next_window += 1;
                if window_index(session, &name).is_none() {
                    break name;
                }
            },
        };
        let (rows, cols) = (config().rows, config().cols);
        session.windows.push(Window { id: new_id(), name, rows, cols, panes: Vec::new() });
        Ok((s, session.windows.len() - 1))
    }

    /// Puts a spawned pane into the slot reserved for it and re-tiles the window, in case other
    /// panes came or went while it started.
    fn attach(&mut self, pane: &Arc<Pane>) -> Result<()> {
        let window = self.window(&pane.window_id).filter(|w| w.panes.contains(&pane.id));
        let Some(window) = window else {
            return Err(Error::new(
                ErrorKind::WindowNotFound,
                "the window was closed while the pane started",
            ));
        };
        let (ids, rows, cols) = (window.panes.clone(), window.rows, window.cols);
        self.panes.insert(pane.id.clone(), pane.clone());
        self.retile(&ids, rows, cols);
        Ok(())
    }

    /// Sizes every running pane of a window to its tile. An exited pane keeps the size its
    /// program last had, so its final screen reads as the program left it (views cut it to its
    /// tile); it was created at its tile's size, so it fits unless the window shrank since.
    fn retile(&self, ids: &[String], rows: u16, cols: u16) {
        for (id, rect) in ids.iter().zip(layout::tile(ids.len(), rows, cols)) {
            if let Some(pane) = self.panes.get(id)
                && pane.size() != (rect.rows, rect.cols)
                && pane.is_running()
            {
                let _ = pane.resize(rect.rows, rect.cols);
            }
        }
    }

    /// Ends a reservation's hold on the limits and the pane's name.
    fn unreserve(&mut self, name: Option<&String>) {
        self.reserved_panes -= 1;
        if let Some(name) = name {
            self.reserved_names.remove(name);
        }
    }

    /// Gives up the slot of a pane that did not start; a window made for it goes too.
    fn release(&mut self, id: &str, window_id: &str, name: Option<&String>, own_window: bool) {
        self.unreserve(name);
        let mut retile = None;
        for session in &mut self.sessions {
            if let Some(window) = session.windows.iter_mut().find(|w| w.id == window_id) {
                window.panes.retain(|pane| pane != id);
                retile = Some((window.panes.clone(), window.rows, window.cols));
                if own_window && window.panes.is_empty() {
                    session.windows.retain(|w| w.id != window_id);
                }
            }
        }
        if let Some((ids, rows, cols)) = retile {
            self.retile(&ids, rows, cols);
        }
    }

    /// Takes a pane out of the registry; an emptied window goes, and so does an emptied session.
    fn detach_pane(&mut self, key: &str) -> Result<Arc<Pane>> {
        let pane = self.find_pane(key)?.clone();
        self.panes.remove(&pane.id);
        let mut retile = None;
        if let Some(session) = self.sessions.iter_mut().find(|s| s.id == pane.session_id) {
            if let Some(window) = session.windows.iter_mut().find(|w| w.id == pane.window_id) {
                window.panes.retain(|id| *id != pane.id);
                retile = Some((window.panes.clone(), window.rows, window.cols));
            }
            session.windows.retain(|w| !w.panes.is_empty());
        }
        self.sessions.retain(|s| !s.windows.is_empty() || s.name == ORCHESTRATION_SESSION);
        if let Some((ids, rows, cols)) = retile {
            self.retile(&ids, rows, cols);
        }
        Ok(pane)
    }
}

fn window_index(session: &Session, key: &str) -> Option<usize> {
    session
        .windows
        .iter()
        .position(|w| w.id == key)
        .or_else(|| session.windows.iter().position(|w| w.name == key))
}

/// Ends panes together (see `pane::close_panes`) and pairs each with how it ended.
fn close_all(panes: Vec<Arc<Pane>>) -> Vec<(Arc<Pane>, Option<Exit>)> {
    let refs: Vec<&Pane> = panes.iter().map(|p| p.as_ref()).collect();
    let exits = crate::pane::close_panes(&refs);
    panes.iter().cloned().zip(exits).collect()
}

pub(crate) fn pane_not_found(key: &str) -> Error {
    Error::new(
        ErrorKind::PaneNotFound,
        format!("no pane with id or name {key:?}; fugue_list_sessions shows the panes"),
    )
}

fn session_not_found(key: &str) -> Error {
    Error::new(
        ErrorKind::SessionNotFound,
        format!("no session with id or name {key:?}; fugue_list_sessions shows the sessions"),
    )
}

fn window_not_found(key: &str) -> Error {
    Error::new(
        ErrorKind::WindowNotFound,
        format!(
            "no window with id or name {key:?} in that session; fugue_list_sessions shows them"
        ),
    )
}

fn name_taken(what: &str, name: &str) -> Error {
    Error::new(
        ErrorKind::NameTaken,
        format!("a {what} named {name:?} already exists; pick another name"),
    )
}

#[cfg(test)]
mod tests;
