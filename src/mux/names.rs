//! How the registry finds what a key names and names what it makes: a pane by id, name, the one
//! pane of a session or window, or an id prefix; sessions and windows by id or name; new sessions
//! and windows, under a name of their own or the next free number; and the errors that say a key
//! names nothing or a name is taken.

use super::tree::{Inner, Session, Setup, Window};
use crate::error::{Error, ErrorKind, Result};
use crate::ids::{PaneId, SessionId, WindowId};
use crate::pane::Pane;
use std::sync::Arc;
use std::time::SystemTime;

/// The fewest characters of a pane id that name it by prefix: fewer would collide too often.
const MIN_PREFIX: usize = 4;

/// A name of a session, window or pane has no `:`, since `HOST:NAME` names one on a host
/// (`remote`), and as tmux's do not: the one reading every key is then certain.
pub(super) fn check_name(kind: &str, name: &str) -> Result<()> {
    if !name.contains(':') {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "{kind} name {name:?} has a ':', which names a host (HOST:NAME is one on that host); \
         choose a name without ':'"
    )))
}

impl Inner {
    /// Adds an empty session named `name`, or the next free number.
    pub(super) fn add_session(&mut self, name: Option<String>) -> Result<SessionId> {
        if self.sessions.len() >= self.limits.max_sessions {
            return Err(Error::new(
                ErrorKind::LimitReached,
                format!(
                    "fugue already has {} sessions (FUGUE_MAX_SESSIONS); close one with \
                     fugue_close_session",
                    self.sessions.len()
                ),
            ));
        }
        let name = match name {
            Some(name) => {
                check_name("session", &name)?;
                if self.sessions.iter().any(|s| s.name == name || s.id == name) {
                    return Err(name_taken("session", &name));
                }
                name
            }
            None => self.free_session_name(),
        };
        let id = SessionId::new(|h| self.taken(h));
        self.sessions.push(Session {
            id: id.clone(),
            name,
            created_at: SystemTime::now(),
            windows: Vec::new(),
            next_window: 0,
        });
        Ok(id)
    }

    /// Adds an empty window; returns its session's and its own index.
    pub(super) fn new_window(
        &mut self,
        session: &str,
        name: Option<String>,
    ) -> Result<(usize, usize)> {
        let s = self.session_index(session).ok_or_else(|| session_not_found(session))?;
        let session = &mut self.sessions[s];
        let name = match name {
            Some(name) => {
                check_name("window", &name)?;
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
        let Setup { rows, cols, .. } = self.limits;
        let id = WindowId::new(|h| self.taken(h));
        let session = &mut self.sessions[s];
        session.windows.push(Window { id, name, rows, cols, panes: Vec::new() });
        Ok((s, session.windows.len() - 1))
    }

    /// Whether a handle for a new session, window or pane is taken: one of those the registry
    /// holds (reserved panes among them, which their windows list) has it as its id or name.
    pub(super) fn taken(&self, h: &str) -> bool {
        {
            self.sessions.iter().any(|s| {
                s.id == h
                    || s.name == h
                    || s.windows
                        .iter()
                        .any(|w| w.id == h || w.name == h || w.panes.iter().any(|p| p == h))
            }) || self.panes.values().any(|p| p.name.as_deref() == Some(h))
                || self.reserved_names.contains(h)
        }
    }

    /// A handle for a new pane.
    pub(super) fn new_pane_id(&self) -> PaneId {
        PaneId::new(|h| self.taken(h))
    }

    /// The pane `key` names, as an agent would say it: its id or name; a session's or window's id
    /// or name when that holds exactly one pane; or an unambiguous prefix of its id, at least
    /// `MIN_PREFIX` characters long (an ambiguous one is an error that lists the candidates).
    pub(super) fn find_pane(&self, key: &str) -> Result<&Arc<Pane>> {
        let by_name = || self.panes.values().find(|p| p.name.as_deref() == Some(key));
        if let Some(pane) = self.panes.get(key).or_else(by_name).or_else(|| self.only_pane(key)) {
            return Ok(pane);
        }
        if key.chars().count() < MIN_PREFIX {
            return Err(pane_not_found(key));
        }
        let mut found: Vec<(&PaneId, &Arc<Pane>)> =
            self.panes.iter().filter(|(id, _)| id.starts_with(key)).collect();
        match found.len() {
            0 => Err(pane_not_found(key)),
            1 => Ok(found[0].1),
            _ => {
                crate::sort::sort_by(&mut found, |a, b| a.0.cmp(b.0));
                let ids: Vec<&str> = found.iter().map(|(id, _)| &id[..]).collect();
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
    pub(super) fn only_pane(&self, key: &str) -> Option<&Arc<Pane>> {
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

    pub(super) fn session_index(&self, key: &str) -> Option<usize> {
        self.sessions
            .iter()
            .position(|s| s.id == key)
            .or_else(|| self.sessions.iter().position(|s| s.name == key))
    }

    pub(super) fn free_session_name(&mut self) -> String {
        loop {
            let name = self.next_session.to_string();
            self.next_session += 1;
            if !self.sessions.iter().any(|s| s.name == name) {
                return name;
            }
        }
    }
}

pub(super) fn window_index(session: &Session, key: &str) -> Option<usize> {
    session
        .windows
        .iter()
        .position(|w| w.id == key)
        .or_else(|| session.windows.iter().position(|w| w.name == key))
}

pub(super) fn pane_not_found(key: &str) -> Error {
    Error::new(
        ErrorKind::PaneNotFound,
        format!("no pane with id or name {key:?}; fugue_list_sessions shows the panes"),
    )
}

pub(super) fn session_not_found(key: &str) -> Error {
    Error::new(
        ErrorKind::SessionNotFound,
        format!("no session with id or name {key:?}; fugue_list_sessions shows the sessions"),
    )
}

pub(super) fn window_not_found(key: &str) -> Error {
    Error::new(
        ErrorKind::WindowNotFound,
        format!(
            "no window with id or name {key:?} in that session; fugue_list_sessions shows them"
        ),
    )
}

pub(super) fn name_taken(what: &str, name: &str) -> Error {
    Error::new(
        ErrorKind::NameTaken,
        format!("a {what} named {name:?} already exists; pick another name"),
    )
}
