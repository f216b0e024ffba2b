//! Whether the process that waits for the terminal is an interactive shell at its own prompt: a
//! wait no program's question is behind, which `responses` must never answer (a catch-all key
//! would type into the shell's prompt, and again at the next one).
//!
//! The pane's own process, when fugue started it as the pane's interactive shell: with fugue's
//! integration, unless a command the integration gave it runs (its builtin `read` asks); without
//! it, always, since nothing tells its prompt from its builtin `read`. Any other process, when its
//! command line is a shell's with no command (`-c`) and no script: `bash`, `zsh -l`, `sh -i`.

use crate::pane::Pane;
use std::path::Path;

/// The shells whose command line is read.
const SHELLS: &[&str] =
    &["sh", "ash", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "fish", "yash", "tcsh", "csh"];
/// Their options that take a value in the next word.
const WITH_VALUE: &[&str] =
    &["--init-file", "--rcfile", "--init-command", "-C", "-o", "+o", "-O", "+O"];

/// Whether process `pid`, which waits for `pane`'s terminal, is an interactive shell at its own
/// prompt (see the module's comment).
pub(super) fn at_prompt(pane: &Pane, pid: u32) -> bool {
    if pid != pane.pid {
        return interactive_shell(pid);
    }
    match pane.above() {
        Some(above) => pane.command.is_none() && !above.runs_command(pane.output()),
        None => pane.command.is_none() || interactive_shell(pid),
    }
}

/// Whether process `pid`'s command line is an interactive shell's.
fn interactive_shell(pid: u32) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { return false };
    let words: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    is_interactive(&words)
}

/// Whether `words` start a shell that reads its commands from the terminal: a known shell, with
/// no `-c` (alone or among other one-letter options) and no script to run.
fn is_interactive(words: &[String]) -> bool {
    let Some(program) = words.first() else { return false };
    let name = Path::new(program.trim_start_matches('-')).file_name().and_then(|n| n.to_str());
    if !name.is_some_and(|n| SHELLS.contains(&n)) {
        return false;
    }
    let mut rest = words[1..].iter();
    while let Some(word) = rest.next() {
        if WITH_VALUE.contains(&word.as_str()) {
            rest.next();
        } else if word == "--" || !word.starts_with(['-', '+']) {
            // A script (or `--` before one): the shell runs it, not what is typed.
            return false;
        } else if !word.starts_with("--") && word.contains('c') {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn interactive_shells_are_told_from_shells_that_run_something() {
        for line in ["bash", "-bash", "/bin/zsh -l", "sh -i", "bash --init-file /x/init -i"] {
            assert!(is_interactive(&words(line)), "{line}");
        }
        for line in ["bash -c read", "sh -ec true", "sh install.sh", "python3", "bash -- x"] {
            assert!(!is_interactive(&words(line)), "{line}");
        }
    }
}
