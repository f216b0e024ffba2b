//! The person's terminal: raw mode in, everything put back out, whatever the way out.
//!
//! `RawMode::enter` saves the terminal's settings, switches to raw mode and the alternate screen,
//! hides the cursor and turns off line wrap. Restoring is one idempotent function, called when the
//! guard drops, from the panic hook, and before any exit, so the shell gets its terminal back after
//! a detach, a signal, a lost server or a bug. Signals arrive as numbers on a channel, through a
//! self-pipe written by an async-signal-safe handler.

use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use std::io::Write;
use std::os::fd::IntoRawFd;
use std::sync::atomic::{AtomicI32, Ordering};

/// The settings to restore; `None` when the terminal is not ours. Process-wide: the process has
/// one terminal, and its exit and signal paths restore it.
static SAVED: Mutex<Option<libc::termios>> = Mutex::new(None);

/// Alternate screen, no line wrap, hidden cursor, cleared.
const ENTER: &str = "\x1b[?1049h\x1b[?7l\x1b[?25l\x1b[0m\x1b[H\x1b[2J";
/// Default colours, line wrap and cursor back, main screen.
const LEAVE: &str = "\x1b[0m\x1b[?7h\x1b[?25h\x1b[?1049l";

/// The terminal in raw mode; restored when dropped.
pub(crate) struct RawMode(());

impl RawMode {
    pub(crate) fn enter() -> std::io::Result<RawMode> {
        // SAFETY: isatty only inspects the descriptors.
        if unsafe { libc::isatty(0) == 0 || libc::isatty(1) == 0 } {
            return Err(std::io::Error::other("fugue attach needs a terminal on stdin and stdout"));
        }
        // SAFETY: a zeroed termios is a valid value to be overwritten by tcgetattr.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: tcgetattr writes into `saved`, which lives across the call.
        if unsafe { libc::tcgetattr(0, &raw mut saved) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut raw = saved;
        // SAFETY: cfmakeraw only edits the struct it is given.
        unsafe { libc::cfmakeraw(&raw mut raw) };
        raw.c_cc[libc::VMIN] = 1;
        raw.c_cc[libc::VTIME] = 0;
        *SAVED.lock() = Some(saved);
        install_panic_hook();
        // SAFETY: tcsetattr reads `raw`, which lives across the call.
        if unsafe { libc::tcsetattr(0, libc::TCSANOW, &raw const raw) } != 0 {
            let err = std::io::Error::last_os_error();
            SAVED.lock().take();
            return Err(err);
        }
        write_out(ENTER.as_bytes())?;
        Ok(RawMode(()))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        restore();
    }
}

/// Puts the terminal back as it was; does nothing the second time.
pub(crate) fn restore() {
    let Some(saved) = SAVED.lock().take() else { return };
    let _ = write_out(LEAVE.as_bytes());
    // SAFETY: tcsetattr reads `saved`, which lives across the call.
    unsafe { libc::tcsetattr(0, libc::TCSANOW, &raw const saved) };
}

/// Restores the terminal before the panic message is printed, so it is readable.
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}

pub(crate) fn write_out(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// The terminal's size as (rows, cols).
pub(crate) fn size() -> Option<(u16, u16)> {
    // SAFETY: a zeroed winsize is valid; the ioctl fills it.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize into `ws`.
    let r = unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) };
    (r == 0 && ws.ws_row > 0 && ws.ws_col > 0).then_some((ws.ws_row, ws.ws_col))
}

/// The write end of the self-pipe, for the signal handler.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signal: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: errno is thread-local; saving and restoring it keeps the interrupted code's
        // view intact. write(2) is async-signal-safe; a full pipe drops the byte, which is fine:
        // one pending byte per signal kind is all the reader needs.
        unsafe {
            let errno = *libc::__errno_location();
            // Signal numbers are below 65, so the byte holds the whole number.
            let byte = signal.to_le_bytes()[0];
            libc::write(fd, (&raw const byte).cast(), 1);
            *libc::__errno_location() = errno;
        }
    }
}

/// Delivers these signals as numbers on a channel instead of their default action.
pub(crate) fn signals(which: &[libc::c_int]) -> std::io::Result<Receiver<libc::c_int>> {
    // Both ends stay open for the life of the process: the handler may write at any time.
    let (read, write) = crate::pane::fd::pipe()?;
    let (read_fd, write_fd) = (read.into_raw_fd(), write.into_raw_fd());
    // SAFETY: fcntl on a descriptor we own; the handler must never block on a full pipe.
    unsafe { libc::fcntl(write_fd, libc::F_SETFL, libc::O_NONBLOCK) };
    SIGNAL_PIPE.store(write_fd, Ordering::Relaxed);
    for &signal in which {
        // SAFETY: a zeroed sigaction with a handler and SA_RESTART is valid; the handler only
        // calls write(2).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&raw mut action.sa_mask);
            if libc::sigaction(signal, &raw const action, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    let (tx, rx) = crossbeam_channel::bounded(16);
    crate::threads::spawn(
        "signals",
        None,
        Box::new(move || {
            let mut buf = [0u8; 16];
            loop {
                // SAFETY: read into a buffer we own, at most its length.
                let n = unsafe { libc::read(read_fd, buf.as_mut_ptr().cast(), buf.len()) };
                if n < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {
                    continue;
                }
                if n <= 0 {
                    return;
                }
                for &b in &buf[..n.cast_unsigned()] {
                    if tx.send(libc::c_int::from(b)).is_err() {
                        return;
                    }
                }
            }
        }),
    )?;
    Ok(rx)
}
