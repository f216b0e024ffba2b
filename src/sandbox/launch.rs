//! The launcher: `fugue __sandbox-exec PLAN -- PROGRAM ARGS...`, run as a pane's process. It
//! confines itself as `PLAN` says and execs the program in its place, so the pane's pid is the
//! program's; a child forked first stays outside to answer the program's seccomp notifications
//! (see `lockdown`). If any step fails it prints why and exits 125 — it never runs the program
//! unconfined.
//!
//! The steps, in order: a user namespace (the person's own uid mapped to itself, so files keep
//! their owners) with a mount namespace, or the network holder's user and network namespace
//! joined and a mount namespace of its own (root with no user namespaces allowed makes them
//! without one); fugue's private directories covered by empty `tmpfs` mounts, the pane's own ones
//! bound back in; every `.git` of the roots bound read-only; then `lockdown::apply`:
//! `no_new_privs`, every capability dropped, Landlock, the seccomp filter that refuses the mount
//! API and new namespaces, so the namespace cannot be undone from inside.

use super::landlock;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(crate) use super::plan::Plan;

/// The argument vector that runs `argv` under `plan`: fugue's own binary as the launcher.
pub(crate) fn wrap(plan: &Plan, argv: &[std::ffi::OsString]) -> Vec<std::ffi::OsString> {
    let mut out: Vec<std::ffi::OsString> = vec![
        "/proc/self/exe".into(),
        "__sandbox-exec".into(),
        serde_json::to_string(plan).unwrap_or_default().into(),
        "--".into(),
    ];
    out.extend(argv.iter().cloned());
    out
}

/// `fugue __sandbox-exec PLAN -- PROGRAM ARGS...`: forks the server of the program's sockets
/// (`lockdown::serve`), then confines itself and execs the program in its place, so the pane's
/// pid is the program's.
pub(crate) fn main(args: &[String]) -> ExitCode {
    let (plan, program) = match args {
        [plan, dash, program @ ..] if dash == "--" && !program.is_empty() => (plan, program),
        _ => return fail("usage: fugue __sandbox-exec PLAN -- PROGRAM [ARGS...]"),
    };
    let plan: Plan = match serde_json::from_str(plan) {
        Ok(plan) => plan,
        Err(e) => return fail(&format!("bad plan: {e}")),
    };
    let (ours, theirs) = match UnixStream::pair() {
        Ok(pair) => pair,
        Err(e) => return fail(&format!("socketpair: {e}")),
    };
    // SAFETY: the launcher has one thread here; the child only serves and exits.
    match unsafe { libc::fork() } {
        -1 => return fail(&format!("fork: {}", std::io::Error::last_os_error())),
        0 => {
            drop(ours);
            serve_apart(theirs, &plan);
        }
        _ => drop(theirs),
    }
    if let Err(why) = confine(&plan).and_then(|()| super::lockdown::apply(&plan, &ours)) {
        return fail(&why);
    }
    drop(ours);
    let mut cmd = std::process::Command::new(&program[0]);
    cmd.args(&program[1..]);
    cmd.env_remove(landlock::PRETEND_ABSENT);
    cmd.env_remove(super::net::PRETEND_NO_USERNS);
    if let Some(tmp) = &plan.tmp {
        cmd.env("TMPDIR", tmp);
    }
    let e = cmd.exec();
    eprintln!("fugue: cannot run {}: {e}", program[0]);
    ExitCode::from(127)
}

/// The server of the program's sockets: in a session of its own, holding nothing of the pane's
/// (not its terminal, so the pane ends when its program does), it serves until no process under
/// the filter is left, then exits.
fn serve_apart(channel: UnixStream, plan: &Plan) -> ! {
    // SAFETY: setsid takes no arguments; the child is no group leader.
    unsafe { libc::setsid() };
    let keep = channel.as_raw_fd();
    let open: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map(|dir| dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    // SAFETY: the path is a valid C string; dup2 and close only change this process's table.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for fd in 0..3 {
            libc::dup2(null, fd);
        }
        for fd in open.into_iter().filter(|&fd| fd > 2 && fd != keep) {
            libc::close(fd);
        }
    }
    super::lockdown::serve(channel, plan);
    // SAFETY: _exit ends this process without running the parent's atexit work.
    unsafe { libc::_exit(0) }
}

fn fail(why: &str) -> ExitCode {
    eprintln!("fugue: sandbox unavailable: {why}");
    ExitCode::from(super::net::UNAVAILABLE)
}

/// Runs the launcher once with `plan` and a program that does nothing; `Err` says why the
/// sandbox cannot be made here.
pub(crate) fn probe(plan: &Plan) -> Result<(), String> {
    let argv = wrap(plan, &["/proc/self/exe".into(), "--version".into()]);
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let out = crate::inherit::spawn(&mut cmd)
        .and_then(std::process::Child::wait_with_output)
        .map_err(|e| format!("cannot start the sandbox launcher: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let why = text.trim().trim_start_matches("fugue: sandbox unavailable: ");
    Err(if why.is_empty() {
        format!("the sandbox launcher failed ({})", out.status)
    } else {
        why.to_string()
    })
}

/// Every step but the exec; see the module's comment.
fn confine(plan: &Plan) -> Result<(), String> {
    let abi = landlock::abi();
    if abi < landlock::MIN_ABI {
        // Said before any namespace is made: Landlock is what the sandbox rests on.
        landlock::restrict(abi, &[])?;
    }
    if plan.fallback {
        // No namespaces: `lockdown::apply` does the rest.
        return Ok(());
    }
    match plan.net {
        Some(holder) => {
            super::net::join(holder)?;
            super::net::unshare(libc::CLONE_NEWNS)?;
        }
        None => super::net::new_user_namespace(libc::CLONE_NEWNS)?,
    }
    mount(None, Path::new("/"), None, libc::MS_REC | libc::MS_PRIVATE, None)?;
    // Opened in the new namespace (a bind mount's source must be in it), before anything is
    // covered.
    let keep: Vec<(PathBuf, OwnedFd)> =
        plan.keep.iter().filter_map(|p| open_path(p).ok().map(|fd| (p.clone(), fd))).collect();
    // Each cover is named with the pane's mark; fugue's own private directory is always
    // covered, so the mark is always there.
    let mut marked = false;
    for dir in &plan.hide {
        let flags = libc::MS_NOSUID | libc::MS_NODEV;
        match mount(Some(&plan.tag), dir, Some("tmpfs"), flags, Some("mode=0700")) {
            // Another fugue removed its directory since the plan was made: nothing to hide.
            Err(_) if std::fs::symlink_metadata(dir).is_err() => {}
            done => {
                done?;
                marked = true;
            }
        }
    }
    if !marked {
        return Err("nothing was hidden, so the pane's processes cannot be marked".into());
    }
    if let Some(tmp) = &plan.tmp {
        std::fs::create_dir_all(tmp).map_err(|e| format!("mkdir {}: {e}", tmp.display()))?;
    }
    for (path, fd) in &keep {
        std::fs::create_dir_all(path).map_err(|e| format!("mkdir {}: {e}", path.display()))?;
        let from = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        mount(Some(&from.to_string_lossy()), path, None, libc::MS_BIND | libc::MS_REC, None)?;
    }
    for dir in plan.git.iter().filter(|d| d.is_dir()) {
        bind_read_only(dir)?;
    }
    Ok(())
}

/// Binds `dir` onto itself read-only, keeping the flags the kernel locks for a mount made in a
/// user namespace (nosuid, nodev, noexec, atime).
fn bind_read_only(dir: &Path) -> Result<(), String> {
    mount(Some(&dir.to_string_lossy()), dir, None, libc::MS_BIND | libc::MS_REC, None)?;
    let c = cstring(dir)?;
    // SAFETY: an all-zero statvfs is valid, and statvfs only writes to it.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid C string and `st` outlives the call.
    if unsafe { libc::statvfs(c.as_ptr(), &raw mut st) } != 0 {
        return Err(format!("statvfs {}: {}", dir.display(), std::io::Error::last_os_error()));
    }
    let mut flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY;
    for (st_flag, ms_flag) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if st.f_flag & st_flag != 0 {
            flags |= ms_flag;
        }
    }
    mount(None, dir, None, flags, None)
}

fn cstring(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| format!("{} holds a NUL", path.display()))
}

fn open_path(path: &Path) -> Result<OwnedFd, String> {
    let c = cstring(path)?;
    // SAFETY: `c` is a valid C string; O_PATH opens without reading.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(format!("{}: {}", path.display(), std::io::Error::last_os_error()));
    }
    // SAFETY: open returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn mount(
    source: Option<&str>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> Result<(), String> {
    let c = |s: Option<&str>| s.map(|s| CString::new(s).unwrap_or_default());
    let (source_c, fstype_c, data_c) = (c(source), c(fstype), c(data));
    let target_c = cstring(target)?;
    let ptr = |s: &Option<CString>| s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: every pointer is null or a valid C string that outlives the call.
    let r = unsafe {
        libc::mount(ptr(&source_c), target_c.as_ptr(), ptr(&fstype_c), flags, ptr(&data_c).cast())
    };
    if r != 0 {
        return Err(format!("mount {}: {}", target.display(), std::io::Error::last_os_error()));
    }
    Ok(())
}
