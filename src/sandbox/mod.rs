//! Sandboxed panes: the person's policy, set when fugue starts; a pane's own whole policy within
//! it, from a call's `sandbox` or an agent stage's worktree (`call`); and what each pane's launcher
//! is told to do with the pane's policy.
//!
//! fugue itself never runs sandboxed. Each pane's process is started through a launcher — fugue's
//! own binary as `fugue __sandbox-exec PLAN -- PROGRAM ARGS` (see `launch`) — which enters a user
//! and mount namespace (joining the network namespace fugue keeps for its sandboxed panes, `net`;
//! root where user namespaces are not allowed makes them without one), lays the pane's file system
//! out (`mounts`: read-only but the writable roots, private temporary directories, fugue's private
//! directories hidden, every `.git` read-only), and runs the program in a pid namespace of its own
//! (`tree`), locked down (`lockdown`: `no_new_privs`, every capability dropped, Landlock, a seccomp
//! filter that refuses the mount API and new namespaces), while the launcher answers the program's
//! socket questions outside the sandbox (`sockets`). The launcher stays as the pane's process, in
//! the pane's session and terminal, and ends as the program ends. Nothing here runs when the policy
//! is `off`.

mod anew;
mod call;
mod caps;
mod cmsg;
mod helper;
mod holders;
pub(crate) mod landlock;
pub(crate) mod launch;
mod launch_plan;
mod lockdown;
mod mounts;
pub(crate) mod net;
mod policy;
pub(crate) mod seccomp;
mod shared_tmp;
pub(crate) mod sockets;
mod spawn;
mod teardown;
pub(crate) mod template;
mod tree;

use crate::error::{Error, ErrorKind, Result};
use crate::words::Words;
use std::path::{Path, PathBuf};

pub(crate) use call::{CallSandbox, for_call, for_roots, state_dirs, with_git_now};
pub(crate) use holders::{Holders, Means};
pub(crate) use policy::{Flags, Mode, Policy, flags_of, report};

/// What a pane's status and a call's answer say of its sandbox: mode, writable roots, network,
/// `.git`; `None` when off.
pub(crate) fn view(policy: &Policy) -> Option<serde_json::Value> {
    let writes = policy.mode == Mode::WorkspaceWrite;
    let writable: &[PathBuf] = if writes { &policy.writable } else { &[] };
    let git = if policy.writable_git { "writable" } else { "read-only" };
    (policy.mode != Mode::Off).then(|| {
        let mut view = serde_json::json!({
            "mode": policy.mode.name(),
            "writable": writable,
            "network": if policy.network { "on" } else { "off" },
        });
        if writes {
            view["git"] = git.into();
        }
        view
    })
}

/// What programs print when the network is off: a refused or unreachable connection, a name that
/// does not resolve (no resolver is reachable); in C's, curl's and Node's words (Node's with the
/// call that failed, so npm's line naming the host is the one found, not its bare error code).
/// Compared in lower case.
const NETWORK_REFUSALS: [&str; 8] = [
    "connection refused",
    "network is unreachable",
    "could not resolve host",
    "temporary failure in name resolution",
    "connect econnrefused",
    "connect enetunreach",
    "getaddrinfo eai_again",
    "couldn't connect to server",
];

/// Node's recursive mkdir (npm's cache) looks a path up again after the kernel refused it, and
/// says this where the kernel said `EROFS`; outside the roots a new directory can only fail so.
const NODE_MKDIR: &str = "no such file or directory, mkdir '";

/// The line of a failed command's `output` that shows the sandbox of `mode` refused it, where
/// fugue can tell: a read-only file system (the tree outside the roots, the `.git` mounts), a
/// permission denied on a path outside the writable roots (anywhere, in read-only), a refused or
/// unreachable connection or an unresolved name with the network off, Node's word for a directory
/// refused outside the roots. Matched in any case: Node and Go say `read-only file system` and
/// `permission denied`. At most 200 bytes of it.
pub(crate) fn denied(policy: &Policy, output: &str) -> Option<String> {
    let mode = policy.mode;
    if mode == Mode::Off {
        return None;
    }
    let outside = |line: &str| {
        let paths = line.split(|c: char| c.is_whitespace() || "'\"‘’:`".contains(c));
        let mut absolute = paths.filter(|w| w.starts_with('/')).map(Path::new);
        mode == Mode::ReadOnly
            || absolute.any(|p| !policy.writable.iter().any(|r| p.starts_with(r)))
    };
    let network =
        |lower: &str| !policy.network && NETWORK_REFUSALS.iter().any(|m| lower.contains(m));
    let line = output.lines().find(|line| {
        let lower = line.to_ascii_lowercase();
        lower.contains("read-only file system")
            || (lower.contains("permission denied") && outside(line))
            || (lower.contains(NODE_MKDIR) && outside(line))
            || network(&lower)
    })?;
    let mut end = line.len().min(200);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    Some(line[..end].trim().to_string())
}

/// A server's policy as a shared server's hello carries it: `None` when off.
pub(crate) fn policy_line(policy: &Policy) -> Option<String> {
    (policy.mode != Mode::Off).then(|| report(policy))
}

/// Whether a sandboxed pane goes without a variable (unless `--pass-env` or the call names it):
/// a secret-looking one, or one that leads to a socket or server outside (`sockets::LEADING_OUT`).
pub(crate) fn withheld(name: &str) -> bool {
    is_secret(name) || sockets::LEADING_OUT.contains(&name)
}

/// Whether a variable's name looks like a secret's.
pub(crate) fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"].iter().any(|w| upper.contains(w))
}

/// The name of pane `id`'s sandbox: the source name of the file systems its launcher mounts, and
/// the fallback's TMPDIR.
pub(crate) fn tag(id: &str) -> String {
    format!("fugue-pane-{id}")
}

/// How panes are sandboxed here, or why they cannot be: a fact of this kernel, found once by a
/// probe under `policy` (the first one asked: the probe only needs fugue's directories from it),
/// kept in `holders`.
pub(crate) fn means(policy: &Policy, holders: &Holders) -> std::result::Result<Means, String> {
    holders.means.get_or_init(|| find_means(policy, holders)).clone()
}

fn find_means(policy: &Policy, holders: &Holders) -> std::result::Result<Means, String> {
    // Without a sandbox the probe is what a call's sandbox would be: network off. The `.git` a
    // plan must keep read-only is each plan's own question (see `fallback_plan`).
    // Made before anything is covered: a server without a sandbox has not made it.
    crate::tempdir::private_path(true).map_err(|e| e.message().to_string())?;
    let probe = match policy.mode {
        Mode::Off => Policy { mode: Mode::WorkspaceWrite, network: false, ..Policy::clone(policy) },
        _ => Policy { git: Vec::new(), ..Policy::clone(policy) },
    };
    let tried = plan_with(Means::Namespaces, &probe, holders, &[], tag("probe"))
        .map_err(|e| e.message().to_string())
        .and_then(|plan| launch::probe(&plan));
    match tried {
        Ok(()) => Ok(Means::Namespaces),
        Err(why) if why.contains(net::NO_USERNS) => {
            let plan = plan_with(Means::Fallback, &probe, holders, &[], tag("probe"))
                .map_err(|e| e.message().to_string())?;
            let probed = launch::probe(&plan);
            forget(&probe, &tag("probe"));
            probed.map(|()| Means::Fallback)
        }
        Err(why) => Err(why),
    }
}

/// Removes what a pane's sandbox (under `policy`) left in fugue's private directory (the
/// fallback's TMPDIR); nothing without a sandbox, which left nothing there.
pub(crate) fn forget(policy: &Policy, tag: &str) {
    if policy.mode != Mode::Off && !policy.private.as_os_str().is_empty() {
        let _ = std::fs::remove_dir_all(policy.private.join(tag));
    }
}

/// The launcher's plan for one pane under `policy` (the server's, or the pane's own whole one);
/// `keep` are the pane's own private directories (its shell's records, its pipeline's files),
/// which stay reachable and writable. What the panes share comes from `holders`.
pub(crate) fn plan(
    policy: &Policy,
    holders: &Holders,
    keep: &[PathBuf],
    tag: String,
    cwd: &Path,
) -> Result<launch::Plan> {
    let means =
        means(policy, holders).map_err(|why| Error::new(ErrorKind::SandboxUnavailable, why))?;
    // fugue's private directory exists before it is covered, whether or not fugue itself uses it.
    crate::tempdir::private_path(true)?;
    holders.sandboxing();
    let mut plan = plan_with(means, policy, holders, keep, tag)?;
    // Without a template the launcher lays the pane out in full, as it can: slower, never less.
    plan.template = holders.templates.for_plan(&plan, cwd).unwrap_or_else(|e| {
        crate::log::debug(&format!("no layout template: {e}"));
        None
    });
    Ok(plan)
}

fn plan_with(
    means: Means,
    policy: &Policy,
    holders: &Holders,
    keep: &[PathBuf],
    tag: String,
) -> Result<launch::Plan> {
    if means == Means::Fallback {
        return fallback_plan(policy, keep, tag);
    }
    let mode = policy.mode;
    let mut write: Vec<PathBuf> = Vec::new();
    let (mut rw, mut ro) = (Vec::new(), Vec::new());
    if mode == Mode::ReadOnly {
        ro.extend(policy.writable.iter().cloned());
    }
    if mode == Mode::WorkspaceWrite {
        rw.extend(policy.writable.iter().cloned());
        write.extend(rw.iter().cloned());
        write.extend(mounts::PRIVATE_TMP.iter().map(|(at, _)| PathBuf::from(at)));
    }
    let tmp = (mode == Mode::ReadOnly).then(|| policy.private.join("tmp"));
    write.extend(tmp.iter().cloned());
    write.extend(devices());
    write.extend(keep.iter().cloned());
    let net = if policy.network { None } else { Some(holders.net.pid()?) };
    let hide = hidden_now(policy, keep);
    let git = policy.git.clone();
    let shared_tmp = Some(holders.shared_tmp.dir()?);
    let allow_unix = policy.allow_unix.clone();
    Ok(launch::Plan {
        tmp,
        tag,
        write,
        rw,
        ro,
        git,
        hide,
        keep: keep.to_vec(),
        shared_tmp,
        net,
        allow_unix,
        ..Default::default()
    })
}

/// The devices a pane writes: the null and random devices, its terminal, new terminals.
fn devices() -> impl Iterator<Item = PathBuf> {
    ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"]
        .iter()
        .chain(&["/dev/ptmx", "/dev/pts"])
        .map(PathBuf::from)
}

/// The fallback's plan: writes to the roots (workspace-write), a TMPDIR of the pane's own, the
/// devices and its own directories; the network refused by seccomp.
fn fallback_plan(policy: &Policy, keep: &[PathBuf], tag: String) -> Result<launch::Plan> {
    if policy.mode == Mode::WorkspaceWrite && !policy.git.is_empty() {
        return Err(Error::new(
            ErrorKind::SandboxUnavailable,
            format!(
                "{}; without them {} cannot be kept read-only: start fugue with --writable-git \
                 to go without that protection",
                net::NO_USERNS,
                policy.git[0].display()
            ),
        ));
    }
    let tmp = policy.private.join(&tag);
    crate::files::private_dir(&tmp, crate::files::Existing::Keep)?;
    let mut write: Vec<PathBuf> = Vec::new();
    if policy.mode == Mode::WorkspaceWrite {
        write.extend(policy.writable.iter().cloned());
    }
    write.push(tmp.clone());
    write.extend(devices());
    write.extend(keep.iter().cloned());
    Ok(launch::Plan {
        tmp: Some(tmp),
        tag,
        write,
        fallback: true,
        refuse_inet: !policy.network,
        allow_unix: policy.allow_unix.clone(),
        ..Default::default()
    })
}

/// The system's temporary directories: /tmp and `$TMPDIR`.
fn temp_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from("/tmp")];
    let tmp = std::env::temp_dir();
    if tmp.is_absolute() && tmp != Path::new("/tmp") {
        dirs.push(tmp);
    }
    dirs
}

/// What to hide from a pane starting now: fugue's own directories, and the private directories
/// other fugues of this user keep in the temporary directory (a command file there is run by
/// that fugue's shell; a control socket there drives it). Never one of the pane's own `keep`
/// directories: a recursive bind of it back would bring its cover along (on a server without a
/// sandbox, a shell's directory lies in the temporary directory itself, and its records never
/// came back). Never a writable root or a directory that holds one, unless the root is bound back.
fn hidden_now(policy: &Policy, keep: &[PathBuf]) -> Vec<PathBuf> {
    let mut hide: Vec<PathBuf> = policy.hidden.iter().filter(|p| p.exists()).cloned().collect();
    let uid = crate::procfs::euid();
    // The private /tmp, /var/tmp and /dev/shm cover the host's whole: only a TMPDIR elsewhere is
    // worth a look (a look at a busy /tmp costs a stat an entry, at every pane's start).
    let covered = |dir: &PathBuf| mounts::PRIVATE_TMP.iter().any(|(at, _)| dir.starts_with(at));
    for tmp in temp_dirs().into_iter().filter(|dir| !covered(dir)) {
        let Ok(entries) = std::fs::read_dir(&tmp) else { continue };
        for entry in entries.flatten() {
            use std::os::unix::fs::MetadataExt;
            let fugues = entry.file_name().to_str().is_some_and(is_fugue_private);
            let mine = entry.metadata().is_ok_and(|m| m.is_dir() && m.uid() == uid);
            if fugues && mine && !hide.contains(&entry.path()) {
                hide.push(entry.path());
            }
        }
    }
    let exposed = policy.writable.iter().filter(|root| !keep.contains(root));
    let exposed: Vec<&PathBuf> = exposed.collect();
    hide.retain(|dir| !keep.contains(dir) && !exposed.iter().any(|root| root.starts_with(dir)));
    hide
}

/// Whether a name in the temporary directory is one of fugue's private directories: a control
/// directory (`fugue-UID`), fugue's own base, or a live shell's or pipeline's directory.
fn is_fugue_private(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("fugue-") else { return false };
    ["private-", "shell-", "pipeline-"].iter().any(|p| rest.starts_with(p))
        || (!rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
}

/// Checks once, by starting the launcher for real, that this kernel can give the sandbox; every
/// pane start after a failure fails the same way, naming what is missing.
pub(crate) fn check_available(policy: &Policy, holders: &Holders) -> Result<()> {
    means(policy, holders).map(|_| ()).map_err(|why| Error::new(ErrorKind::SandboxUnavailable, why))
}

/// The policy in one line with how this kernel gives it, for the agent: `report`, plus what the
/// fallback lacks, or why no pane can start.
pub(crate) fn report_here(policy: &Policy, holders: &Holders) -> String {
    let line = report(policy);
    match (policy.mode, means(policy, holders)) {
        (Mode::Off, _) | (_, Ok(Means::Namespaces)) => line,
        (_, Ok(Means::Fallback)) => format!(
            "{line}; no user namespaces here, so: inet sockets refused (no loopback shared by \
             the panes), a private TMPDIR instead of /tmp, fugue's sockets guarded by a peer check"
        ),
        (_, Err(why)) => format!("{line}; unavailable here, no pane can start: {why}"),
    }
}

/// Whether a connection to fugue's control or shared socket comes from a sandboxed process: one
/// in another user namespace, or under more seccomp filters than fugue. Only a fugue that has
/// sandboxed a pane asks (with the sandbox never used nothing changes); `holders` are its runtime's.
pub(crate) fn refuses_peer(policy: &Policy, holders: &Holders, pid: i32) -> bool {
    if policy.mode == Mode::Off && !holders.sandboxed() {
        return false;
    }
    let ns = |p: &str| std::fs::read_link(format!("/proc/{p}/ns/user")).ok();
    let filters = |p: &str| {
        let status = std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default();
        status.lines().find_map(|l| l.strip_prefix("Seccomp_filters:")?.trim().parse::<u32>().ok())
    };
    // The launcher's socket server connects for the pane (see `sockets`): its connection is the
    // pane's.
    let launcher = |p: &str| {
        let cmdline = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
        cmdline.split(|&b| b == 0).nth(1) == Some(b"__sandbox-exec".as_slice())
    };
    let peer = pid.to_string();
    ns(&peer) != ns("self")
        || filters(&peer).unwrap_or(0) > filters("self").unwrap_or(0)
        || launcher(&peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_are_recognised() {
        for name in
            ["API_KEY", "github_token", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "gcp_credentials"]
        {
            assert!(is_secret(name), "{name}");
        }
        for name in ["PATH", "HOME", "TERM", "LANG"] {
            assert!(!is_secret(name), "{name}");
        }
    }

    #[test]
    fn only_fugues_private_directories_are_hidden() {
        for name in ["fugue-0", "fugue-private-1000", "fugue-shell-1-2-x", "fugue-pipeline-1-2-x"] {
            assert!(is_fugue_private(name), "{name}");
        }
        for name in ["fugue-test-1-repo", "fugue-", "fugue-1x", "fugue", "tmp.x"] {
            assert!(!is_fugue_private(name), "{name}");
        }
    }

    fn of(mode: Mode) -> Policy {
        Policy { mode, network: false, ..Policy::default() }
    }

    #[test]
    fn refusals_are_told_from_other_failures() {
        let ro = "touch: cannot touch 'notes': Permission denied";
        assert_eq!(denied(&of(Mode::ReadOnly), ro).as_deref(), Some(ro));
        let git = "bash: .git/config: Read-only file system";
        assert_eq!(denied(&of(Mode::WorkspaceWrite), git).as_deref(), Some(git));
        let outside = "cp: cannot create regular file '/etc/x': Permission denied";
        assert_eq!(denied(&of(Mode::WorkspaceWrite), outside).as_deref(), Some(outside));
        assert_eq!(denied(&of(Mode::WorkspaceWrite), "make: *** [all] Error 2"), None);
        assert_eq!(denied(&of(Mode::Off), git), None, "no sandbox, no refusal");
        // Node's and Python's words for a cache outside the roots, or the network off.
        let npm = "npm error rofs EROFS: read-only file system, mkdtemp '/h/.npm/_cacache/tmp/x'";
        assert_eq!(denied(&of(Mode::WorkspaceWrite), npm).as_deref(), Some(npm));
        let node = "Error: EACCES: permission denied, mkdir '/h/.npm'";
        assert_eq!(denied(&of(Mode::WorkspaceWrite), node).as_deref(), Some(node));
        let fresh = "npm error enoent ENOENT: no such file or directory, mkdir '/h/.npm/_cacache'";
        assert_eq!(denied(&of(Mode::WorkspaceWrite), fresh).as_deref(), Some(fresh));
        let rooted = Policy { writable: vec!["/r".into()], ..of(Mode::WorkspaceWrite) };
        let inside = "Error: ENOENT: no such file or directory, mkdir '/r/a/b'";
        assert_eq!(denied(&rooted, inside), None, "a missing parent inside the roots");
        let dns = "socket.gaierror: [Errno -3] Temporary failure in name resolution";
        assert_eq!(denied(&of(Mode::WorkspaceWrite), dns).as_deref(), Some(dns));
        let npm_dns = "npm error request to https://registry.npmjs.org/x failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org";
        let npm_out = format!("npm error code EAI_AGAIN\nnpm error errno EAI_AGAIN\n{npm_dns}");
        assert_eq!(denied(&of(Mode::WorkspaceWrite), &npm_out).as_deref(), Some(npm_dns));
        let online = Policy { network: true, ..of(Mode::WorkspaceWrite) };
        assert_eq!(denied(&online, dns), None, "the network on: not the sandbox's doing");
        let long = format!("{}é: Read-only file system", "x".repeat(199));
        assert!(denied(&of(Mode::ReadOnly), &long).is_some_and(|l| l.len() <= 200));
    }

    #[test]
    fn modes_order_from_strict_to_open() {
        assert!(Mode::ReadOnly < Mode::WorkspaceWrite && Mode::WorkspaceWrite < Mode::Off);
    }
}
