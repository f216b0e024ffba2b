//! What a test can see of a process from `/proc`: memory, threads, descriptors, children,
//! sessions and sockets.
//!
//! The reliability tests measure fugue from the outside, the way an operator would: resident
//! memory and thread counts from `/proc/PID/status`, open descriptors from `/proc/PID/fd`, children
//! and zombies from every `/proc/*/stat`, sockets from `/proc/net/*`. Every reader tolerates a
//! process that vanishes mid-read.

use std::collections::HashSet;
use std::fs;
use std::time::{Duration, Instant};

/// A field of `/proc/PID/status` such as `VmRSS` or `Threads`, as its leading number.
pub fn status_field(pid: u32, field: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
}

/// Resident memory in KiB.
pub fn rss_kb(pid: u32) -> u64 {
    status_field(pid, "VmRSS").unwrap_or(0)
}

pub fn threads(pid: u32) -> u64 {
    status_field(pid, "Threads").unwrap_or(0)
}

/// The names of a process's threads (`/proc/PID/task/*/comm`, at most 15 characters each).
pub fn thread_names(pid: u32) -> Vec<String> {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    dir.filter_map(|e| fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_string())
        .collect()
}

/// Each open descriptor with what it names (`/dev/pts/3`, `pipe:[1234]`, a path).
pub fn fd_targets(pid: u32) -> Vec<(String, String)> {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let target = fs::read_link(e.path()).ok()?;
        Some((e.file_name().to_string_lossy().into_owned(), target.to_string_lossy().into_owned()))
    })
    .collect()
}

/// Waits until `pid` is blocked in a sleep system call (`/proc/PID/syscall`), that is past its
/// start-up: a program like `sleep` opens and closes files of its own until then.
#[track_caller]
pub fn wait_asleep(pid: u32) {
    let asleep = [libc::SYS_nanosleep, libc::SYS_clock_nanosleep];
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let syscall = fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
        let number = syscall.split_whitespace().next().and_then(|n| n.parse::<i64>().ok());
        if number.is_some_and(|n| asleep.contains(&n)) {
            return;
        }
        assert!(Instant::now() < deadline, "process {pid} never went to sleep ({syscall:?})");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Open file descriptors.
pub fn fds(pid: u32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// One line of `/proc/PID/stat`, split after the command name.
pub struct Stat {
    pub pid: u32,
    pub state: char,
    pub ppid: u32,
    pub pgrp: u32,
    pub session: u32,
}

pub fn stat(pid: u32) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some(Stat { pid, state, ppid, pgrp, session })
}

/// Every process on the machine, as far as /proc shows it now.
pub fn all() -> Vec<Stat> {
    let Ok(dir) = fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()).filter_map(stat).collect()
}

/// The direct children of `pid` with their states.
pub fn children(pid: u32) -> Vec<Stat> {
    all().into_iter().filter(|s| s.ppid == pid).collect()
}

/// Children of `pid` that are zombies (exited, not reaped).
pub fn zombies(pid: u32) -> Vec<u32> {
    children(pid).into_iter().filter(|s| s.state == 'Z').map(|s| s.pid).collect()
}

/// Every descendant of `pid` (children, grandchildren, ...), excluding zombies.
pub fn descendants(pid: u32) -> Vec<u32> {
    let procs = all();
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for p in procs.iter().filter(|s| s.ppid == parent && s.state != 'Z') {
            found.push(p.pid);
            frontier.push(p.pid);
        }
    }
    found
}

/// Live processes whose session id is `sid`.
pub fn session_members(sid: u32) -> Vec<u32> {
    all().into_iter().filter(|s| s.session == sid && s.state != 'Z').map(|s| s.pid).collect()
}

/// Which of `pids` still exist and are not zombies.
pub fn survivors(pids: &[u32]) -> Vec<u32> {
    pids.iter().copied().filter(|p| stat(*p).is_some_and(|s| s.state != 'Z')).collect()
}

/// Waits until none of `pids` is alive; returns those still alive at the deadline.
pub fn all_gone_within(pids: &[u32], within: Duration) -> Vec<u32> {
    let deadline = Instant::now() + within;
    loop {
        let left = survivors(pids);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Socket inodes held open by `pid` (from the `socket:[N]` links in /proc/PID/fd).
pub fn socket_inodes(pid: u32) -> HashSet<u64> {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/fd")) else { return HashSet::new() };
    dir.filter_map(|e| fs::read_link(e.ok()?.path()).ok())
        .filter_map(|target| {
            let text = target.to_str()?.to_string();
            text.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect()
}

/// The inodes of every IPv4/IPv6 TCP and UDP socket on the machine (`/proc/net/{tcp,udp}{,6}`).
pub fn inet_socket_inodes() -> HashSet<u64> {
    let mut inodes = HashSet::new();
    for table in ["tcp", "tcp6", "udp", "udp6", "raw", "raw6"] {
        let Ok(text) = fs::read_to_string(format!("/proc/net/{table}")) else { continue };
        for line in text.lines().skip(1) {
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            if let Some(inode) = line.split_whitespace().nth(9).and_then(|i| i.parse().ok()) {
                inodes.insert(inode);
            }
        }
    }
    inodes
}
