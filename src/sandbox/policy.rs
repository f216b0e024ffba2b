//! The sandbox's policy: its modes, what the person set (the server's, which the runtime owns and
//! hands down: a pane's `PaneSpec` carries the policy it runs under), and the
//! policy in one line; the flags of `fugue serve` (`--sandbox`, `--writable`, `--network`,
//! `--writable-git`, `--pass-env`, `--allow-unix-socket` and `FUGUE_SANDBOX`), parsed and resolved
//! against the directory into a `Policy`, and written back out for a shared server; with the `.git`
//! directories under the writable roots that the policy keeps read-only.

use crate::words::{Words, words};
use std::path::{Path, PathBuf};

words! {
    /// How much a pane may write.
    #[derive(PartialOrd, Ord)]
    pub(crate) enum Mode {
        /// No writes but the terminal, the devices and a private temporary directory.
        ReadOnly = "read-only",
        /// Writes beneath the writable roots, the temporary directory, the terminal and the
        /// devices.
        WorkspaceWrite = "workspace-write",
        /// No sandbox: today's behaviour.
        Off = "off",
    }
}

/// The server's policy, as the person set it.
#[derive(Clone, Debug)]
pub(crate) struct Policy {
    pub(crate) mode: Mode,
    /// Absolute and resolved; fugue's working directory unless `--writable` named others.
    pub(crate) writable: Vec<PathBuf>,
    /// Whether panes reach the network; off by default in a sandbox.
    pub(crate) network: bool,
    pub(crate) writable_git: bool,
    /// Secret-looking variables passed to panes all the same.
    pub(crate) pass_env: Vec<String>,
    /// Unix sockets outside the roots that panes may connect to all the same (absolute).
    pub(crate) allow_unix: Vec<PathBuf>,
    /// fugue's private directories (control sockets, state, temporary files), hidden from panes.
    pub(crate) hidden: Vec<PathBuf>,
    /// The `.git` directories (and a worktree's `.git` file) of the roots, found when the policy
    /// is set.
    pub(crate) git: Vec<PathBuf>,
    /// A call's own policy over roots other than the server's: its `.git` are found as its pane
    /// starts (`with_git_now`), so a call that runs in a shell already started under it pays
    /// nothing for them.
    pub(crate) git_due: bool,
    /// Agent pipelines keep their state in the roots (no `FUGUE_STATE_DIR`): a call's roots have
    /// theirs hidden too.
    pub(crate) state_in_roots: bool,
    /// fugue's private directory for its temporary files (hidden like the others); a read-only
    /// pane's `TMPDIR` is made inside the empty file system that hides it.
    pub(crate) private: PathBuf,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            mode: Mode::Off,
            writable: Vec::new(),
            network: true,
            writable_git: false,
            pass_env: Vec::new(),
            allow_unix: Vec::new(),
            hidden: Vec::new(),
            git: Vec::new(),
            git_due: false,
            state_in_roots: false,
            private: PathBuf::new(),
        }
    }
}

impl Policy {
    /// Whether two policies confine alike: the same mode, roots, network and `.git` rule (what
    /// fugue found on disk for them may differ with the moment it looked).
    pub(crate) fn same(&self, other: &Policy) -> bool {
        (self.mode, &self.writable, self.network, self.writable_git)
            == (other.mode, &other.writable, other.network, other.writable_git)
    }
}

/// The policy in one line, for the agent.
pub(crate) fn report(policy: &Policy) -> String {
    if policy.mode == Mode::Off {
        return "sandbox: off (panes run with the user's full rights)".into();
    }
    let writes = match policy.mode {
        Mode::ReadOnly => "writes only to the terminal, devices and a private TMPDIR".to_string(),
        _ => {
            let roots: Vec<String> =
                policy.writable.iter().map(|p| p.display().to_string()).collect();
            format!(
                "writes only under {} and the temporary directory{}",
                roots.join(", "),
                if policy.writable_git { "" } else { " (.git read-only)" }
            )
        }
    };
    let network = if policy.network {
        "network on"
    } else {
        "network off (the panes share a private loopback)"
    };
    format!(
        "sandbox: {}; {writes}; {network}; secret-looking variables withheld",
        policy.mode.name()
    )
}

/// The sandbox flags of `fugue serve`, before they are resolved against the directory.
#[derive(Default, Debug)]
pub(crate) struct Flags {
    pub(crate) mode: Option<Mode>,
    pub(crate) writable: Vec<PathBuf>,
    pub(crate) network: Option<bool>,
    pub(crate) writable_git: bool,
    pub(crate) pass_env: Vec<String>,
    pub(crate) allow_unix: Vec<PathBuf>,
}

impl Flags {
    /// Whether any sandbox flag was given besides the mode (they mean nothing with `off`).
    fn any_detail(&self) -> bool {
        !self.writable.is_empty()
            || self.network.is_some()
            || self.writable_git
            || !self.pass_env.is_empty()
            || !self.allow_unix.is_empty()
    }

    /// The policy, with relative roots resolved against `cwd`; `hidden` are fugue's own
    /// directories.
    pub(crate) fn policy(
        self,
        cwd: &Path,
        hidden: Vec<PathBuf>,
    ) -> std::result::Result<Policy, String> {
        let mode = self.mode.unwrap_or(Mode::Off);
        if mode == Mode::Off {
            if self.any_detail() {
                return Err("--writable, --network, --writable-git, --pass-env and \
                            --allow-unix-socket need --sandbox workspace-write or read-only"
                    .into());
            }
            return Ok(Policy::default());
        }
        let roots = if self.writable.is_empty() { vec![cwd.to_path_buf()] } else { self.writable };
        let mut writable = Vec::new();
        for root in roots {
            let real = cwd
                .join(&root)
                .canonicalize()
                .map_err(|e| format!("--writable {}: {e}", root.display()))?;
            if !real.is_dir() {
                return Err(format!("--writable {}: not a directory", root.display()));
            }
            if real == Path::new("/") {
                return Err("--writable /: the whole file system is no sandbox".into());
            }
            writable.push(real);
        }
        let git = if self.writable_git { Vec::new() } else { git_dirs(&writable) };
        // A socket may not exist yet (its server starts later): then its directory is resolved.
        let allow_unix = self
            .allow_unix
            .iter()
            .map(|p| {
                let path = cwd.join(p);
                let parent = path.parent().and_then(|d| d.canonicalize().ok());
                path.canonicalize()
                    .ok()
                    .or_else(|| Some(parent?.join(path.file_name()?)))
                    .unwrap_or(path)
            })
            .collect();
        Ok(Policy {
            mode,
            writable,
            network: self.network.unwrap_or(false),
            writable_git: self.writable_git,
            pass_env: self.pass_env,
            allow_unix,
            hidden,
            git,
            git_due: false,
            state_in_roots: false,
            private: PathBuf::new(),
        })
    }
}

/// The flags that give another fugue (a shared server started by a front) this policy.
pub(crate) fn flags_of(policy: &Policy) -> Vec<String> {
    let mut flags = vec!["--sandbox".to_string(), policy.mode.name().to_string()];
    if policy.mode == Mode::Off {
        return flags;
    }
    for root in &policy.writable {
        flags.push(format!("--writable={}", root.display()));
    }
    flags.push(format!("--network={}", if policy.network { "on" } else { "off" }));
    if policy.writable_git {
        flags.push("--writable-git".into());
    }
    for name in &policy.pass_env {
        flags.push(format!("--pass-env={name}"));
    }
    for path in &policy.allow_unix {
        flags.push(format!("--allow-unix-socket={}", path.display()));
    }
    flags
}

/// How deep below a root `git_dirs` looks for the `.git` of a nested repository, and how many
/// directories it looks at in all: a bound on what a huge tree costs at start.
const GIT_DEPTH: usize = 3;
const GIT_LOOKS: usize = 5000;

/// The `.git` directories a sandboxed pane must not write: each root's own and those of the
/// repositories nested up to `GIT_DEPTH` levels below it (not inside `node_modules`, `target` or
/// hidden directories); for a worktree (a `.git` file) the directory its `gitdir:` names and that
/// one's common directory, where hooks and config live.
pub(crate) fn git_dirs(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut looks = 0;
    let mut queue: std::collections::VecDeque<(PathBuf, usize)> =
        roots.iter().map(|r| (r.clone(), 0)).collect();
    while let Some((dir, depth)) = queue.pop_front() {
        looks += 1;
        if looks > GIT_LOOKS {
            break;
        }
        add_git_dir(&dir, &mut dirs);
        if depth == GIT_DEPTH {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let skip = name
                .to_str()
                .is_none_or(|n| n.starts_with('.') || n == "node_modules" || n == "target");
            // Not followed if it is a link: a link could lead out of the root, or round in a loop.
            if !skip && entry.file_type().is_ok_and(|t| t.is_dir()) {
                queue.push_back((entry.path(), depth + 1));
            }
        }
    }
    dirs.iter_mut().for_each(|d| *d = canonical_keeping_link(d));
    crate::sort::sort(&mut dirs);
    dirs.dedup();
    dirs
}

/// Adds `dir`'s `.git`, or for a worktree its `.git` file and what that points to, to `dirs`.
/// The file too: rewritten to name a git directory of the pane's own, whose config runs a
/// command (`core.fsmonitor`), it would have the user's next `git status` run it.
/// `path` with its directories resolved, its last component kept as it is when it is a link
/// (which must be kept read-only itself, not only where it leads).
fn canonical_keeping_link(path: &Path) -> PathBuf {
    let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink());
    let (Some(parent), Some(name), true) = (path.parent(), path.file_name(), link) else {
        return path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    };
    parent.canonicalize().map_or_else(|_| path.to_path_buf(), |p| p.join(name))
}

fn add_git_dir(dir: &Path, dirs: &mut Vec<PathBuf>) {
    let dot_git = dir.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else { return };
    // A link too (the launcher pins the link and binds where it leads read-only): left out, the
    // pane swapped it for a link to a gitdir of its own, whose config the next git ran.
    if meta.is_dir() || meta.is_symlink() {
        dirs.push(dot_git);
        return;
    }
    if meta.is_file() {
        dirs.push(dot_git.clone());
    }
    let Ok(text) = std::fs::read_to_string(&dot_git) else { return };
    let Some(gitdir) = text.lines().find_map(|l| l.strip_prefix("gitdir:")) else { return };
    let gitdir = dir.join(gitdir.trim());
    // The file itself too: pointed elsewhere, it would make git read a config of the pane's.
    dirs.push(dot_git);
    if let Ok(common) = std::fs::read_to_string(gitdir.join("commondir")) {
        dirs.push(gitdir.join(common.trim()));
    }
    dirs.push(gitdir);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_without_a_sandbox_are_refused() {
        let flags = Flags { writable_git: true, mode: Some(Mode::Off), ..Flags::default() };
        assert!(flags.policy(Path::new("/"), Vec::new()).is_err());
    }

    #[test]
    fn nested_repositories_and_worktrees_are_found() {
        let base = std::env::temp_dir().join(format!("fugue-git-dirs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for dir in ["root/.git/worktrees/wt", "root/vendor/lib/.git", "root/node_modules/m/.git"] {
            std::fs::create_dir_all(base.join(dir)).unwrap();
        }
        std::fs::create_dir_all(base.join("wt")).unwrap();
        let gitdir = base.join("root/.git/worktrees/wt");
        std::fs::write(base.join("wt/.git"), format!("gitdir: {}\n", gitdir.display())).unwrap();
        std::fs::write(gitdir.join("commondir"), "../..\n").unwrap();
        let found = git_dirs(&[base.join("root"), base.join("wt")]);
        let real = |p: &str| base.join(p).canonicalize().unwrap();
        let expected = ["root/.git", "root/.git/worktrees/wt", "root/vendor/lib/.git", "wt/.git"];
        assert_eq!(found, expected.map(real));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
