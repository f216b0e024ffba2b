//! The registry of sessions, windows and panes.
//!
//! Sessions hold windows, windows hold panes, and every pane is also indexed by id. Ids are short
//! handles (`ids::new_handle`: 8 hex digits, none the registry holds);
//! every lookup also accepts the object's unique name. Panes are spawned outside the registry lock
//! (a spawn forks and execs), with a reservation so that limits and names hold under concurrency.
//! A reservation also takes the pane's place in its window before the spawn, so the pane starts at
//! the size of its final tile: several panes reserved together start at the sizes they will keep,
//! and a program that reads its terminal size as it starts sees its tile, never the whole window.
//! When fugue exits, `shutdown` ends every pane at once. Watchers (`fugue attach`, through the
//! control socket) subscribe to `changes`, which wakes them when panes come and go or a window is
//! resized; a pane's own output has its own watch.
//!
//! Here: the registry's operations. Its data under the one lock, the limits and the tiling of a
//! window's panes are in `tree.rs`; reservations, and what a new pane is made from, in
//! `reserve.rs`; how a key finds a pane, session or window, new names and the not-found errors in
//! `names.rs`.

use crate::error::{Error, ErrorKind, Result};
use crate::ids::{PaneId, SessionId, WindowId};
use crate::pane::Pane;
use crate::pane::exit::Exit;
use crate::watch::Watch;
use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use std::sync::Arc;

mod names;
mod reserve;
mod tree;

use names::{session_not_found, window_index, window_not_found};
#[cfg(test)]
use reserve::NoShell;
use reserve::Slot;
pub(crate) use reserve::{PaneArgs, Place, Reserved, StandsAbove};
use tree::Inner;
pub(crate) use tree::{Session, Setup};

/// The session that `fugue_run_parallel` and `fugue_run_pipeline` put their panes in by default.
pub(crate) const ORCHESTRATION_SESSION: &str = "__orchestration__";

/// A new session: its id, its first window's and that window's first pane.
pub(crate) struct StartedSession {
    pub(crate) session_id: SessionId,
    pub(crate) window_id: WindowId,
    pub(crate) pane: Arc<Pane>,
}

/// The registry: one lock over the tree, and a watch for those who follow it.
pub(crate) struct Mux {
    inner: Mutex<Inner>,
    /// Woken after a pane is added or removed and after a window is resized.
    changes: Watch,
    /// What stands a live shell above an interactive pane (the runtime's shells).
    stand: Arc<dyn StandsAbove>,
}

impl Mux {
    /// A registry held to `limits`, whose interactive panes get what `stand` stands above them.
    pub(crate) fn new(stand: Arc<dyn StandsAbove>, limits: Setup) -> Mux {
        let inner = Inner::new(limits);
        Mux { inner: Mutex::new(inner), changes: Watch::default(), stand }
    }

    pub(crate) fn create_session(
        &self,
        name: Option<String>,
        pane: PaneArgs,
    ) -> Result<StartedSession> {
        let session_id = self.inner.lock().add_session(name)?;
        let place = Place::NewWindow { session: &session_id, name: None };
        match self.add_pane(place, pane) {
            Ok(pane) => Ok(StartedSession { window_id: pane.window_id.clone(), session_id, pane }),
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
    pub(crate) fn ensure_session(&self, name: &str) -> Result<SessionId> {
        let mut inner = self.inner.lock();
        if let Some(s) = inner.sessions.iter().find(|s| s.name == name) {
            return Ok(s.id.clone());
        }
        inner.add_session(Some(name.to_string()))
    }

    /// Adds an empty window to a session, for callers that then start several panes in it at once
    /// (`reserve`, then `start` each). A window left empty stays until its session is closed.
    pub(crate) fn add_window(&self, session: &str, name: Option<String>) -> Result<WindowId> {
        let mut inner = self.inner.lock();
        let (s, w) = inner.new_window(session, name)?;
        Ok(inner.sessions[s].windows[w].id.clone())
    }

    /// The server's sandbox policy: a new pane's unless its call asks for its own.
    pub(crate) fn sandbox(&self) -> Arc<crate::sandbox::Policy> {
        self.inner.lock().limits.sandbox.clone()
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
            let mut ids: Vec<PaneId> = Vec::with_capacity(keys.len());
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
            let ids: Vec<PaneId> = session.windows.iter().flat_map(|w| w.panes.clone()).collect();
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
        slots
            .into_iter()
            .map(|slot| slot.map(|s| Reserved::new(&self.inner, &self.changes, s)))
            .collect()
    }

    /// Spawns a reserved pane at its reserved size and puts it in its place.
    pub(crate) fn start(&self, mut reserved: Reserved<'_>) -> Result<Arc<Pane>> {
        let Some(Slot { mut spec, own_window, integration, above }) = reserved.slot.take() else {
            return Err(Error::internal("a pane's slot was started twice"));
        };
        let (id, window, name) = (spec.id.clone(), spec.window_id.clone(), spec.name.clone());
        let stood = match above {
            Some(above) => {
                spec.above = Some(above);
                Ok(())
            }
            None if integration && spec.command.is_none() => self.stand.stand_above(&mut spec),
            None => Ok(()),
        };
        let spawned = stood.and_then(|()| Pane::spawn(spec));
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

/// Ends panes together (see `pane::close_panes`) and pairs each with how it ended.
fn close_all(panes: Vec<Arc<Pane>>) -> Vec<(Arc<Pane>, Option<Exit>)> {
    let refs: Vec<&Pane> = panes.iter().map(|p| p.as_ref()).collect();
    let exits = crate::pane::close_panes(&refs);
    panes.iter().cloned().zip(exits).collect()
}

/// A registry with the limits of this process's environment, for unit tests.
#[cfg(test)]
impl Default for Mux {
    fn default() -> Mux {
        Mux::new(Arc::new(NoShell), Setup::of(crate::config::config()))
    }
}

#[cfg(test)]
mod tests;
