//! The two processes a sandboxed pane's launcher makes, each made the cheapest way that keeps its
//! promise: C, the init of the pane's pid namespace, by one `clone` that makes the namespace too
//! (so the launcher itself never enters a pid namespace of its own and may still start threads),
//! and G, the program, by a `clone` that shares C's memory until G execs (as `posix_spawn` does),
//! so that nothing of C is copied for a process that is about to replace itself.
//!
//! G's exec is prepared in full before it is made (`Exec`): the argument and environment vectors
//! and their pointers. G runs on a stack of its own, allocates nothing on its way to the exec, and
//! C waits, suspended by the kernel, until G has exec'd or ended.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// The stack G runs on until its exec: its steps take little, and glibc's `execvpe` puts a
/// path on it while it searches `PATH`.
const STACK: usize = 256 << 10;
const PAGE: usize = 4096;

/// Makes C, the child that runs `init`: in a new pid namespace unless `fallback` (a plain fork).
/// The caller must have no other thread (the child is a copy of it with no lock held).
/// `init` must not return; if it did, C would end at once.
pub(crate) fn init(fallback: bool, init: impl FnOnce()) -> Result<libc::pid_t, String> {
    let flags = libc::SIGCHLD | if fallback { 0 } else { libc::CLONE_NEWPID };
    // SAFETY: clone without CLONE_VM and with a null stack is fork with flags: the child runs on
    // a copy of this stack, and no lock is held (see above).
    let pid = unsafe { libc::syscall(libc::SYS_clone, libc::c_long::from(flags), 0, 0, 0, 0) };
    match pid {
        0 => {
            init();
            // SAFETY: _exit ends the process at once, as a forked child should.
            unsafe { libc::_exit(125) }
        }
        p if p < 0 => Err(format!("clone: {}", std::io::Error::last_os_error())),
        p => Ok(libc::pid_t::try_from(p).unwrap_or(-1)),
    }
}

/// The program's exec, prepared before G is made: nothing is built after.
pub(crate) struct Exec {
    /// What `execvpe` looks for on `PATH` (its first argument).
    file: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    envp_ptrs: Vec<*const libc::c_char>,
}

impl Exec {
    /// `program` with this process's environment, `remove` taken out and `set` put in.
    pub(crate) fn new(
        program: &[String],
        remove: &[&str],
        set: &[(&str, OsString)],
    ) -> Result<Exec, String> {
        let c =
            |bytes: Vec<u8>| CString::new(bytes).map_err(|_| "a NUL byte in the program's line");
        let argv =
            program.iter().map(|a| c(a.clone().into_bytes())).collect::<Result<Vec<_>, _>>()?;
        let file = argv.first().cloned().ok_or("no program")?;
        let set_names: Vec<&str> = set.iter().map(|(name, _)| *name).collect();
        let kept = std::env::vars_os().filter(|(name, _)| {
            let name = name.as_bytes();
            !remove.iter().chain(&set_names).any(|r| r.as_bytes() == name)
        });
        let pairs = kept.chain(set.iter().map(|(name, value)| ((*name).into(), value.clone())));
        let envp = pairs
            .map(|(name, value)| {
                let mut pair = name.into_vec();
                pair.push(b'=');
                pair.extend(value.as_bytes());
                c(pair)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let pointers = |v: &[CString]| {
            v.iter().map(|s| s.as_ptr()).chain(std::iter::once(std::ptr::null())).collect()
        };
        Ok(Exec { argv_ptrs: pointers(&argv), envp_ptrs: pointers(&envp), file, argv, envp })
    }

    /// The program's name, for a message.
    pub(crate) fn name(&self) -> std::borrow::Cow<'_, str> {
        self.file.to_string_lossy()
    }

    /// Replaces this process with the program; returns only when that failed, with why.
    pub(crate) fn exec(&self) -> std::io::Error {
        debug_assert_eq!(self.argv_ptrs.len(), self.argv.len() + 1);
        debug_assert_eq!(self.envp_ptrs.len(), self.envp.len() + 1);
        // SAFETY: every pointer points into `self`'s strings, and both vectors end with a null.
        unsafe {
            libc::execvpe(self.file.as_ptr(), self.argv_ptrs.as_ptr(), self.envp_ptrs.as_ptr())
        };
        std::io::Error::last_os_error()
    }
}

/// Makes G, which runs `program` (it must exec or `_exit`; it ends at once if it returns) on a stack of its own
/// in this process's memory; returns once G has exec'd or ended, with G's pid.
pub(crate) fn program<F: Fn()>(program: &F) -> Result<libc::pid_t, String> {
    let stack = Stack::new()?;
    extern "C" fn trampoline<F: Fn()>(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `&F` passed to clone below, alive until clone returns, which is
        // after this process has exec'd or ended (CLONE_VFORK).
        let program = unsafe { &*arg.cast::<F>() };
        program();
        // SAFETY: _exit ends the process at once; a return would run on a stack about to go.
        unsafe { libc::_exit(125) }
    }
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
    let arg = std::ptr::from_ref(program).cast_mut().cast();
    // SAFETY: the child runs `trampoline` on `stack`, which outlives it (the caller is suspended
    // until the child has exec'd or ended, and the mapping is dropped after), and touches only
    // what `program` does.
    let pid = unsafe { libc::clone(trampoline::<F>, stack.top(), flags, arg) };
    if pid < 0 {
        return Err(format!("clone: {}", std::io::Error::last_os_error()));
    }
    Ok(pid)
}

/// An anonymous mapping for G's stack, with a page below it that faults on an overflow.
struct Stack(*mut libc::c_void);

impl Stack {
    fn new() -> Result<Stack, String> {
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK;
        // SAFETY: a new anonymous mapping; no pointer is passed in.
        let base = unsafe { libc::mmap(std::ptr::null_mut(), STACK + PAGE, prot, flags, -1, 0) };
        if base == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: the lowest page of the mapping just made.
        unsafe { libc::mprotect(base, PAGE, libc::PROT_NONE) };
        Ok(Stack(base))
    }

    /// The stack's top (it grows down), 16-byte aligned as the ABI asks.
    fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of the mapping, which is page-aligned.
        unsafe { self.0.cast::<u8>().add(STACK + PAGE).cast() }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer used (G has exec'd or ended).
        unsafe { libc::munmap(self.0, STACK + PAGE) };
    }
}
