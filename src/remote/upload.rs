//! fugue's own binary on a host: `~/.cache/fugue/bin/fugue-VERSION-HASH`, uploaded over the
//! master on first use, as Zed and VS Code put their servers on a remote.
//!
//! One round trip says the host's architecture (`uname -m`) and the hash of the file already
//! there, if any. A file whose hash differs (a corrupted or cut upload) is replaced, never run. An
//! upload goes to a temporary name in the same directory (0700), is hashed there, and only then
//! renamed into place, so a half-written binary is never found. Files of other versions or builds
//! beside it are left alone: each has a name of its own. The binary is the one
//! `FUGUE_REMOTE_BINARY_<ARCH>` names (`FUGUE_REMOTE_BINARY_aarch64=/path/to/fugue`), used as it
//! is; else, for a host of this architecture, the running one when it is static. A dynamically
//! linked fugue (a dev build: its ELF names a loader, `PT_INTERP`) would need the host's loader
//! and libraries of the same versions, and fail there in ways hard to read, so it is never sent:
//! `make static`'s build beside it in cargo's target directory goes instead, and without one the
//! call is `host_unsupported` saying how to make it. Another architecture without a configured
//! binary is `host_unsupported` too. Hashes are SHA-256, by `sha256sum` on both sides.

use super::ssh::{self, Master};
use crate::error::{Error, ErrorKind, Result};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Where the binaries go on a host, under its `$HOME`.
const DIR: &str = ".cache/fugue/bin";

/// The binary a host runs: where it is here, its hash, and its name there.
#[derive(Clone, Debug)]
pub(crate) struct Binary {
    local: PathBuf,
    hash: String,
    /// `fugue-VERSION-HASH16`.
    pub(crate) name: String,
}

impl Binary {
    /// The binary for hosts of `arch`.
    fn for_arch(arch: &str) -> Result<Binary> {
        let configured = std::env::var_os(format!("FUGUE_REMOTE_BINARY_{arch}"));
        let local = match configured.filter(|p| !p.is_empty()) {
            Some(path) => PathBuf::from(path),
            None if arch == std::env::consts::ARCH => own_static()?,
            None => {
                return Err(Error::new(
                    ErrorKind::HostUnsupported,
                    format!(
                        "the host is {arch} and this fugue is {}: build fugue for {arch} and \
                         name it in FUGUE_REMOTE_BINARY_{arch}",
                        std::env::consts::ARCH
                    ),
                ));
            }
        };
        let hash = hash_of(&local)?;
        let name = format!("fugue-{}-{}", env!("CARGO_PKG_VERSION"), &hash[..16]);
        Ok(Binary { local, hash, name })
    }

    /// Its path on the host, for a shell there.
    pub(crate) fn remote_path(&self) -> String {
        format!("\"$HOME\"/{DIR}/{}", self.name)
    }
}

/// This fugue's binary when it is static, else `make static`'s build beside it in cargo's target
/// directory (`target/ARCH-unknown-linux-gnu/release/fugue` for one in `target/debug`).
fn own_static() -> Result<PathBuf> {
    let own = PathBuf::from(format!("/proc/{}/exe", std::process::id()));
    if dynamic(&own)? != Some(true) {
        return Ok(own);
    }
    let arch = std::env::consts::ARCH;
    let beside = std::env::current_exe().ok().and_then(|exe| {
        let dir = exe.parent()?;
        let built = matches!(dir.file_name()?.to_str()?, "debug" | "release");
        let path = dir.parent()?.join(format!("{arch}-unknown-linux-gnu/release/fugue"));
        built.then_some(path)
    });
    if let Some(path) = beside.filter(|p| dynamic(p).ok() == Some(Some(false))) {
        crate::log::info(&format!(
            "hosts get the static build {} (this fugue is dynamic)",
            path.display()
        ));
        return Ok(path);
    }
    Err(Error::new(
        ErrorKind::HostUnsupported,
        format!(
            "this fugue is dynamically linked (a dev build), which another machine may not run: \
             build the static one (make static) or name one in FUGUE_REMOTE_BINARY_{arch}"
        ),
    ))
}

/// Whether the ELF file at `path` is dynamically linked; `None` when it is no ELF file.
fn dynamic(path: &Path) -> Result<Option<bool>> {
    let io = |e: std::io::Error| crate::files::io_error(path, &e);
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut head = Vec::new();
    file.by_ref().take(64).read_to_end(&mut head).map_err(io)?;
    let Some(header) = elf::header(&head) else { return Ok(None) };
    let mut table = Vec::new();
    file.seek(std::io::SeekFrom::Start(header.table.start)).map_err(io)?;
    let len = header.table.end - header.table.start;
    file.take(len).read_to_end(&mut table).map_err(io)?;
    Ok(Some(elf::has_interp(&header, &table)))
}

/// The little of ELF that says whether a binary is dynamically linked: its program headers, one
/// of which is `PT_INTERP` (the loader) in a dynamic executable and none in a static one.
mod elf {
    use std::ops::Range;

    /// `p_type` of the program header that names the loader.
    const PT_INTERP: u64 = 3;
    /// The most program headers read: real binaries have about a dozen.
    const MAX_HEADERS: u64 = 256;

    /// What the file's header says of its program headers.
    #[derive(Debug, PartialEq, Eq)]
    pub(super) struct ElfHeader {
        little: bool,
        /// Where they are in the file.
        pub(super) table: Range<u64>,
        /// The size of each.
        size: usize,
    }

    fn number(bytes: &[u8], little: bool) -> u64 {
        let fold = |n: u64, b: &u8| (n << 8) | u64::from(*b);
        if little { bytes.iter().rev().fold(0, fold) } else { bytes.iter().fold(0, fold) }
    }

    /// The header, from the file's first 64 bytes; `None` for no ELF file.
    pub(super) fn header(head: &[u8]) -> Option<ElfHeader> {
        if head.get(..4)? != b"\x7fELF" {
            return None;
        }
        let (wide, little) = (*head.get(4)? == 2, *head.get(5)? == 1);
        let field = |at: usize, len: usize| head.get(at..at + len).map(|b| number(b, little));
        let (off, size, count) = if wide {
            (field(0x20, 8)?, field(0x36, 2)?, field(0x38, 2)?)
        } else {
            (field(0x1c, 4)?, field(0x2a, 2)?, field(0x2c, 2)?)
        };
        let table = off..off.checked_add(size * count.min(MAX_HEADERS))?;
        Some(ElfHeader { little, table, size: usize::try_from(size).ok().filter(|s| *s >= 4)? })
    }

    /// Whether the program headers (`table`, as `header.table` placed them) hold `PT_INTERP`.
    pub(super) fn has_interp(header: &ElfHeader, table: &[u8]) -> bool {
        table.chunks_exact(header.size).any(|h| number(&h[..4], header.little) == PT_INTERP)
    }
}

/// The SHA-256 of a local file, once per file and process.
fn hash_of(path: &PathBuf) -> Result<String> {
    // Held while hashing, so hosts reached at once wait for one hash rather than each making it.
    static HASHES: Mutex<Option<HashMap<PathBuf, String>>> = Mutex::new(None);
    let mut hashes = HASHES.lock();
    let hashes = hashes.get_or_insert_with(HashMap::new);
    if let Some(hash) = hashes.get(path) {
        return Ok(hash.clone());
    }
    let out =
        std::process::Command::new("sha256sum").arg(path).stdin(Stdio::null()).output().map_err(
            |e| Error::new(ErrorKind::SpawnFailed, format!("cannot run sha256sum: {e}")),
        )?;
    let hash = first_hash(&String::from_utf8_lossy(&out.stdout)).ok_or_else(|| {
        Error::new(
            ErrorKind::Io,
            format!(
                "cannot hash {}: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        )
    })?;
    hashes.insert(path.clone(), hash.clone());
    Ok(hash)
}

/// The hash at the start of a `sha256sum` line.
fn first_hash(text: &str) -> Option<String> {
    let word = text.split_whitespace().next()?;
    (word.len() == 64 && word.bytes().all(|b| b.is_ascii_hexdigit())).then(|| word.to_string())
}

/// The architecture `uname -m` names, in Rust's words (`amd64` is `x86_64`).
fn arch_of(uname: &str) -> String {
    match uname.trim() {
        "amd64" => "x86_64".into(),
        "arm64" => "aarch64".into(),
        other => other.into(),
    }
}

/// Makes sure the host has the right binary, uploading it when it is missing or differs; its path
/// there.
pub(crate) fn ensure(master: &Master) -> Result<Binary> {
    // This architecture's binary is looked for in the same round trip that asks the host's; a
    // host of another one needs none (nor a static build of this one).
    let here = Binary::for_arch(std::env::consts::ARCH);
    let (arch, found) = look(master, here.as_ref().ok().map(|b| b.name.as_str()))?;
    let (binary, found) = if arch == std::env::consts::ARCH {
        (here?, found)
    } else {
        let binary = Binary::for_arch(&arch)?;
        let found = look(master, Some(&binary.name))?.1;
        (binary, found)
    };
    if found.as_deref() != Some(binary.hash.as_str()) {
        upload(master, &binary)?;
    }
    Ok(binary)
}

/// The host's architecture and the hash of file `name` there, if it exists.
fn look(master: &Master, name: Option<&str>) -> Result<(String, Option<String>)> {
    let hash = name.map(|name| {
        format!("f=\"$HOME/{DIR}/{name}\"; if [ -f \"$f\" ]; then sha256sum \"$f\"; fi; ")
    });
    let script = format!("uname -m; {}exit 0", hash.unwrap_or_default());
    let out = run(master, &script, None)?;
    let mut lines = out.lines();
    let arch = arch_of(lines.next().unwrap_or(""));
    Ok((arch, lines.next().and_then(first_hash)))
}

/// Sends the binary: into a temporary file beside its place, hashed there, then renamed in.
fn upload(master: &Master, binary: &Binary) -> Result<()> {
    let file = std::fs::File::open(&binary.local)
        .map_err(|e| crate::files::io_error(&binary.local, &e))?;
    let (name, hash) = (&binary.name, &binary.hash);
    let script = format!(
        "umask 077; d=\"$HOME/{DIR}\"; mkdir -p \"$d\" && chmod 700 \"$d\" || exit 1; \
         t=\"$d/.{name}.$$\"; cat > \"$t\" || {{ rm -f \"$t\"; exit 1; }}; \
         h=$(sha256sum \"$t\" | cut -c1-64); if [ \"$h\" != {hash} ]; then rm -f \"$t\"; \
         echo \"fugue: the uploaded binary hashes to $h, not {hash}\" >&2; exit 3; fi; \
         chmod 700 \"$t\" && mv -f \"$t\" \"$d/{name}\""
    );
    run(master, &script, Some(file)).map(drop)
}

/// Runs `script` on the host over the master, `stdin` fed to it; its stdout, or why it failed.
fn run(master: &Master, script: &str, stdin: Option<std::fs::File>) -> Result<String> {
    let mut cmd = ssh::remote(&master.host, &master.control, script);
    if let Some(file) = stdin {
        cmd.stdin(file);
    }
    let mut child = ssh::spawn(cmd)?;
    let stderr = ssh::Stderr::drain(child.stderr.take().expect("piped"));
    let mut out = String::new();
    let _ = child.stdout.take().expect("piped").read_to_string(&mut out);
    let status = child.wait().map_err(|e| Error::internal(format!("ssh: {e}")))?;
    if status.success() {
        return Ok(out);
    }
    let said = stderr.text();
    if status.code() == Some(255) {
        return Err(ssh::classify(&master.host, &said));
    }
    Err(Error::new(
        ErrorKind::HostUnsupported,
        format!("putting fugue on {} failed: {}", master.host, said.trim()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_and_architectures_are_read() {
        let line = format!("{}  /x/fugue\n", "ab".repeat(32));
        assert_eq!(first_hash(&line).as_deref(), Some("ab".repeat(32).as_str()));
        assert_eq!(first_hash("sha256sum: not found"), None);
        assert_eq!(arch_of("amd64\n"), "x86_64");
        assert_eq!(arch_of("riscv64"), "riscv64");
    }

    #[test]
    fn a_loader_in_the_program_headers_is_a_dynamic_binary() {
        // The test binary is cargo's, dynamically linked; a file of no ELF is neither.
        let own = PathBuf::from("/proc/self/exe");
        assert_eq!(dynamic(&own).unwrap(), Some(true));
        assert_eq!(dynamic(Path::new("/etc/passwd")).unwrap(), None);
        // A 64-bit little-endian header with two program headers at 64, 56 bytes each.
        let mut head = vec![0u8; 64];
        head[..6].copy_from_slice(b"\x7fELF\x02\x01");
        head[0x20] = 64;
        head[0x36] = 56;
        head[0x38] = 2;
        let header = elf::header(&head).unwrap();
        assert_eq!(header.table, 64..176);
        let mut table = vec![0u8; 112];
        table[0] = 1; // PT_LOAD
        assert!(!elf::has_interp(&header, &table), "static");
        table[56] = 3; // PT_INTERP
        assert!(elf::has_interp(&header, &table), "dynamic");
        assert_eq!(elf::header(&head[..40]), None, "cut short");
        // The same, 32-bit big-endian: header fields at their own places.
        let mut head = vec![0u8; 52];
        head[..6].copy_from_slice(b"\x7fELF\x01\x02");
        head[0x1f] = 52;
        head[0x2b] = 32;
        head[0x2d] = 1;
        let header = elf::header(&head).unwrap();
        assert_eq!(header.table, 52..84);
        let mut table = vec![0u8; 32];
        table[3] = 3;
        assert!(elf::has_interp(&header, &table));
    }
}
