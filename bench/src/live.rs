//! The live-shell figures: `fugue_exec` of `true` in a live bash, call to answer, against typing
//! `true` into a bash on a bare PTY and reading its next prompt; and the size of the answer of a
//! silent command.
//!
//! Both bashes read the same rc files (a temporary HOME whose .bashrc sets the prompt), so the
//! difference is what fugue adds: the JSON-RPC round trip, writing the command file, the prompt
//! hook's FIFO record and mark, and finding the command's output.

use crate::client::{Fugue, R};
use crate::clock::{median, ms, quantile};
use crate::figures::Bench;
use crate::pty;
use crate::report::Row;
use serde_json::json;
use std::fs::File;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub const EXEC_FIG: &str = "`fugue_exec` of `true` in a live bash, call → answer";
const EXEC_TARGET: &str = "median ≤ bare + 2 ms";
pub const ANSWER_FIG: &str = "green `fugue_exec` answer of a silent command";
const ANSWER_TARGET: &str = "≤ 300 B";

/// The prompt both bashes show, set in the temporary HOME's .bashrc.
const PROMPT: &str = "BENCH-READY> ";

pub fn exec(b: &Bench) -> R<Vec<Row>> {
    let bash = find("bash").ok_or("bash is not installed")?;
    let home = bench_home()?;
    let measured = measure(b, &bash, &home);
    let _ = std::fs::remove_dir_all(&home);
    measured
}

/// A temporary HOME whose .bashrc sets the prompt both bashes show; the caller removes it.
pub fn bench_home() -> R<PathBuf> {
    let home = std::env::temp_dir().join(format!("fugue-bench-home-{}", std::process::id()));
    std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    std::fs::write(home.join(".bashrc"), format!("PS1='{PROMPT}'\n")).map_err(|e| e.to_string())?;
    Ok(home)
}

fn measure(b: &Bench, bash: &str, home: &std::path::Path) -> R<Vec<Row>> {
    let home_str = home.to_str().ok_or("temp dir is not UTF-8")?;
    let mut fugue = Fugue::start_with(&b.fugue, &[("FUGUE_SHELL", bash), ("HOME", home_str)])?;
    let pane = fugue.call("fugue_create_session", json!({}))?["pane_id"].clone();
    let mut bare = Bare::start(bash, home)?;
    let args = json!({"pane_id": pane, "command": "true"});
    // The first exec waits for the shell's first prompt; it is not what is measured.
    let first = fugue.call("fugue_exec", args.clone())?;
    let size = serde_json::to_string(&first).map_err(|e| e.to_string())?.len();
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..b.reps(200) {
        theirs.push(bare.run("true")?);
        let (answer, took) = fugue.call_timed("fugue_exec", args.clone())?;
        if answer["status"] != "ok" {
            return Err(format!("fugue_exec of true: {answer}"));
        }
        ours.push(took);
    }
    fugue.close()?;
    let (m_ours, m_theirs) = (median(&ours), median(&theirs));
    let p99 = |s: &[Duration]| ms(quantile(s, 0.99));
    Ok(vec![
        Row {
            baseline: format!(
                "bare PTY bash: median {:.2} ms, p99 {:.2} ms",
                ms(m_theirs),
                p99(&theirs)
            ),
            fugue: format!("median {:.2} ms, p99 {:.2} ms", ms(m_ours), p99(&ours)),
            ratio: format!(
                "{:.2}× (+{:.2} ms)",
                ms(m_ours) / ms(m_theirs),
                ms(m_ours) - ms(m_theirs)
            ),
            ..Row::new(EXEC_FIG, EXEC_TARGET)
        }
        .judge(m_ours <= m_theirs + Duration::from_millis(2)),
        Row {
            fugue: format!("{size} B (the structured answer; MCP's text copy doubles it)"),
            ..Row::new(ANSWER_FIG, ANSWER_TARGET)
        }
        .judge(size <= 300),
    ])
}

/// An interactive bash on a bare PTY, driven by writing lines and reading up to its prompt.
pub struct Bare {
    master: File,
    child: Child,
    seen: Vec<u8>,
}

impl Bare {
    pub fn start(bash: &str, home: &std::path::Path) -> R<Bare> {
        let (master, slave) = pty::open()?;
        let mut cmd = Command::new(bash);
        cmd.arg("-i").env("HOME", home).env("TERM", "xterm-256color");
        pty::on_terminal(&mut cmd, &slave)?;
        let child = cmd.spawn().map_err(|e| format!("cannot start bash: {e}"))?;
        drop(slave);
        let mut bare = Bare { master: File::from(master), child, seen: Vec::new() };
        bare.until_prompt()?;
        Ok(bare)
    }

    /// Types `line` and Enter, and reads until the next prompt; returns the time it took.
    fn run(&mut self, line: &str) -> R<Duration> {
        let started = Instant::now();
        self.master.write_all(format!("{line}\r").as_bytes()).map_err(|e| e.to_string())?;
        self.until_prompt()?;
        Ok(started.elapsed())
    }

    fn until_prompt(&mut self) -> R<()> {
        self.seen.clear();
        let mut buf = [0u8; 4096];
        while !self.seen.windows(PROMPT.len()).any(|w| w == PROMPT.as_bytes()) {
            match self.master.read(&mut buf) {
                Ok(0) => return Err("bash ended".into()),
                Ok(n) => self.seen.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("reading bash: {e}")),
            }
        }
        Ok(())
    }
}

impl Drop for Bare {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn find(program: &str) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .map(|p: PathBuf| p.to_string_lossy().into_owned())
}
