//! The pane's `/dev`, as bubblewrap's `--dev` makes it: an empty file system with the few devices
//! a program uses bound in from the host's (`null`, `zero`, `full`, `random`, `urandom`, `tty`),
//! a terminal file system of its own on `/dev/pts` with `/dev/ptmx` leading to it, the
//! descriptor links (`fd`, `stdin`, `stdout`, `stderr`), and `/dev/shm` (the private one, bound
//! later).
//!
//! The host's `/dev` showed every device to the pane: as root, the virtual consoles' input
//! (`/dev/tty1`) and screens (`/dev/vcs*`), which a pane read though it could not write them; and
//! the host's `/dev/pts`, every terminal of the pane's owner (as root: of the machine, the
//! person's own included), which a pane opened to write into, or to read what was typed there.
//! The pane's own terminal stays open on its descriptors and as `/dev/tty`; only its name is gone
//! (`tty` says "not a tty", as under bubblewrap).

use std::path::{Path, PathBuf};

/// The host's devices bound into the pane's `/dev` (by `mounts`, once `/dev` is covered).
pub(super) fn devices() -> Vec<PathBuf> {
    ["null", "zero", "full", "random", "urandom", "tty"].map(|n| Path::new("/dev").join(n)).to_vec()
}

/// The links of the pane's `/dev`, by name and what they lead to.
const LINKS: [(&str, &str); 5] = [
    ("ptmx", "pts/ptmx"),
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
];

/// Lays the rest of the pane's `/dev` out in the empty file system that covers it.
pub(super) fn fill() -> Result<(), String> {
    for dir in ["/dev/pts", "/dev/shm"] {
        std::fs::create_dir(dir).map_err(|e| format!("mkdir {dir}: {e}"))?;
    }
    terminals()?;
    for (name, to) in LINKS {
        let at = Path::new("/dev").join(name);
        std::os::unix::fs::symlink(to, &at).map_err(|e| format!("{}: {e}", at.display()))?;
    }
    Ok(())
}

/// A terminal file system of the pane's own on `/dev/pts` (see the module's comment).
pub(super) fn terminals() -> Result<(), String> {
    let (source, target, data) = (c"devpts", c"/dev/pts", c"newinstance,ptmxmode=0666,mode=0620");
    let flags = libc::MS_NOSUID | libc::MS_NOEXEC;
    // SAFETY: every pointer is a valid C string that outlives the call.
    let r = unsafe {
        libc::mount(source.as_ptr(), target.as_ptr(), source.as_ptr(), flags, data.as_ptr().cast())
    };
    if r != 0 {
        return Err(format!("mount /dev/pts: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}
