//! fugue's own binary on a host: `~/.cache/fugue/bin/fugue-VERSION-HASH`, uploaded over the
//! master on first use, as Zed and VS Code put their servers on a remote.
//!
//! One round trip says the host's architecture (`uname -m`) and the hash of the file already
//! there, if any. A file whose hash differs (a corrupted or cut upload) is replaced, never run. An
//! upload goes to a temporary name in the same directory (0700), is hashed there, and only then
//! renamed into place, so a half-written binary is never found. Files of other versions or builds
//! beside it are left alone: each has a name of its own. The binary is the running one
//! (`/proc/self/exe`) for a host of this architecture, or the one `FUGUE_REMOTE_BINARY_<ARCH>`
//! names (`FUGUE_REMOTE_BINARY_aarch64=/path/to/fugue`); another architecture without one is
//! `host_unsupported`. Hashes are SHA-256, by `sha256sum` on both sides.

use super::ssh::{self, Master};
use crate::error::{Error, ErrorKind, Result};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
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
            None if arch == std::env::consts::ARCH => {
                PathBuf::from(format!("/proc/{}/exe", std::process::id()))
            }
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
    let here = Binary::for_arch(std::env::consts::ARCH)?;
    let (arch, found) = look(master, &here.name)?;
    let (binary, found) = if arch == std::env::consts::ARCH {
        (here, found)
    } else {
        let binary = Binary::for_arch(&arch)?;
        let found = look(master, &binary.name)?.1;
        (binary, found)
    };
    if found.as_deref() != Some(binary.hash.as_str()) {
        upload(master, &binary)?;
    }
    Ok(binary)
}

/// The host's architecture and the hash of file `name` there, if it exists.
fn look(master: &Master, name: &str) -> Result<(String, Option<String>)> {
    let script = format!(
        "uname -m; f=\"$HOME/{DIR}/{name}\"; if [ -f \"$f\" ]; then sha256sum \"$f\"; fi; exit 0"
    );
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
}
