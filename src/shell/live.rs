//! A live shell: a pane's interactive shell with fugue's integration standing above it.
//!
//! In: a pane, and the integration (`Shell`) that reads its prompt records. Out: the one answer to
//! "is this shell idle" (`idle`), what it runs (`running`), the commands typed into it — each in
//! the shell's own syntax, run in a directory or checked first (`run`, `run_step`, `replace`) — and
//! the one way to interrupt what it runs (`interrupt`). The pane below knows none of it: it is a
//! terminal and a process, which a `Live` types into, reads and signals. Every caller that needs
//! the shell (status, fugue's own shells, the waits, `fugue_exec`, the pipeline, a cancelled task)
//! goes through here, so no handler writes shell text.

use super::{Family, Launch, PROMPT_DRAWN, Prompt, Shell, first_line, quote, shown};
use crate::error::Result;
use crate::pane::echo::Echo;
use crate::pane::{Pane, mark};
use crate::waiter::{Drove, Look, Waiter};
use std::any::Any;
use std::path::Path;
use std::time::{Duration, Instant};

/// How far back from the end of the output a prompt's marks are looked for.
const PROMPT_LOOK_BACK: u64 = 64 << 10;

/// How long an interrupted command may take to give the prompt back: a cancelled call waits that
/// long, so the shell is not left busy for the next one, and a pipeline's step that is not back by
/// then is killed with its pane.
pub(crate) const INTERRUPT_WAIT: Duration = Duration::from_secs(2);

/// How long after an interrupt a job that still holds the terminal gets another: one sent while
/// the shell forks the command reaches neither (the child is not yet the terminal's foreground).
const INTERRUPT_SETTLE: Duration = Duration::from_millis(100);

/// A pane and the live shell that stands above it.
#[derive(Clone, Copy)]
pub(crate) struct Live<'a> {
    pub(crate) pane: &'a Pane,
    pub(crate) shell: &'a Shell,
}

/// A command typed into a live shell: its exec id, and the output offset where its line went.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Typed {
    pub(crate) id: u64,
    pub(crate) at: u64,
}

impl<'a> Live<'a> {
    pub(crate) fn new(pane: &'a Pane, shell: &'a Shell) -> Live<'a> {
        Live { pane, shell }
    }

    /// The live shell above `pane`; `None` for a pane without one (a command, a shell without
    /// the integration).
    pub(crate) fn of(pane: &'a Pane) -> Option<Live<'a>> {
        let above: &dyn Any = pane.above()?;
        Some(Live { pane, shell: above.downcast_ref::<Shell>()? })
    }

    /// The shell's last prompt when it sits at it with nothing running — no command fugue typed
    /// waits for its record, and no job has the terminal: the outcome of the last command,
    /// whenever it ended. `None` while the shell starts, and once it ended. The one answer to "is
    /// this shell idle" for status, fugue's own shells, waits and `fugue_exec`.
    pub(crate) fn idle(&self) -> Option<Prompt> {
        let (last, pending) = self.shell.with(|s| (s.last().cloned(), s.pending.is_some()));
        if pending || !self.pane.is_running() || self.pane.foreground_job().is_some() {
            return None;
        }
        last
    }

    /// Whether the shell can take a command: it is idle, or still starting with nothing typed
    /// (the caller waits for its first prompt).
    pub(crate) fn free(&self) -> bool {
        let starting = self.shell.with(|s| s.prompts == 0 && s.pending.is_none());
        starting || self.idle().is_some()
    }

    /// The first line of the command fugue typed that has not ended.
    pub(crate) fn pending(&self) -> Option<String> {
        self.shell.with(|s| s.pending.as_ref().map(|p| first_line(&p.command).to_string()))
    }

    /// What the shell runs now: the command fugue typed, else the foreground job's command line.
    pub(crate) fn running(&self) -> Option<String> {
        let typed = self.shell.with(|s| s.pending.as_ref().map(|p| p.command.clone()));
        typed.or_else(|| self.pane.foreground_job())
    }

    /// Where the output of the command fugue typed began — the one still running, else the last —
    /// after its begin mark, looked for from output offset `from` on.
    pub(crate) fn job_start(&self, from: u64) -> Option<u64> {
        let exec =
            self.shell.with(|s| s.pending.as_ref().map(|p| p.id).or(s.last().map(|p| p.exec)));
        let exec = exec.filter(|id| *id > 0)?;
        mark::locate(self.pane, &self.shell.begin_mark(exec), from).map(|(_, end)| end)
    }

    /// Types `command` for the shell to run, in `dir` when given as `cd DIR && command` would run
    /// it: not at all when the `cd` fails, and the shell stays in `dir`.
    pub(crate) fn run(&self, command: &str, dir: Option<&Path>) -> Result<Typed> {
        let sent_to = dir.map(|d| d.to_string_lossy().into_owned());
        let text = match dir {
            Some(dir) => in_dir(self.shell.kind, dir, command),
            None => command.to_string(),
        };
        self.type_exec(&text, sent_to, &shown(command))
    }

    /// Types a pipeline's step. A syntax error in `eval` has a status of each shell's own (zsh 1,
    /// ksh 3), so every shell but bash checks the step first with `-n`, and a step that does not
    /// parse fails with 2, as in bash; the shell goes on to the next step.
    pub(crate) fn run_step(&self, step: &str) -> Result<Typed> {
        let text = match self.shell.kind {
            Family::Bash => step.to_string(),
            _ => {
                let (program, step) = (quote(&self.shell.program), quote(step));
                format!("if {program} -n -c {step} fugue; then eval {step}; else (exit 2); fi")
            }
        };
        self.type_exec(&text, None, &shown(step))
    }

    /// Replaces the shell with `program`, interactive and with the integration `launch` made for
    /// it. A person watching sees `exec PROGRAM`, not the lines that set it up.
    pub(crate) fn replace(&self, program: &str, launch: &Launch) -> Result<Typed> {
        self.type_exec(&launch.exec_line(program), None, &format!("exec {program}"))
    }

    /// Types the line that makes the shell run `text` from its private file, so that a person
    /// watching sees `display` where the shell echoes that line (see `pane::echo`). What is held
    /// is shown as it was if the shell prompts again without running the line, and when the pane
    /// ends. `sent_to` is the directory the command was sent to run in, if any.
    fn type_exec(&self, text: &str, sent_to: Option<String>, display: &str) -> Result<Typed> {
        let (id, line) = self.shell.prepare_exec(text, sent_to)?;
        let output = self.pane.output();
        output.hold_echo(Echo::new(id, &line, &self.shell.begin_mark(id), display));
        match self.pane.send(&[line.as_bytes()]) {
            Ok((at, _)) => {
                self.shell.typed(id, at);
                Ok(Typed { id, at })
            }
            Err(e) => {
                output.release_echo(id);
                self.shell.forget_exec(id);
                Err(e)
            }
        }
    }

    /// Whether the shell's last prompt is drawn whole: its end-of-prompt mark (OSC 133 B) came
    /// after the end mark of the last command, so what the terminal prints from now on is the
    /// shell's echo of what is typed. `false` while the shell has not reported a prompt, or its
    /// marks are not in the output yet.
    pub(crate) fn prompt_drawn(&self) -> bool {
        let Some(prompt) = self.shell.with(|s| s.last().cloned()) else { return false };
        let end_mark = self.shell.end_mark(&prompt);
        self.pane.output().with(|s| {
            let end = s.ring.end();
            let (bytes, _) = s.ring.copy(end.saturating_sub(PROMPT_LOOK_BACK), end);
            let Some(at) = find(&bytes, end_mark.as_bytes()) else { return false };
            find(&bytes[at..], PROMPT_DRAWN.as_bytes()).is_some()
        })
    }

    /// Waits until `prompt_drawn`, or until `by`.
    pub(crate) fn wait_prompt_drawn(&self, by: Instant) {
        let printed = self.pane.output().subscribe();
        while !self.prompt_drawn() && printed.recv_deadline(by).is_ok() {}
    }

    /// Interrupts what the shell runs, as Ctrl-C does (`Pane::interrupt`), and waits until the
    /// shell is back at its prompt, at most `INTERRUPT_WAIT`; says whether it is. A command fugue
    /// typed is interrupted only once its output began (its begin mark): sent while the typed line
    /// still sits in the line editor, the interrupt would discard the line, and no record would
    /// ever name the command. The interrupt goes again every `INTERRUPT_SETTLE` while a job still
    /// holds the terminal, since one sent while the shell forks reaches neither; never while the
    /// shell has the terminal back, where it would cut short the prompt's hooks and with them the
    /// record that says the command ended. A job that was typed as keys is interrupted at once,
    /// and again while it holds the terminal.
    pub(crate) fn interrupt(&self) -> bool {
        let mut waiter = Waiter::new()
            .until(Instant::now() + INTERRUPT_WAIT)
            .on(self.shell.subscribe())
            .on(self.pane.output().subscribe());
        // When the interrupt may go (again), and whether it went.
        let mut sending = (Instant::now(), false);
        let look = |(next, sent): &mut (Instant, bool)| {
            if !self.pane.is_running() {
                return Look::Done(false);
            }
            let pending = self.shell.with(|s| s.pending.as_ref().map(|p| (p.id, p.typed)));
            let begun = match pending {
                None if self.idle().is_some() => return Look::Done(true),
                None => true,
                Some((_, None)) => false,
                Some((id, Some(typed))) => {
                    mark::locate(self.pane, &self.shell.begin_mark(id), typed).is_some()
                }
            };
            let now = Instant::now();
            if begun && now >= *next && (!*sent || self.pane.foreground_job().is_some()) {
                self.pane.interrupt();
                *sent = true;
                *next = now + INTERRUPT_SETTLE;
            }
            Look::Again(begun.then_some(*next))
        };
        match waiter.drive(&mut sending, look, |_| {}) {
            Drove::Done(back) => back,
            Drove::Deadline | Drove::Cancelled => false,
        }
    }
}

/// Interrupts what runs in `pane`: through its live shell, waiting for its prompt (see
/// `Live::interrupt`), or, in a pane without one, its terminal's foreground, once.
pub(crate) fn interrupt(pane: &Pane) -> bool {
    match Live::of(pane) {
        Some(live) => live.interrupt(),
        None => {
            pane.interrupt();
            false
        }
    }
}

/// `command` run in `dir`, as `cd DIR && command` would run it. The command goes in a group of its
/// own, so that its own `;` and `||` still need the `cd`.
fn in_dir(kind: Family, dir: &Path, command: &str) -> String {
    let dir = quote(&dir.to_string_lossy());
    match kind {
        Family::Fish => format!("cd {dir}; and begin\n{command}\nend"),
        _ => format!("cd {dir} && {{\n{command}\n}}"),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_in_a_directory_needs_the_cd() {
        let posix = in_dir(Family::Dash, Path::new("/tmp/a'b"), "make; make test");
        assert_eq!(posix, "cd '/tmp/a'\\''b' && {\nmake; make test\n}");
        let fish = in_dir(Family::Fish, Path::new("/tmp"), "make");
        assert_eq!(fish, "cd '/tmp'; and begin\nmake\nend");
    }
}
