//! The pipeline driver's side of `fugue_run_pipeline`: the files the pane's shell runs, and the
//! status lines it writes back.
//!
//! `write` puts each step in a file of the private directory with `driver.sh` (the loop, filled
//! in) and `step.sh` (what it sources to run one step). The driver writes one line per event into
//! the directory's FIFO (a step's begin and end, the shell's directory after it); `read_status` turns them into `Event`s on a channel until fugue's own `q`
//! line, which `WakeReader` writes when the call is done with the FIFO.

use crate::config::config;
use crate::error::Result;
use crate::tempdir::PrivateDir;
use crossbeam_channel::Sender;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

/// The longest status line the driver writes: a directory line, `c` and a path of up to 4096
/// bytes. Each line is one write of less than PIPE_BUF, so lines never interleave.
const MAX_STATUS_LINE: u64 = 4200;

const DRIVER: &str = include_str!("driver.sh");
/// What the driver sources to run one step, so that an interrupt can `return` from it.
const STEP: &str = include_str!("step.sh");

/// A line from the driver.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// Step n (1-based) starts.
    Begin(usize),
    /// Step n ended with this status.
    End(usize, i32),
    /// The shell's directory after a step.
    Cwd(String),
    /// The driver left its loop; nothing more will come.
    Done,
    /// fugue's own line: everything the driver wrote before it has been read.
    Caught,
}

/// What the driver does besides running the steps.
pub(super) struct Options {
    pub(super) stop_on_error: bool,
    /// Hand the pane over to an interactive shell when the steps are done.
    pub(super) keep: bool,
    /// How that shell starts with fugue's shell integration, when it gets it.
    pub(super) keep_launch: Option<crate::shell::Launch>,
}

/// Writes the step files, the driver and its step file into `dir`.
pub(super) fn write(
    dir: &PrivateDir,
    steps: &[&str],
    nonce: &str,
    options: &Options,
) -> Result<()> {
    for (i, step) in steps.iter().enumerate() {
        dir.write(&(i + 1).to_string(), &format!("{step}\n"))?;
    }
    let shell = &config().shell;
    let (sh, check) = driver_shell(shell);
    let flag = |b: bool| if b { "1" } else { "0" };
    let (keep_env, keep_args) = options.keep_launch.as_ref().map(|l| l.words()).unwrap_or_default();
    let driver = DRIVER
        .replace("@DIR@", &quote(&dir.path.to_string_lossy()))
        .replace("@COUNT@", &steps.len().to_string())
        .replace("@NONCE@", nonce)
        .replace("@STOP_ON_ERROR@", flag(options.stop_on_error))
        .replace("@CHECK@", flag(check))
        .replace("@SH@", &quote(sh))
        .replace("@KEEP@", flag(options.keep))
        .replace("@KEEP_ENV@", &keep_env)
        .replace("@KEEP_ARGS@", &keep_args)
        .replace("@SHELL@", &quote(shell));
    dir.write("step", STEP)?;
    dir.write("run", &driver)
}

/// The command line that makes the pane's shell run the driver in `dir`.
pub(super) fn command(dir: &PrivateDir) -> String {
    let (sh, _) = driver_shell(&config().shell);
    let source = format!(". {}", quote(&dir.path.join("run").to_string_lossy()));
    format!("exec {} -c {} fugue", quote(sh), quote(&source))
}

/// The shell that runs the driver and so the steps: the user's shell when it speaks the POSIX
/// language (so bash users keep `set -o pipefail`, `[[`, `source`), else /bin/sh. The flag says
/// whether steps need a syntax check first: bash survives a syntax error in `eval`, the others
/// exit.
fn driver_shell(shell: &str) -> (&str, bool) {
    let base = Path::new(shell).file_name().and_then(|b| b.to_str()).unwrap_or("");
    match base {
        "bash" => (shell, false),
        "sh" | "dash" | "ash" | "ksh" | "ksh93" | "mksh" | "yash" | "zsh" => (shell, true),
        _ => ("/bin/sh", true),
    }
}

/// One word for a POSIX shell (and for fish and zsh, which read `'\''` the same way).
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Writes fugue's own `q` line into the FIFO when dropped, which ends the reader thread.
pub(super) struct WakeReader<'a>(pub(super) &'a File);

impl Drop for WakeReader<'_> {
    fn drop(&mut self) {
        let mut file = self.0;
        let _ = file.write_all(b"q\n");
    }
}

/// Turns the driver's lines into events until fugue's own `q` line; ignores anything malformed.
pub(super) fn read_status(file: &File, tx: Sender<Event>) {
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.by_ref().take(MAX_STATUS_LINE).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let Some(event) = parse_event(&String::from_utf8_lossy(&line)) else { continue };
        let last = event == Event::Caught;
        if tx.send(event).is_err() || last {
            return;
        }
    }
}

fn parse_event(line: &str) -> Option<Event> {
    // A path may hold spaces: everything after `c ` up to the newline.
    if let Some(dir) = line.strip_prefix("c ") {
        return Some(Event::Cwd(dir.strip_suffix('\n')?.to_string()));
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["b", n] => Some(Event::Begin(n.parse().ok()?)),
        ["e", n, rc] => Some(Event::End(n.parse().ok()?, rc.parse().ok()?)),
        ["x", _] => Some(Event::Done),
        ["q"] => Some(Event::Caught),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn driver_lines_parse_and_junk_is_ignored() {
        assert_eq!(parse_event("b 3\n"), Some(Event::Begin(3)));
        assert_eq!(parse_event("e 2 127\n"), Some(Event::End(2, 127)));
        assert_eq!(parse_event("x 0\n"), Some(Event::Done));
        assert_eq!(parse_event("q\n"), Some(Event::Caught));
        assert_eq!(parse_event("c /tmp/a  b\n"), Some(Event::Cwd("/tmp/a  b".into())));
        assert_eq!(parse_event("c /cut-short"), None);
        for junk in ["", "e 1\n", "b x\n", "e 1 2 3\n", "hello\n"] {
            assert_eq!(parse_event(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn words_are_quoted_for_the_shell() {
        assert_eq!(quote("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn posix_shells_run_the_driver_and_others_get_sh() {
        assert_eq!(driver_shell("/usr/bin/bash"), ("/usr/bin/bash", false));
        assert_eq!(driver_shell("/bin/dash"), ("/bin/dash", true));
        assert_eq!(driver_shell("/usr/bin/fish"), ("/bin/sh", true));
    }

    #[test]
    fn every_placeholder_is_filled() {
        let dir = PrivateDir::create(&Arc::default()).unwrap();
        let launch = crate::shell::Launch {
            args: vec!["--init-file".into(), "/it's/init".into()],
            env: vec![("ENV".into(), "/x".into())],
        };
        let options = Options { stop_on_error: true, keep: true, keep_launch: Some(launch) };
        write(&dir, &["true"], "abc", &options).unwrap();
        let driver = std::fs::read_to_string(dir.path.join("run")).unwrap();
        assert!(!driver.contains('@'), "{driver}");
        assert!(driver.contains("export ENV='/x'\n"), "{driver}");
        assert!(
            driver.contains(r#"exec "$__fugue_shell" '--init-file' '/it'\''s/init' -i"#),
            "{driver}"
        );
        let mode = std::fs::metadata(&dir.path).unwrap().permissions();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o700);
        let path = dir.path.clone();
        drop(dir);
        assert!(!path.exists());
    }
}
