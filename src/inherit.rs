//! What a process fugue starts inherits: no descriptor of fugue's.
//!
//! Everything fugue opens is closed on exec from the start, with one exception it does not
//! control: portable-pty's `openpty` opens a terminal's two ends and only then marks them close on
//! exec. A pane's own process closes every inherited descriptor before its exec, so it is safe; but
//! a `git` started in that moment by another thread would keep the new pane's terminal open —
//! the pane's reader would wait for git before it saw the end, and a closed pane's terminal would
//! not hang up. So opening a terminal and starting a process that keeps what it inherits exclude
//! each other, through one lock held for microseconds.

use crate::error::{Error, ErrorKind, Result};
use parking_lot::Mutex;
use portable_pty::{PtyPair, PtySize};
use std::process::{Child, Command};

/// Held while a terminal's descriptors may not yet be closed on exec, and while a process that
/// would inherit them is started.
static INHERITABLE: Mutex<()> = Mutex::new(());

/// A new terminal, both ends closed on exec by the time anyone else may start a process.
pub(crate) fn open_pty(size: PtySize) -> Result<PtyPair> {
    let _held = INHERITABLE.lock();
    portable_pty::native_pty_system()
        .openpty(size)
        .map_err(|e| Error::new(ErrorKind::SpawnFailed, format!("cannot open a pty: {e}")))
}

/// Starts `cmd` while no terminal is being opened.
pub(crate) fn spawn(cmd: &mut Command) -> std::io::Result<Child> {
    let _held = INHERITABLE.lock();
    cmd.spawn()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// The terminals a process holds, from its `/proc/PID/fd`.
    fn terminals(pid: u32) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
        dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .map(|target| target.to_string_lossy().into_owned())
            .filter(|target| target.starts_with("/dev/pts/") || target == "/dev/ptmx")
            .collect()
    }

    /// One thread opens terminals without pause while this one starts processes; none of them
    /// may hold a terminal (their standard streams are /dev/null, so any terminal is a leak).
    #[test]
    fn a_process_started_while_terminals_open_holds_none() {
        let stop = Arc::new(AtomicBool::new(false));
        let opener = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let size = PtySize { rows: 24, cols: 80, pixel_width: 0, pixel_height: 0 };
                while !stop.load(Ordering::Relaxed) {
                    drop(open_pty(size).unwrap());
                }
            })
        };
        let mut leaks = Vec::new();
        for _ in 0..300 {
            let mut cmd = Command::new("sleep");
            cmd.arg("10").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
            let mut child = spawn(&mut cmd).unwrap();
            leaks.extend(terminals(child.id()));
            child.kill().unwrap();
            child.wait().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        opener.join().unwrap();
        assert!(leaks.is_empty(), "started processes held {leaks:?}");
    }
}
