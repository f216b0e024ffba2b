//! The system calls a waiting thread can sit in, by number, for `x86_64` and `aarch64`, and the line
//! `/proc/PID/task/TID/syscall` shows for one: `nr a0 a1 a2 a3 a4 a5 sp pc` in hex, `running`, or
//! `-1 sp pc` for a thread blocked outside a system call.

/// What a blocking call means for the question "does it wait for the terminal?".
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// `read`, `readv`, `pread64` of `a0`.
    Read,
    /// `poll`, `ppoll`: `a0` points at `a1` pollfds.
    Poll,
    /// `select`, `pselect6`: `a0` descriptors, sets at `a1`..`a3`.
    Select,
    /// `epoll_wait`, `epoll_pwait`, `epoll_pwait2` on the set `a0`.
    Epoll,
    /// A lock, a signal wait, a timer or a child: no outside event wakes it.
    Neutral,
    /// Anything else (accept, recvfrom, openat of a FIFO, a wait outside any call): busy.
    Other,
}

#[cfg(target_arch = "x86_64")]
mod table {
    pub(super) const READ: &[i64] = &[0, 17, 19]; // read, pread64, readv
    pub(super) const POLL: &[i64] = &[7, 271]; // poll, ppoll
    pub(super) const SELECT: &[i64] = &[23, 270]; // select, pselect6
    pub(super) const EPOLL: &[i64] = &[232, 281, 441]; // epoll_wait, epoll_pwait, epoll_pwait2
    /// `pause`, `nanosleep`, `wait4`, `rt_sigtimedwait`, `rt_sigsuspend`, `futex`,
    /// `clock_nanosleep`, `waitid`, `futex_waitv`.
    pub(super) const NEUTRAL: &[i64] = &[34, 35, 61, 128, 130, 202, 230, 247, 449];
    /// Calls whose timeout is an `int` of milliseconds (negative: none): poll, epoll_wait,
    /// epoll_pwait; with the argument that holds it.
    pub(super) const TIMEOUT_MS: &[(i64, usize)] = &[(7, 2), (232, 3), (281, 3)];
    /// Calls whose timeout is a pointer (null: none): ppoll, select, pselect6, epoll_pwait2,
    /// rt_sigtimedwait, futex, futex_waitv.
    pub(super) const TIMEOUT_PTR: &[(i64, usize)] =
        &[(271, 2), (23, 4), (270, 4), (441, 3), (128, 2), (202, 3), (449, 3)];
    /// Sleeps: nanosleep, clock_nanosleep.
    pub(super) const SLEEP: &[i64] = &[35, 230];
    /// The two calls the Go runtime sleeps in on its own: `futex`, `nanosleep`.
    pub(super) const FUTEX: i64 = 202;
    pub(super) const NANOSLEEP: i64 = 35;
}

#[cfg(target_arch = "aarch64")]
mod table {
    pub(super) const READ: &[i64] = &[63, 65, 67]; // read, readv, pread64
    pub(super) const POLL: &[i64] = &[73]; // ppoll (there is no poll)
    pub(super) const SELECT: &[i64] = &[72]; // pselect6 (there is no select)
    pub(super) const EPOLL: &[i64] = &[22, 441]; // epoll_pwait, epoll_pwait2
    /// `waitid`, `futex`, `nanosleep`, `clock_nanosleep`, `rt_sigsuspend`, `rt_sigtimedwait`,
    /// `wait4`, `futex_waitv`.
    pub(super) const NEUTRAL: &[i64] = &[95, 98, 101, 115, 133, 137, 260, 449];
    /// epoll_pwait's timeout, an `int` of milliseconds (negative: none).
    pub(super) const TIMEOUT_MS: &[(i64, usize)] = &[(22, 3)];
    /// ppoll, pselect6, epoll_pwait2, rt_sigtimedwait, futex, futex_waitv: a timeout pointer
    /// (null: none).
    pub(super) const TIMEOUT_PTR: &[(i64, usize)] =
        &[(73, 2), (72, 4), (441, 3), (137, 2), (98, 3), (449, 3)];
    /// Sleeps: nanosleep, clock_nanosleep.
    pub(super) const SLEEP: &[i64] = &[101, 115];
    /// The two calls the Go runtime sleeps in on its own: `futex`, `nanosleep`.
    pub(super) const FUTEX: i64 = 98;
    pub(super) const NANOSLEEP: i64 = 101;
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod table {
    // Unknown numbers: every wait is "other", so nothing is ever called input.
    pub(super) const READ: &[i64] = &[];
    pub(super) const POLL: &[i64] = &[];
    pub(super) const SELECT: &[i64] = &[];
    pub(super) const EPOLL: &[i64] = &[];
    pub(super) const NEUTRAL: &[i64] = &[];
    pub(super) const TIMEOUT_MS: &[(i64, usize)] = &[];
    pub(super) const TIMEOUT_PTR: &[(i64, usize)] = &[];
    pub(super) const SLEEP: &[i64] = &[];
    pub(super) const FUTEX: i64 = i64::MIN;
    pub(super) const NANOSLEEP: i64 = i64::MIN;
}

pub(super) fn classify(nr: i64) -> Kind {
    use table::{EPOLL, NEUTRAL, POLL, READ, SELECT};
    if READ.contains(&nr) {
        Kind::Read
    } else if POLL.contains(&nr) {
        Kind::Poll
    } else if SELECT.contains(&nr) {
        Kind::Select
    } else if EPOLL.contains(&nr) {
        Kind::Epoll
    } else if NEUTRAL.contains(&nr) {
        Kind::Neutral
    } else {
        Kind::Other
    }
}

/// A thread blocked in a system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Call {
    pub(super) nr: i64,
    pub(super) args: [u64; 6],
}

impl Call {
    /// None for `running` or a line that does not parse; `nr` -1 for a wait outside any call.
    pub(super) fn parse(line: &str) -> Option<Call> {
        let mut words = line.split_whitespace();
        let nr = words.next()?.parse::<i64>().ok()?;
        let mut args = [0u64; 6];
        if nr >= 0 {
            for arg in &mut args {
                let word = words.next()?;
                *arg = u64::from_str_radix(word.strip_prefix("0x").unwrap_or(word), 16).ok()?;
            }
        }
        Some(Call { nr, args })
    }

    /// Whether the call waits with no timeout, so that only what it waits on (or a signal) ends it.
    /// A read has none of its own (the terminal's `VTIME` is the caller's to check); a sleep is
    /// nothing but one.
    pub(super) fn endless(&self) -> bool {
        if table::SLEEP.contains(&self.nr) {
            return false;
        }
        if let Some(&(_, i)) = table::TIMEOUT_MS.iter().find(|(nr, _)| *nr == self.nr) {
            // An int in a 64-bit register: its upper half is not the caller's.
            return (self.args[i] as u32).cast_signed() < 0;
        }
        if let Some(&(_, i)) = table::TIMEOUT_PTR.iter().find(|(nr, _)| *nr == self.nr) {
            return self.args[i] == 0;
        }
        true
    }

    /// Whether this is how the Go runtime's own threads sleep on a timer: `nanosleep` (sysmon's
    /// naps) or a private `futex` wait with a relative timeout (sysmon, and an idle thread, on
    /// its note). C libraries wait otherwise (`clock_nanosleep`, `FUTEX_WAIT_BITSET`), and a
    /// goroutine's own timer is the runtime poller's epoll timeout, never one of these.
    pub(super) fn go_runtime_sleep(&self) -> bool {
        const FUTEX_WAIT_PRIVATE: u64 = 0x80;
        self.nr == table::NANOSLEEP
            || (self.nr == table::FUTEX && self.args[1] == FUTEX_WAIT_PRIVATE && self.args[3] != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_as_the_kernel_prints_them() {
        let call = Call::parse("7 0x7ffd1234 0x3 0xffffffff 0x0 0x0 0x0 0x7ffd0000 0x7f00\n");
        assert_eq!(call, Some(Call { nr: 7, args: [0x7ffd_1234, 3, 0xffff_ffff, 0, 0, 0] }));
        assert_eq!(Call::parse("-1 0x7ffd0000 0x7f00\n").map(|c| c.nr), Some(-1));
        assert_eq!(Call::parse("running\n"), None);
        assert_eq!(Call::parse("0 0x1\n"), None);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn timeouts_are_read_from_the_call() {
        let call = |nr, args| Call { nr, args };
        // poll(fds, 3, -1) as the kernel shows it, and with 10 ms.
        assert!(call(7, [1, 3, 0xffff_ffff, 0, 0, 0]).endless());
        assert!(!call(7, [1, 3, 10, 0, 0, 0]).endless());
        // pselect6 with and without a timespec.
        assert!(call(270, [1, 2, 0, 0, 0, 0]).endless());
        assert!(!call(270, [1, 2, 0, 0, 0x7ffd_0000, 0]).endless());
        assert!(call(0, [0, 1, 1, 0, 0, 0]).endless());
        // A lock with and without a timeout, a sleep, a child.
        assert!(call(202, [1, 0x80, 0, 0, 0, 0]).endless());
        assert!(!call(202, [1, 0x80, 0, 0x7ffd_0000, 0, 0]).endless());
        assert!(!call(230, [1, 0, 0x7ffd_0000, 0, 0, 0]).endless());
        assert!(call(61, [0xffff_ffff, 0, 0, 0, 0, 0]).endless());
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_go_runtimes_sleeps_are_told_from_a_c_librarys() {
        let call = |nr, args| Call { nr, args };
        // sysmon on its note (futex, FUTEX_WAIT_PRIVATE, a timeout) and in a nap (nanosleep).
        assert!(call(202, [0x52_d178, 0x80, 0, 0xc0_0004_beb0, 0, 0]).go_runtime_sleep());
        assert!(call(35, [0xc0_0004_beb0, 0, 0, 0, 0, 0]).go_runtime_sleep());
        // glibc's timed waits: FUTEX_WAIT_BITSET with a clock, clock_nanosleep; and no timeout.
        assert!(!call(202, [1, 0x189, 0, 0x7ffd_0000, 0, 0]).go_runtime_sleep());
        assert!(!call(230, [1, 0, 0x7ffd_0000, 0, 0, 0]).go_runtime_sleep());
        assert!(!call(202, [1, 0x80, 0, 0, 0, 0]).go_runtime_sleep());
    }

    #[test]
    fn unknown_numbers_are_other() {
        assert_eq!(classify(-1), Kind::Other);
        assert_eq!(classify(100_000), Kind::Other);
    }
}
