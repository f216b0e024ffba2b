//! The manual names exactly what the binary has: README.md and man/fugue.1 list every tool, every
//! environment variable and every error code, and nothing that is not there.
//!
//! The tools come from the binary (`fugue tools`); the environment variables from the source (every
//! `FUGUE_*` name it reads or sets), plus those the test harness reads; the error codes from
//! `ErrorKind::code`, their one definition.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

type Names = BTreeSet<String>;

fn read(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `.rs` file under `dir`, concatenated.
fn sources(dir: &str) -> String {
    fn walk(dir: &Path, text: &mut String) {
        let mut entries: Vec<_> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, text);
            } else if path.extension().is_some_and(|e| e == "rs") {
                text.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut text = String::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir), &mut text);
    text
}

/// The words of `text` that start with `prefix` and continue with characters of `more`: tool
/// names, variable names. A word glued to a preceding `_` (a marker like `___FUGUE_EXIT_0___`) is
/// not a name.
fn words(text: &str, prefix: &str, more: impl Fn(char) -> bool) -> Names {
    let mut found = Names::new();
    for (at, _) in text.match_indices(prefix) {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[at + prefix.len()..];
        let len = rest.find(|c: char| !more(c)).unwrap_or(rest.len());
        let name = rest[..len].trim_end_matches('_');
        if !name.is_empty() {
            found.insert(format!("{prefix}{name}"));
        }
    }
    found
}

fn tool_words(text: &str) -> Names {
    words(text, "fugue_", |c| c.is_ascii_lowercase() || c == '_')
}

/// Environment variable names; roff writes `FUGUE\_X` for nothing, so only plain names count.
fn env_words(text: &str) -> Names {
    words(text, "FUGUE_", |c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The text from `start` to the first `end` after it.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.find(start).unwrap_or_else(|| panic!("no {start:?}")) + start.len();
    let to = text[from..].find(end).map_or(text.len(), |i| from + i);
    &text[from..to]
}

/// The error codes, as `ErrorKind::code` defines them.
fn error_codes() -> Names {
    let source = read("src/error.rs");
    let body = between(&source, "pub(crate) enum ErrorKind {", "\n    }\n");
    body.lines()
        .filter_map(|line| line.split("= \"").nth(1)?.split('"').next().map(str::to_string))
        .collect()
}

/// The lowercase words of a list such as "`a`, `b`, ... `z`." or roff's `.BR a ,` lines.
fn listed(text: &str) -> Names {
    text.split(|c: char| !(c.is_ascii_lowercase() || c == '_'))
        .filter(|w| w.len() > 2 && w.contains('_') || ["cancelled", "internal"].contains(w))
        .map(str::to_string)
        .collect()
}

#[track_caller]
fn same(what: &str, documented: &Names, actual: &Names) {
    let missing: Vec<_> = actual.difference(documented).collect();
    let extra: Vec<_> = documented.difference(actual).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what}: not documented: {missing:?}; documented but not in fugue: {extra:?}"
    );
}

#[test]
fn readme_and_man_name_exactly_the_tools() {
    let out = Command::new(env!("CARGO_BIN_EXE_fugue")).arg("tools").output().unwrap();
    assert!(out.status.success());
    let tools: Names = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(tools.len() >= 16, "{tools:?}");
    same("README.md tools", &tool_words(&read("README.md")), &tools);
    same("man/fugue.1 tools", &tool_words(&read("man/fugue.1")), &tools);
}

#[test]
fn readme_and_man_name_exactly_the_environment_variables() {
    let fugue = env_words(&sources("src"));
    // Variables only the tests read (the soak's length, the hostile tests' seed): documented for
    // developers in the README, not part of fugue.
    let harness: Names = ["FUGUE_HOSTILE_SEED", "FUGUE_SOAK_SECS"].map(str::to_string).into();
    let tests = sources("tests");
    for name in &harness {
        assert!(tests.contains(&format!("\"{name}\"")), "the tests no longer read {name}");
    }
    let readme = env_words(&read("README.md"));
    same("README.md environment", &readme.difference(&harness).cloned().collect(), &fugue);
    same("man/fugue.1 environment", &env_words(&read("man/fugue.1")), &fugue);
}

#[test]
fn readme_and_man_list_exactly_the_error_codes() {
    let codes = error_codes();
    assert!(codes.contains("invalid_argument") && codes.len() >= 10, "{codes:?}");
    let readme = read("README.md");
    same(
        "README.md error codes",
        &listed(between(&readme, "codes are stable words:", ".\n")),
        &codes,
    );
    let man = read("man/fugue.1");
    same("man/fugue.1 error codes", &listed(between(&man, "The codes are\n", ".\n.")), &codes);
}

#[test]
fn the_development_map_names_every_folder_and_top_file_of_src() {
    let readme = read("README.md");
    let map = between(&readme, "## Development", "\n## ");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let shown = if src.join(&name).is_dir() {
            format!("`src/{name}/`")
        } else {
            format!("`src/{name}`")
        };
        if !map.contains(&shown) {
            missing.push(shown);
        }
    }
    missing.sort();
    assert!(missing.is_empty(), "README's Development section does not name {missing:?}");
}
