//! A pane's own policy, whole: what a call's `sandbox` asks (`CallSandbox`, a mode with perhaps a
//! network and writable roots) made into a `Policy` no looser than the server's, and an agent
//! stage's policy narrowed to its worktree. Either way the pane gets everything the server's own
//! policy would give it — `.git` found for its roots at that moment, fugue's directories covered,
//! the network off unless the server's is on — so a call's sandbox is never half of one.

use super::policy::{Mode, Policy, git_dirs, report};
use crate::error::{Error, Result};
use crate::words::Words;
use std::path::{Path, PathBuf};

/// What a call asked for in its `sandbox` argument.
#[derive(Debug, Default, Clone)]
pub(crate) struct CallSandbox {
    pub(crate) mode: Option<Mode>,
    /// `Some(false)`: no network, even on a server whose network is on.
    pub(crate) network: Option<bool>,
    /// The roots the pane may write, as the call wrote them (relative to its directory).
    pub(crate) writable: Vec<PathBuf>,
}

/// The whole policy of a pane whose call asked `asked`, from the caller's directory `dir`: the
/// `server`'s, tightened. Anything looser than the server's (a mode, a root outside its roots,
/// the network on where it is off) is refused, naming the server's policy.
pub(crate) fn for_call(asked: &CallSandbox, dir: &Path, server: &Policy) -> Result<Policy> {
    let mode = asked.mode.ok_or_else(|| Error::invalid("sandbox: mode is required"))?;
    if mode == Mode::Off || mode > server.mode {
        return Err(looser(server, &format!("sandbox {:?}", mode.name())));
    }
    let writable = roots(asked, mode, dir, server)?;
    let network = match asked.network {
        Some(true) if !server.network => return Err(looser(server, "network \"on\"")),
        Some(on) => on,
        // An unsandboxed server's network is on, but a sandbox's is off unless said otherwise.
        None => server.mode != Mode::Off && server.network,
    };
    let mut hidden = server.hidden.clone();
    let state = state_dirs(&writable, server.state_in_roots);
    hidden.extend(state.filter(|d| !server.hidden.contains(d)));
    // The `.git` to keep read-only: the server's for its own roots, else found when a pane
    // starts (`with_git_now`), so a call that runs in a shell already started under the same
    // policy pays nothing for it.
    let same_roots = server.mode != Mode::Off && writable == server.writable;
    let git = if same_roots { server.git.clone() } else { Vec::new() };
    let git_due = !same_roots && !server.writable_git;
    Ok(Policy { mode, writable, network, git, git_due, hidden, ..Policy::clone(server) })
}

/// A call's policy with the `.git` of its roots found now, as its pane starts (when due).
pub(crate) fn with_git_now(policy: &Policy) -> Policy {
    if !policy.git_due {
        return policy.clone();
    }
    Policy { git: git_dirs(&policy.writable), git_due: false, ..policy.clone() }
}

/// The roots a call's pane writes: those it named, each within the server's roots (any, when the
/// server has none); else the server's; else, on a server without a sandbox, the caller's
/// directory, as `--sandbox` alone gives fugue's.
fn roots(asked: &CallSandbox, mode: Mode, dir: &Path, server: &Policy) -> Result<Vec<PathBuf>> {
    if mode == Mode::ReadOnly {
        if !asked.writable.is_empty() {
            return Err(Error::invalid("sandbox: writable needs mode \"workspace-write\""));
        }
        return Ok(Vec::new());
    }
    if asked.writable.is_empty() {
        return match server.mode {
            Mode::Off => Ok(vec![resolve(dir, Path::new("."))?]),
            _ => Ok(server.writable.clone()),
        };
    }
    let mut roots = Vec::new();
    for root in &asked.writable {
        let real = resolve(dir, root)?;
        let within = server.writable.iter().any(|r| real.starts_with(r));
        if server.mode != Mode::Off && !within {
            return Err(looser(server, &format!("writable {}", root.display())));
        }
        roots.push(real);
    }
    Ok(roots)
}

/// `root` made absolute against `dir` and resolved; a directory, and not `/`.
fn resolve(dir: &Path, root: &Path) -> Result<PathBuf> {
    let real = dir
        .join(root)
        .canonicalize()
        .map_err(|e| Error::invalid(format!("sandbox writable {}: {e}", root.display())))?;
    if !real.is_dir() || real == Path::new("/") {
        return Err(Error::invalid(format!(
            "sandbox writable {}: not a directory the sandbox can be built around",
            root.display()
        )));
    }
    Ok(real)
}

fn looser(server: &Policy, what: &str) -> Error {
    Error::invalid(format!(
        "{what} is looser than the server's policy ({}); a call can only tighten it",
        report(server)
    ))
}

/// An agent stage's policy: `base` with `roots` (its worktree) as the only writable roots, their
/// `.git` found now and read-only.
pub(crate) fn for_roots(base: &Policy, roots: &[PathBuf]) -> Policy {
    let git = if base.writable_git { Vec::new() } else { git_dirs(roots) };
    Policy { writable: roots.to_vec(), git, git_due: false, ..base.clone() }
}

/// Where agent pipelines keep their state in a root, when `in_roots` (no `FUGUE_STATE_DIR` moves
/// it): hidden from the panes (a stage's run directory is bound back for it).
pub(crate) fn state_dirs(roots: &[PathBuf], in_roots: bool) -> impl Iterator<Item = PathBuf> + '_ {
    roots
        .iter()
        .filter(move |_| in_roots)
        .flat_map(|root| ["pipelines", "runs"].map(|d| root.join(".state").join(d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(mode: Mode, network: Option<bool>, writable: &[&str]) -> CallSandbox {
        CallSandbox {
            mode: Some(mode),
            network,
            writable: writable.iter().map(PathBuf::from).collect(),
        }
    }

    /// A server started without `--sandbox`.
    #[test]
    fn on_a_server_without_a_sandbox_a_call_gets_a_whole_one() {
        let dir = std::env::temp_dir().canonicalize().unwrap();
        let off = Policy::default();
        let policy = for_call(&asked(Mode::WorkspaceWrite, None, &[]), &dir, &off).unwrap();
        assert_eq!(policy.writable, vec![dir.clone()], "the caller's directory");
        assert!(!policy.network, "a sandbox's network is off unless asked");
        let on = for_call(&asked(Mode::WorkspaceWrite, Some(true), &["."]), &dir, &off).unwrap();
        assert!(on.network);
        let ro = for_call(&asked(Mode::ReadOnly, None, &[]), &dir, &off).unwrap();
        assert!(ro.writable.is_empty() && ro.mode == Mode::ReadOnly);
    }

    #[test]
    fn a_call_cannot_ask_for_what_makes_no_sandbox() {
        let dir = std::env::temp_dir();
        for (bad, says) in [
            (asked(Mode::ReadOnly, None, &["."]), "writable needs"),
            (asked(Mode::WorkspaceWrite, None, &["/"]), "not a directory the sandbox"),
            (asked(Mode::WorkspaceWrite, None, &["no-such-dir-fugue"]), "No such file"),
            (asked(Mode::Off, None, &[]), "looser"),
            (CallSandbox::default(), "mode is required"),
        ] {
            let err = for_call(&bad, &dir, &Policy::default()).unwrap_err();
            assert!(err.message().contains(says), "{bad:?}: {}", err.message());
        }
    }
}
