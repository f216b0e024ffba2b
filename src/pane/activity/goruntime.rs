//! Whether a process is a Go program, whose runtime keeps threads asleep on timers of its own
//! (sysmon on its note, naps between its checks) while the program waits for the terminal. Its
//! timers wake nobody but the runtime; a goroutine's own timer is what the runtime's poller waits
//! on. So in a Go program those sleeps neither ask nor keep a question from being one.
//!
//! A Go program is told by its executable: the `.go.buildinfo` section the Go linker writes, with
//! the header of Go 1.18 and later (versions inline). Older Go ran goroutine timers on a thread of
//! their own that slept the same way, so an older or unreadable one counts as not Go: its sleeps
//! stay timers, and a question waits its quiet period, as before. The answer is kept per
//! executable file (device, inode, change time) in the registry's `ProcessTable`, so a look reads
//! the file once.

use crate::pane::seen::GoKnown;
use parking_lot::Mutex;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};

/// The first bytes of `.go.buildinfo`: the magic, the pointer size, then flags.
const MAGIC: &[u8] = b"\xff Go buildinf:";
/// Flag: the version strings are inline (Go 1.18 and later).
const VERSION_INLINE: u8 = 0x2;
/// The most section headers read; an executable with more is not looked into.
const MAX_SECTIONS: usize = 4096;
/// The longest section name table read.
const MAX_NAMES: u64 = 1 << 20;
/// How many executables' answers are kept; past it, the cache starts again.
const KEPT: usize = 256;

/// Whether process `pid` runs a Go program of Go 1.18 or later (false when /proc will not say),
/// kept in `known`.
pub(super) fn is_go(pid: u32, known: &Mutex<GoKnown>) -> bool {
    let path = format!("/proc/{pid}/exe");
    let Ok(meta) = std::fs::metadata(&path) else { return false };
    let key = (meta.dev(), meta.ino(), meta.ctime());
    if let Some(go) = known.lock().get(&key).copied() {
        return go;
    }
    let go = File::open(&path).is_ok_and(|file| go_header(&file).unwrap_or(false));
    let mut known = known.lock();
    if known.len() >= KEPT {
        known.clear();
    }
    known.insert(key, go);
    go
}

/// Whether `file`, a 64-bit little-endian ELF executable, holds a `.go.buildinfo` section with
/// Go 1.18's header; None when it is not such a file.
fn go_header(file: &File) -> Option<bool> {
    let head = read(file, 0, 64)?;
    // ELF magic, 64-bit, little-endian: the two architectures whose calls `syscalls` knows.
    if head[..4] != *b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return None;
    }
    let sections = u64::from_le_bytes(head[0x28..0x30].try_into().ok()?);
    let entry = usize::from(u16::from_le_bytes([head[0x3a], head[0x3b]]));
    let count = usize::from(u16::from_le_bytes([head[0x3c], head[0x3d]]));
    let names_index = usize::from(u16::from_le_bytes([head[0x3e], head[0x3f]]));
    if entry < 64 || count == 0 || count > MAX_SECTIONS || names_index >= count {
        return None;
    }
    let table = read(file, sections, entry * count)?;
    let section = |i: usize| Section::parse(&table[i * entry..i * entry + 64]);
    let names = section(names_index)?;
    let names = read(file, names.offset, usize::try_from(names.size.min(MAX_NAMES)).ok()?)?;
    let info = (0..count).filter_map(section).find(|s| name_at(&names, s.name) == b".go.buildinfo");
    let Some(info) = info else { return Some(false) };
    let header = read(file, info.offset, MAGIC.len() + 2)?;
    Some(header.starts_with(MAGIC) && header[MAGIC.len() + 1] & VERSION_INLINE != 0)
}

/// One section header: where its name is in the name table, and where its bytes are.
struct Section {
    name: usize,
    offset: u64,
    size: u64,
}

impl Section {
    fn parse(bytes: &[u8]) -> Option<Section> {
        let word = |at: usize| Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
        let name = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
        Some(Section { name: usize::try_from(name).ok()?, offset: word(24)?, size: word(32)? })
    }
}

/// The name at `at` in a section name table, without its terminating NUL.
fn name_at(names: &[u8], at: usize) -> &[u8] {
    let rest = names.get(at..).unwrap_or_default();
    &rest[..rest.iter().position(|b| *b == 0).unwrap_or(rest.len())]
}

fn read(file: &File, at: u64, len: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, at).ok()?;
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fugue_itself_is_not_a_go_program() {
        let known = Mutex::default();
        assert!(!is_go(std::process::id(), &known));
        assert!(!is_go(u32::MAX, &known), "no such process");
        assert_eq!(known.lock().len(), 1, "the answer is kept for fugue's own binary");
    }
}
