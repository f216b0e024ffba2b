//! The layout template: a sandboxed pane's file system laid out once and copied for each pane,
//! where laying it out again (about 130 system calls: the read-only tree, the writable roots,
//! `/dev`, the private temporary directories, the covers, every `.git`) was most of a sandboxed
//! start's cost.
//!
//! A runtime starts a holder (`fugue __sandbox-layout PLAN`) for a plan the first time a pane needs
//! it: the holder joins the panes' namespaces as a launcher would, lays the plan out in a mount
//! namespace of its own and keeps it until the runtime ends. A pane's launcher then enters that
//! namespace and copies it (`unshare`), and adds what is the pane's own: a terminal file system
//! of its own on `/dev/pts` and, read-only, its private `TMPDIR`.
//!
//! A template serves only the plan it was made from (the writable roots, the covers found at
//! that moment, the working directory) and only while what it bound is still what the paths name
//! on the host: a root or `.git` removed and made again is a new directory, so fugue checks each
//! bound path's identity on the host and in the template before each use, and lays a new template
//! out when one differs. A pane with directories of its own to bind back (`keep`: a live shell's
//! records, a pipeline's files, hidden in the template like every fugue directory) is laid out in
//! full, as is any pane whose template is gone: the launcher checks that the namespace it enters
//! is the one the plan names (by its inode), so a holder's pid taken by another process leads
//! nowhere.

use super::launch_plan::{Plan, Template};
use crate::error::{Error, ErrorKind, Result};
use parking_lot::Mutex;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

/// The most templates kept at once (one per plan and working directory); the oldest goes first.
const MOST: usize = 4;

/// One holder and what it holds.
struct Held {
    key: String,
    child: Child,
    template: Template,
    /// The paths whose identity the template depends on.
    bound: Vec<Bound>,
}

/// One runtime's holders, newest last.
#[derive(Default)]
pub(crate) struct Templates(Mutex<Vec<Held>>);

impl Templates {
    /// The template for `plan` with the working directory `cwd`, laid out now if there is none that
    /// still holds; `None` for a plan that is laid out in full (see the module's comment).
    pub(crate) fn for_plan(&self, plan: &Plan, cwd: &Path) -> Result<Option<Template>> {
        if plan.fallback || !plan.keep.is_empty() {
            return Ok(None);
        }
        let key = key(plan, cwd);
        let mut held = self.0.lock();
        if let Some(at) = held.iter().position(|h| h.key == key) {
            if still_holds(&mut held[at]) {
                return Ok(Some(held[at].template));
            }
            end(held.remove(at));
        }
        if held.len() >= MOST {
            end(held.remove(0));
        }
        let made = start(plan, cwd, key)?;
        let template = made.template;
        held.push(made);
        Ok(Some(template))
    }

    /// Ends every holder (the runtime is stopping).
    pub(crate) fn stop(&self) {
        self.0.lock().drain(..).for_each(end);
    }
}

/// What makes two plans one template: the plan but for the pane's name, and the directory.
fn key(plan: &Plan, cwd: &Path) -> String {
    let mut plan = plan.clone();
    plan.tag = String::new();
    plan.template = None;
    format!("{}\n{}", cwd.display(), serde_json::to_string(&plan).unwrap_or_default())
}

/// A path the template depends on, and whether the template binds it there (a mount of its own,
/// which follows the directory it bound if that is renamed: the name then leads to the read-only
/// tree, where the same directory may show, unbound).
struct Bound {
    path: PathBuf,
    bind: bool,
}

/// The paths a template depends on, each once: the writable roots and every `.git` (bound), what
/// it shows read-only and the working directory (seen). The private temporary directories are
/// fugue's own, in its private directory, and stay what they are while fugue runs.
fn bound(plan: &Plan, cwd: &Path) -> Vec<Bound> {
    let bound = plan.rw.iter().chain(&plan.git).map(|p| (p.as_path(), true));
    let seen = plan.ro.iter().map(|p| (p.as_path(), false)).chain([(cwd, false)]);
    let mut out: Vec<Bound> = Vec::new();
    for (path, bind) in bound.chain(seen) {
        if !out.iter().any(|b| b.path == path) {
            out.push(Bound { path: path.to_path_buf(), bind });
        }
    }
    out
}

/// Whether the holder lives and every path is still what the template bound or saw.
fn still_holds(held: &mut Held) -> bool {
    let alive = held.child.try_wait().ok().flatten().is_none();
    let root = PathBuf::from(format!("/proc/{}/root", held.template.pid));
    alive && held.bound.iter().all(|b| holds(b, &root))
}

fn holds(bound: &Bound, root: &Path) -> bool {
    let host = identity(&bound.path);
    let shown = identity(&inside(root, &bound.path));
    match (host, shown) {
        (None, None) => true,
        (Some(h), Some(s)) => (h.0, h.1) == (s.0, s.1) && (s.2 || !bound.bind),
        _ => false,
    }
}

/// `path` as the namespace whose root is `root` sees it.
fn inside(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// A path's device, inode and whether it is the root of a mount, without following a last link;
/// `None` when it is not there.
fn identity(path: &Path) -> Option<(u64, u64, bool)> {
    const STATX_ATTR_MOUNT_ROOT: u64 = 0x2000;
    let c = super::mounts::cstring(path).ok()?;
    // SAFETY: an all-zero statx is valid, and statx only writes to it.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    let flags = libc::AT_SYMLINK_NOFOLLOW | libc::AT_STATX_SYNC_AS_STAT;
    // SAFETY: `c` is a valid C string and `st` outlives the call.
    let r = unsafe { libc::statx(libc::AT_FDCWD, c.as_ptr(), flags, libc::STATX_INO, &raw mut st) };
    if r != 0 {
        return None;
    }
    let dev = libc::makedev(st.stx_dev_major, st.stx_dev_minor);
    Some((dev, st.stx_ino, st.stx_attributes & STATX_ATTR_MOUNT_ROOT != 0))
}

/// Starts a holder for `plan` in `cwd` and waits until it has laid the plan out.
fn start(plan: &Plan, cwd: &Path, key: String) -> Result<Held> {
    // The pane's private `TMPDIR` is each pane's own (see `mounts::per_pane`).
    let laid = Plan { tmp: None, ..plan.clone() };
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg("__sandbox-layout").arg(serde_json::to_string(&laid).unwrap_or_default());
    cmd.current_dir(cwd);
    let (child, said) =
        super::helper::start(&mut cmd, "the panes' file system could not be laid out")?;
    let pid = child.id();
    let mnt = std::fs::metadata(format!("/proc/{pid}/ns/mnt")).map(|m| m.ino());
    match (said.parse(), mnt) {
        (Ok(drop), Ok(mnt)) => {
            let template = Template { pid, mnt, drop };
            Ok(Held { key, child, template, bound: bound(plan, cwd) })
        }
        (drop, mnt) => {
            super::helper::end(child);
            let why = format!("the layout holder said {said:?} ({drop:?}, {mnt:?})");
            Err(Error::new(ErrorKind::SandboxUnavailable, why))
        }
    }
}

/// Ends a holder: closing its stdin is its signal.
fn end(held: Held) {
    super::helper::end(held.child);
}

/// `fugue __sandbox-layout PLAN`: joins the panes' namespaces, lays `plan` out in a mount
/// namespace of its own, says `ready`, and holds it until stdin closes (or fugue dies).
pub(crate) fn holder_main(plan: &str) -> std::process::ExitCode {
    // SAFETY: prctl with these arguments only sets this process's death signal.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    let laid = serde_json::from_slice::<Plan>(plan.as_bytes())
        .map_err(|e| format!("bad plan: {e}"))
        .and_then(|plan| super::anew::lay_out_anew(&plan));
    if let Err(why) = laid {
        eprintln!("fugue: sandbox unavailable: {why}");
        return std::process::ExitCode::from(super::net::UNAVAILABLE);
    }
    let drop = match super::teardown::serve() {
        Ok(number) => number,
        Err(why) => {
            eprintln!("fugue: sandbox unavailable: {why}");
            return std::process::ExitCode::from(super::net::UNAVAILABLE);
        }
    };
    // The holder's stdout is a pipe to the fugue that started it, not the protocol.
    println!("ready {drop}"); // stdout-ok
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    std::process::ExitCode::SUCCESS
}

/// A template's holder reached by a launcher: the holder's mount namespace and a pidfd of it.
pub(crate) struct FoundHolder {
    mnt: OwnedFd,
    holder: OwnedFd,
}

/// What a launcher that entered a template keeps for its end: the holder's pidfd and teardown
/// socket (`teardown::hand_over`).
pub(crate) struct Entered {
    pub(crate) holder: OwnedFd,
    pub(crate) sending: libc::c_int,
}

/// The template's holder, checked to be the one `template` names (its mount namespace's inode,
/// seen while its pidfd, taken first, says it still lives); `None` when it is not there: the
/// launcher then lays the pane out in full.
pub(crate) fn open(template: &Template) -> Option<FoundHolder> {
    // SAFETY: pidfd_open takes no pointers and returns a new descriptor or -1.
    let holder = unsafe { libc::syscall(libc::SYS_pidfd_open, template.pid, 0) };
    let holder = libc::c_int::try_from(holder).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: pidfd_open returned a new descriptor that nothing else owns.
    let holder = unsafe { OwnedFd::from_raw_fd(holder) };
    let path = format!("/proc/{}/ns/mnt\0", template.pid);
    // SAFETY: `path` is a NUL-terminated string; open returns a new descriptor or -1.
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: open returned a new descriptor that nothing else owns.
    let mnt = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: an all-zero stat is valid, and fstat only writes to it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `mnt` is open and `st` outlives the call.
    let same =
        unsafe { libc::fstat(mnt.as_raw_fd(), &raw mut st) } == 0 && st.st_ino == template.mnt;
    let mut alive = libc::pollfd { fd: holder.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: poll writes only to `alive`, which outlives the call.
    let alive = unsafe { libc::poll(&raw mut alive, 1, 0) } == 0;
    (same && alive).then_some(FoundHolder { mnt, holder })
}

/// Enters the template's namespaces (`reached`, from `open`) and copies its mount namespace:
/// its user namespace, the panes' network when the plan has one (the holder joined it), then
/// the mounts. One `setns` on the holder's pidfd joins them all at once (Linux 5.8); where it
/// cannot (the holder's user namespace is this process's own, root without user namespaces, or an
/// older kernel) they are joined one by one.
pub(crate) fn enter(
    template: &Template,
    plan: &Plan,
    reached: FoundHolder,
) -> std::result::Result<Entered, String> {
    let net = if plan.net.is_some() { libc::CLONE_NEWNET } else { 0 };
    let all = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | net;
    // SAFETY: setns takes the holder's pidfd, which lives across the call.
    if unsafe { libc::setns(reached.holder.as_raw_fd(), all) } != 0 {
        join_one_by_one(template, plan, &reached)?;
    }
    super::net::unshare(libc::CLONE_NEWNS)?;
    Ok(Entered { holder: reached.holder, sending: template.drop })
}

fn join_one_by_one(
    template: &Template,
    plan: &Plan,
    reached: &FoundHolder,
) -> std::result::Result<(), String> {
    super::net::join_user(template.pid)?;
    if plan.net.is_some() {
        super::net::join_net(template.pid)?;
    }
    // SAFETY: setns takes a namespace descriptor that lives across the call.
    if unsafe { libc::setns(reached.mnt.as_raw_fd(), libc::CLONE_NEWNS) } != 0 {
        return Err(format!("setns mnt: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}
