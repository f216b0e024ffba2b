//! The file system a sandboxed pane sees, laid out by its launcher in a mount namespace of its own:
//! the whole tree read-only, the writable roots bound back read-write at their own paths, a
//! private `/tmp`, `/var/tmp` and `/dev/shm` (one set per fugue, shared by its panes as the
//! private loopback is), `/run` and `/var/run` covered with what fugue passes on purpose bound
//! back, fugue's private directories covered with the pane's own bound back, and every `.git`
//! (directory or a worktree's file) read-only on top; a `/dev` of the pane's own (`dev`). Metadata writes outside the roots (chmod,
//! chown, utimes, xattrs), which Landlock does not see, then fail with EROFS.
//!
//! The trees bound back are cloned (`open_tree`) before the root is made read-only, so each keeps
//! its own mounts' flags; they are attached (`move_mount`) in an order where nothing attached
//! later hides what must show. Mount points made in a directory a pane can write (the shared
//! `/tmp`) are made one component at a time without following links, and mounted on through the
//! descriptor, so a link another pane planted cannot steer a mount.

mod dev;

use super::launch_plan::Plan;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x04;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
const MOUNT_ATTR_RDONLY: u64 = 1;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// The private temporary directories, by where the pane sees them and their name in the plan's
/// shared directory.
pub(crate) const PRIVATE_TMP: [(&str, &str); 3] =
    [("/tmp", "tmp"), ("/var/tmp", "var-tmp"), ("/dev/shm", "shm")];

/// Lays the pane's file system out as the module's comment says. The caller is in a new mount
/// namespace whose mounts are private.
pub(crate) fn lay_out(plan: &Plan, cwd: &Path) -> Result<(), String> {
    let rw = clones(&plan.rw)?;
    let ro = clones(&shown(plan, cwd))?;
    let keep = clones(&plan.keep)?;
    let tmp = private_tmp(plan)?;
    let passed = clones(&passed_on(plan))?;
    let devices = clones(&dev::devices())?;
    read_only(None, Path::new("/"))?;
    tmpfs("fugue-dev", Path::new("/dev"), "mode=0755")?;
    for (path, tree) in &devices {
        attach(tree, &mount_point(path, false)?)?;
    }
    dev::fill()?;
    for (path, tree) in &tmp {
        attach(tree, &mount_point(path, true)?)?;
    }
    cover_run(&passed)?;
    for (path, tree) in &rw {
        attach(tree, &mount_point(path, true)?)?;
    }
    for (path, tree) in &ro {
        read_only(Some(tree), Path::new(""))?;
        attach(tree, &mount_point(path, is_dir(tree))?)?;
    }
    hide(plan)?;
    for (path, tree) in &keep {
        attach(tree, &mount_point(path, true)?)?;
    }
    if let Some(dir) = plan.tmp.as_deref() {
        let point = mount_point(dir, true)?;
        tmpfs(&plan.tag, &fd_path(&point), "mode=0700")?;
    }
    let (links, mut git): (Vec<&PathBuf>, Vec<PathBuf>) = (
        plan.git.iter().filter(|p| is_link_path(p)).collect(),
        plan.git.iter().filter(|p| !is_link_path(p)).cloned().collect(),
    );
    // Where a `.git` link leads is kept read-only as a `.git` is; the link itself is pinned.
    git.extend(links.iter().filter_map(|link| std::fs::canonicalize(link).ok()));
    pin_nested_repositories(plan, links.iter().copied().chain(&git))?;
    for path in &git {
        let Ok(meta) = std::fs::symlink_metadata(path) else { continue };
        let tree = clone(path)?;
        read_only(Some(&tree), Path::new(""))?;
        attach(&tree, &mount_point(path, meta.is_dir())?)?;
    }
    links.into_iter().try_for_each(|link| pin_link(link))
}

/// What is each pane's own in a copy of a layout template (`template`): a terminal file system
/// of its own over the template's, and the private `TMPDIR` of a read-only pane.
pub(crate) fn per_pane(plan: &Plan) -> Result<(), String> {
    dev::terminals()?;
    if let Some(dir) = plan.tmp.as_deref() {
        let point = mount_point(dir, true)?;
        tmpfs(&plan.tag, &fd_path(&point), "mode=0700")?;
    }
    Ok(())
}

fn is_link_path(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink())
}

/// Binds the link at `path` on itself (`open_tree` without following it), so the pane can
/// neither remove it nor put another in its place: a `.git` link swapped for one to a gitdir of
/// the pane's made the person's next git run that gitdir's `core.fsmonitor`.
fn pin_link(path: &Path) -> Result<(), String> {
    let c = cstring(path)?;
    let flags = OPEN_TREE_CLONE
        | libc::O_CLOEXEC.cast_unsigned()
        | libc::AT_SYMLINK_NOFOLLOW.cast_unsigned();
    // SAFETY: `c` is a valid C string; open_tree returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, c.as_ptr(), flags) };
    let tree = owned(fd).map_err(|e| format!("open_tree {}: {e}", path.display()))?;
    let parent = mount_point(path.parent().unwrap_or(Path::new("/")), true)?;
    let name = path.file_name().map(|n| CString::new(n.as_bytes())).and_then(Result::ok);
    let name = name.ok_or_else(|| format!("{}: no name", path.display()))?;
    let how = libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: `parent` is an open directory and `name` a valid C string.
    let point = owned(unsafe { libc::openat(parent.as_raw_fd(), name.as_ptr(), how) }.into())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    attach(&tree, &point)
}

/// Makes every directory between a writable root and a nested repository's `.git` a mount point
/// (bound on itself), so the pane cannot rename it: else it moved the repository's work tree away
/// (`mv sub subX`, the `.git` bind going with it) and made a `sub/.git` of its own in its place,
/// whose `core.fsmonitor` the person's next `git status` in `sub` ran outside the sandbox.
fn pin_nested_repositories<'a>(
    plan: &Plan,
    gits: impl Iterator<Item = &'a PathBuf>,
) -> Result<(), String> {
    let mut dirs = std::collections::BTreeSet::new();
    for git in gits {
        let Some(root) = plan.rw.iter().find(|root| git.starts_with(root)) else { continue };
        let between = git.ancestors().skip(1).take_while(|dir| dir != root);
        dirs.extend(between.filter(|dir| is_real_dir(dir)).map(Path::to_path_buf));
    }
    for dir in &dirs {
        attach(&clone(dir)?, &mount_point(dir, true)?)?;
    }
    Ok(())
}

/// What the pane must see that the private temporary directories or the cover of `/run` would
/// hide, bound back read-only: the plan's (a read-only pane's roots), the working directory, and
/// fugue's own binary (an agent's stage runs `fugue verdict`).
fn shown(plan: &Plan, cwd: &Path) -> Vec<PathBuf> {
    let covered = |p: &Path| PRIVATE_TMP.iter().any(|(at, _)| p.starts_with(at)) || under_run(p);
    let mut shown: Vec<PathBuf> = plan.ro.iter().chain([&cwd.to_path_buf()]).cloned().collect();
    shown.extend(std::env::current_exe());
    shown.retain(|p| covered(p) && !plan.rw.iter().any(|root| p.starts_with(root)));
    shown
}

/// The trees of `paths` that exist, cloned with their mounts.
fn clones(paths: &[PathBuf]) -> Result<Vec<(PathBuf, OwnedFd)>, String> {
    let mut trees = Vec::with_capacity(paths.len());
    for path in paths {
        match open_tree(path) {
            Ok(tree) => trees.push((path.clone(), tree)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(format!("open_tree {}: {e}", path.display())),
        }
    }
    Ok(trees)
}

/// The shared private temporary directories, cloned, by where the pane sees them; none in the
/// fallback's plan.
fn private_tmp(plan: &Plan) -> Result<Vec<(PathBuf, OwnedFd)>, String> {
    let Some(shared) = &plan.shared_tmp else { return Ok(Vec::new()) };
    let wanted = PRIVATE_TMP.iter().filter(|(at, _)| is_real_dir(Path::new(at)));
    wanted.map(|(at, name)| clone(&shared.join(name)).map(|fd| (PathBuf::from(at), fd))).collect()
}

/// What is bound back under the covered `/run`: the sockets passed on purpose, and the resolver's
/// configuration when `/etc/resolv.conf` leads there and the pane has the host's network.
fn passed_on(plan: &Plan) -> Vec<PathBuf> {
    let mut passed: Vec<PathBuf> = plan.allow_unix.clone();
    if plan.net.is_none()
        && let Ok(conf) = std::fs::canonicalize("/etc/resolv.conf")
        && under_run(&conf)
    {
        passed.push(conf);
    }
    passed.retain(|p| under_run(p));
    passed
}

fn under_run(path: &Path) -> bool {
    path.starts_with("/run") || path.starts_with("/var/run")
}

/// Covers `/run` (and `/var/run` when it is a directory of its own) with an empty file system,
/// then binds `passed` back at their paths.
fn cover_run(passed: &[(PathBuf, OwnedFd)]) -> Result<(), String> {
    for dir in ["/run", "/var/run"].map(Path::new).into_iter().filter(|d| is_real_dir(d)) {
        tmpfs("fugue-run", dir, "mode=0755")?;
    }
    for (path, tree) in passed {
        attach(tree, &mount_point(path, is_dir(tree))?)?;
    }
    Ok(())
}

/// Covers fugue's private directories with empty file systems; one gone since the plan was made
/// (or not in the pane's view: under the private `/tmp`) needs no cover.
fn hide(plan: &Plan) -> Result<(), String> {
    for dir in plan.hide.iter().filter(|d| is_real_dir(d)) {
        tmpfs(&plan.tag, dir, "mode=0700")?;
    }
    Ok(())
}

/// Whether the tree `fd` is a directory (or a file).
fn is_dir(fd: &OwnedFd) -> bool {
    std::fs::metadata(fd_path(fd)).is_ok_and(|m| m.is_dir())
}

fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// A detached copy of the mount tree at `path` (`open_tree(OPEN_TREE_CLONE | AT_RECURSIVE)`).
fn clone(path: &Path) -> Result<OwnedFd, String> {
    open_tree(path).map_err(|e| format!("open_tree {}: {e}", path.display()))
}

fn open_tree(path: &Path) -> std::io::Result<OwnedFd> {
    let c = cstring(path).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    let flags =
        OPEN_TREE_CLONE | libc::O_CLOEXEC.cast_unsigned() | libc::AT_RECURSIVE.cast_unsigned();
    // SAFETY: `c` is a valid C string; open_tree returns a new descriptor or -1.
    owned(unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, c.as_ptr(), flags) })
}

/// Makes every mount of the tree at `path` read-only; `tree`, when given, is a detached tree and
/// `path` is empty.
fn read_only(tree: Option<&OwnedFd>, path: &Path) -> Result<(), String> {
    let c = cstring(path)?;
    let attr = MountAttr { attr_set: MOUNT_ATTR_RDONLY, attr_clr: 0, propagation: 0, userns_fd: 0 };
    let (dirfd, empty) = match tree {
        Some(fd) => (fd.as_raw_fd(), libc::AT_EMPTY_PATH),
        None => (libc::AT_FDCWD, 0),
    };
    let flags = (libc::AT_RECURSIVE | empty).cast_unsigned();
    // SAFETY: `c` and `attr` outlive the call; the kernel reads `size_of::<MountAttr>()` bytes.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            c.as_ptr(),
            flags,
            &raw const attr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r != 0 {
        let what = if tree.is_some() { "a bound tree".into() } else { path.display().to_string() };
        return Err(format!("read-only {what}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Attaches the detached `tree` on the mount point `point`.
fn attach(tree: &OwnedFd, point: &OwnedFd) -> Result<(), String> {
    let empty = c"";
    let flags = MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH;
    // SAFETY: both descriptors are open and the paths are empty C strings.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            empty.as_ptr(),
            point.as_raw_fd(),
            empty.as_ptr(),
            flags,
        )
    };
    if r != 0 {
        let at = std::fs::read_link(fd_path(point)).unwrap_or_default();
        return Err(format!("move_mount {}: {}", at.display(), std::io::Error::last_os_error()));
    }
    Ok(())
}

/// The mount point at `path`, made where missing (a directory, or an empty file when `dir` is
/// false) one component at a time, never through a link; opened `O_PATH`.
fn mount_point(path: &Path, dir: bool) -> Result<OwnedFd, String> {
    let in_the_way = |e: std::io::Error| format!("mount point {}: {e}", path.display());
    match open_beneath(path, dir) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
        found => return found.map_err(in_the_way),
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(in_the_way(std::io::Error::from_raw_os_error(libc::ENOENT)));
    };
    let at = mount_point(parent, true)?;
    let c = CString::new(name.as_bytes()).map_err(|_| format!("{} holds a NUL", path.display()))?;
    make(&at, &c, dir).map_err(in_the_way)?;
    let flags = libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let flags = if dir { flags | libc::O_DIRECTORY } else { flags };
    // SAFETY: `at` is an open directory and `c` a valid C string.
    let point = owned(unsafe { libc::openat(at.as_raw_fd(), c.as_ptr(), flags) }.into())
        .map_err(in_the_way)?;
    if !dir && is_link(&point) {
        return Err(format!("mount point {}: a link is in the way", path.display()));
    }
    Ok(point)
}

/// `struct open_how` of `openat2(2)`.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

pub(super) const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
pub(super) const RESOLVE_IN_ROOT: u64 = 0x10;

/// `openat2(at, path, {flags, 0, resolve})`: a new descriptor, or a negative number with `errno`
/// set. The launcher's two path walks that must not be led astray (mount points here, a socket's
/// path as the pane sees it in `sockets`) open through it.
pub(super) fn openat2(
    at: libc::c_int,
    path: &std::ffi::CStr,
    flags: libc::c_int,
    resolve: u64,
) -> libc::c_long {
    let how = OpenHow { flags: flags.unsigned_abs().into(), mode: 0, resolve };
    // SAFETY: `path` and `how` are valid and outlive the call.
    unsafe {
        libc::syscall(
            libc::SYS_openat2,
            at,
            path.as_ptr(),
            &raw const how,
            std::mem::size_of::<OpenHow>(),
        )
    }
}

/// Opens `path` (`O_PATH`, a directory when `dir`) in one call, failing with `ELOOP` if any of
/// its components is a link.
fn open_beneath(path: &Path, dir: bool) -> std::io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| libc::EINVAL);
    let c = c.map_err(std::io::Error::from_raw_os_error)?;
    let flags = libc::O_PATH | libc::O_CLOEXEC | if dir { libc::O_DIRECTORY } else { 0 };
    owned(openat2(libc::AT_FDCWD, &c, flags, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS))
}

/// Whether `fd` (opened `O_PATH | O_NOFOLLOW`) is a symbolic link.
fn is_link(fd: &OwnedFd) -> bool {
    // SAFETY: an all-zero stat is valid, and fstat only writes to it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` outlives the call.
    let r = unsafe { libc::fstat(fd.as_raw_fd(), &raw mut st) };
    r != 0 || st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

/// Makes `name` in `at`: a directory, or an empty file.
fn make(at: &OwnedFd, name: &CString, dir: bool) -> std::io::Result<()> {
    // SAFETY: `at` is an open directory and `name` a valid C string.
    let r = unsafe {
        if dir {
            libc::mkdirat(at.as_raw_fd(), name.as_ptr(), 0o755)
        } else {
            let flags = libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC;
            let fd = libc::openat(at.as_raw_fd(), name.as_ptr(), flags | libc::O_NOFOLLOW, 0o600);
            if fd >= 0 {
                libc::close(fd);
            }
            fd.min(0)
        }
    };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        // Made in between by another pane starting: the open that follows checks what it is.
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(e);
        }
    }
    Ok(())
}

/// An empty file system on `dir`, named `source`, without set-user-id or device files.
fn tmpfs(source: &str, dir: &Path, data: &str) -> Result<(), String> {
    let (source, fstype, data) = (
        CString::new(source).unwrap_or_default(),
        c"tmpfs",
        CString::new(data).unwrap_or_default(),
    );
    let target = cstring(dir)?;
    let flags = libc::MS_NOSUID | libc::MS_NODEV;
    // SAFETY: every pointer is a valid C string that outlives the call.
    let r = unsafe {
        libc::mount(source.as_ptr(), target.as_ptr(), fstype.as_ptr(), flags, data.as_ptr().cast())
    };
    if r != 0 {
        return Err(format!("mount {}: {}", dir.display(), std::io::Error::last_os_error()));
    }
    Ok(())
}

/// The path through which `fd` is reached again (the kernel follows it to the very file).
fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// A descriptor a system call returned, or its error.
fn owned(fd: libc::c_long) -> std::io::Result<OwnedFd> {
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let fd =
        libc::c_int::try_from(fd).map_err(|_| std::io::Error::other("descriptor too large"))?;
    // SAFETY: the call returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub(crate) fn cstring(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| format!("{} holds a NUL", path.display()))
}
