//! Nothing global: a `static` that holds state (`Mutex`, `OnceLock`, an atomic) outlives every
//! runtime and is shared by all of them, so state belongs to the `Runtime` and reaches what needs
//! it through what it is handed. The few process-wide ones that stay are listed here with why.

use super::{outside_tests, rust_files};
use std::path::Path;

/// The statics that may stay: file, name, and why it is the process's and no runtime's.
const ALLOWED: &[(&str, &str, &str)] = &[
    ("src/attach/term.rs", "SAVED", "the terminal's mode, restored by a signal handler"),
    ("src/attach/term.rs", "SIGNAL_PIPE", "a signal handler's pipe: a handler reaches no value"),
    ("src/log.rs", "CAP", "stderr's budget: the process has one stderr"),
    ("src/log.rs", "LEVEL", "the log level, read once from the environment at start"),
    ("src/config.rs", "CONFIG", "the settings, read once at start; runtimes take a copy"),
    ("src/passwd.rs", "ENTRIES", "the user database, a fact of the host read once"),
    ("src/inherit.rs", "INHERITABLE", "serialises fork against descriptors made inheritable"),
    ("src/tempdir.rs", "START", "the process's start time, which names its directories"),
    ("src/tempdir.rs", "PRIVATE_BASE", "the process's private directory, one per process"),
    ("src/mcp/registry.rs", "ALL", "the tool table: a pure function of constants"),
    ("src/mcp/registry.rs", "LIST", "tools/list: a pure function of the tool table"),
    ("src/pane/fold.rs", "SIZE", "a compiled regex: a pure function of a constant"),
    ("src/pane/fold.rs", "HASH", "a compiled regex: a pure function of a constant"),
    ("src/pane/fold.rs", "NUMBER", "a compiled regex: a pure function of a constant"),
    ("src/pane/matter.rs", "SEVERE", "a compiled regex: a pure function of a constant"),
    ("src/pane/matter.rs", "WARN", "a compiled regex: a pure function of a constant"),
    ("src/agent/store.rs", "COUNTER", "makes file names unique within the process"),
    ("src/remote/hosts.rs", "NEXT", "makes ssh socket names unique within the process"),
    ("src/remote/ssh.rs", "SPAWNER", "one thread forks ssh: its death signal follows the thread"),
    ("src/remote/upload.rs", "HASHES", "the hash of a local binary, a fact of the host"),
    // Not yet the runtime's: `remote` lies above it (`tests/layers.rs`); a process has one runtime.
    ("src/remote/hosts.rs", "HOSTS", "the ssh connections; to move to what routes the calls"),
];

/// The statics in `text` outside its tests that hold state: their names and line numbers.
fn stateful_statics(text: &str) -> Vec<(String, usize)> {
    const STATEFUL: [&str; 4] = ["Mutex<", "OnceLock<", "Atomic", "RwLock<"];
    outside_tests(text)
        .into_iter()
        .filter_map(|(n, line)| {
            let rest =
                line.trim_start().trim_start_matches("pub(crate) ").trim_start_matches("pub ");
            let (name, ty) = rest.strip_prefix("static ")?.split_once(':')?;
            let name = name.trim().trim_start_matches("mut ");
            STATEFUL.iter().any(|s| ty.contains(s)).then(|| (name.to_string(), n))
        })
        .collect()
}

#[test]
fn stateful_statics_are_read_as_declared() {
    let text = "static A: Mutex<u8> = Mutex::new(0);\nfn f() {\n    static B: OnceLock<u8> = \
                OnceLock::new();\n}\npub(crate) static C: AtomicU64 = AtomicU64::new(0);\n\
                static D: &[u8] = &[];\n#[cfg(test)]\nmod tests {\n    static E: Mutex<u8> = \
                Mutex::new(0);\n}\n";
    let found = stateful_statics(text);
    let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["A", "B", "C"]);
    assert_eq!(found[1].1, 3);
}

/// No static holds state in `src/` but the listed ones, and each listed one is still there.
#[test]
fn no_state_is_global_but_the_listed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut found = Vec::new();
    for (path, text) in &files {
        let path = path.strip_prefix(root).unwrap_or(path).display().to_string();
        found.extend(stateful_statics(text).into_iter().map(|(name, n)| (path.clone(), name, n)));
    }
    let listed = |p: &str, name: &str| ALLOWED.iter().any(|(f, s, _)| *f == p && *s == name);
    let global: Vec<String> = found
        .iter()
        .filter(|(path, name, _)| !listed(path, name))
        .map(|(path, name, n)| format!("{path}:{n} {name}"))
        .collect();
    assert!(!files.is_empty());
    assert!(global.is_empty(), "state in statics, not the runtime's: {}", global.join(", "));
    let gone: Vec<&str> = ALLOWED
        .iter()
        .filter(|(f, s, _)| !found.iter().any(|(p, name, _)| p == f && name == s))
        .map(|(_, s, _)| *s)
        .collect();
    assert!(gone.is_empty(), "listed statics that are gone (take them off): {}", gone.join(", "));
}
