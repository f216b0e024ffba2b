//! Starting a thread, with the code that starts one held once in the binary.
//!
//! `std::thread::Builder::spawn` is generic over its closure, and what it inlines where it is
//! called (the thread's handle, its name, the spawn hooks, the stack size asked of the
//! environment) is some 700 bytes at every call site; two dozen of them made about 20 KB of the
//! static binary. Here the closure comes boxed, so one copy of that code starts every thread.

/// Starts `run` in a thread of its own named `name`, with `stack` bytes of stack (the standard
/// size when `None`); the thread is detached.
#[inline(never)]
pub(crate) fn spawn(
    name: &str,
    stack: Option<usize>,
    run: Box<dyn FnOnce() + Send>,
) -> std::io::Result<()> {
    let mut builder = std::thread::Builder::new().name(name.to_string());
    if let Some(size) = stack {
        builder = builder.stack_size(size);
    }
    builder.spawn(run).map(drop)
}
