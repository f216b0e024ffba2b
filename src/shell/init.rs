//! How a shell starts with fugue's integration: the families of shells fugue knows, the init
//! script of each (next to this file) written into the shell's private directory, the arguments
//! and variables that make the shell read it (`Launch`), and the one line fugue types to run a
//! command from that directory (`Family::stub`), whose echo views leave out (`is_stub`).

use crate::error::Result;
use crate::tempdir::PrivateDir;
use std::path::Path;

const BASH: &str = include_str!("init.bash");
const ZSH: &str = include_str!("init.zsh");
const FISH: &str = include_str!("init.fish");
const POSIX: &str = include_str!("init.sh");
/// How the POSIX script writes to the terminal and to the FIFO, with builtins only.
const PRINTF_OUT: &str = r#"__fugue_tty() { printf '%s' "$1" 2>/dev/null >/dev/tty; }
__fugue_rec() { printf '%s\0' "$1" 2>/dev/null >"$__fugue_dir/r"; }"#;
const MKSH_OUT: &str = r#"__fugue_tty() { print -rn -- "$1" 2>/dev/null >/dev/tty; }
__fugue_rec() { print -n -- "${1//\\/\\\\}\0" 2>/dev/null >"$__fugue_dir/r"; }"#;

/// The families of shells fugue can integrate with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Bash,
    Zsh,
    Fish,
    /// dash and other shells with only `$(...)` in PS1; `default_env` is the rc file the shell
    /// reads when ENV is unset.
    Dash,
    /// ksh93 and mksh: `${ ...;}` runs the hook in the shell itself.
    Ksh {
        default_env: &'static str,
    },
}

impl Family {
    /// The family of the shell at `path`, by its name; `None` for shells fugue cannot integrate.
    pub(crate) fn of(path: &str) -> Option<Family> {
        let base = Path::new(path).file_name()?.to_str()?;
        match base {
            "bash" => Some(Family::Bash),
            "zsh" => Some(Family::Zsh),
            "fish" => Some(Family::Fish),
            "sh" | "dash" | "ash" => Some(Family::Dash),
            "ksh" | "ksh93" => Some(Family::Ksh { default_env: ".kshrc" }),
            "mksh" | "lksh" => Some(Family::Ksh { default_env: ".mkshrc" }),
            _ => None,
        }
    }

    /// The line fugue types for exec `id` (see `is_stub`).
    pub(crate) fn stub(self, id: u64) -> String {
        // The leading space keeps the line out of the history where the shell is told to.
        match self {
            Family::Fish => format!(" __fugue_b {id}; eval $__fugue_c\r"),
            _ => format!(" __fugue_b {id};eval \"$__fugue_c\"\r"),
        }
    }
}

/// How to start a shell with the integration: extra arguments and environment.
#[derive(Default)]
pub(crate) struct Launch {
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
}

impl Launch {
    /// The shell text that replaces the running shell with `shell`, interactive and with this
    /// integration: its `export` lines, then `exec`.
    pub(crate) fn exec_line(&self, shell: &str) -> String {
        let (env, args) = self.words();
        format!("{env}\nexec {} {args} -i", quote(shell))
    }

    /// The command line that `user`'s shell runs to replace itself with `shell`, interactive and
    /// with this integration. The integration's variables come after the pane's own `env` (the
    /// init script restores ENV or ZDOTDIR from them): a shell fugue knows sets them in the line
    /// itself, past its own start-up files (a zsh running the line reads ZDOTDIR's .zshenv
    /// first); to a shell it does not know, whose syntax may differ, they go in `env`.
    pub(crate) fn start_line(
        &self,
        user: &str,
        shell: &str,
        env: &mut Vec<(String, String)>,
    ) -> String {
        if Family::of(user).is_some() {
            return self.exec_line(shell);
        }
        env.extend(self.env.iter().cloned());
        Launch { args: self.args.clone(), env: Vec::new() }.exec_line(shell)
    }

    /// The same as shell text, for a script that starts the shell: `export` lines, and the
    /// arguments as quoted words.
    pub(crate) fn words(&self) -> (String, String) {
        let env = self.env.iter().map(|(k, v)| format!("export {k}={}", quote(v)));
        let args = self.args.iter().map(|a| quote(a));
        (env.collect::<Vec<_>>().join("\n"), args.collect::<Vec<_>>().join(" "))
    }
}

/// Writes the init files for `kind` into `dir` and says how to start the shell with them.
pub(crate) fn write_init(
    kind: Family,
    dir: &PrivateDir,
    env: &[(String, String)],
) -> Result<Launch> {
    let path = |name: &str| dir.path.join(name).to_string_lossy().into_owned();
    let quoted_dir = quote(&dir.path.to_string_lossy());
    let user = |name: &str| {
        env.iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(name).ok())
    };
    let mut launch = Launch::default();
    match kind {
        Family::Bash => {
            dir.write("init.bash", &BASH.replace("@DIR@", &quoted_dir))?;
            launch.args = vec!["--init-file".into(), path("init.bash")];
        }
        Family::Zsh => {
            let restore = match user("ZDOTDIR") {
                Some(orig) => format!("export ZDOTDIR={}", quote(&orig)),
                None => "unset ZDOTDIR".to_string(),
            };
            std::fs::DirBuilder::new().create(dir.path.join("z"))?;
            let text = ZSH.replace("@DIR@", &quoted_dir).replace("@RESTORE_ZDOTDIR@", &restore);
            dir.write("z/.zshenv", &text)?;
            launch.env.push(("ZDOTDIR".into(), path("z")));
        }
        Family::Fish => {
            dir.write("init.fish", &FISH.replace("@DIR@", &quoted_dir))?;
            launch.args =
                vec!["--init-command".into(), format!("source {}", quote(&path("init.fish")))];
        }
        Family::Dash | Family::Ksh { .. } => {
            let restore = match (user("ENV"), kind) {
                (Some(orig), _) => format!("__fugue_env={0}\nexport ENV={0}", quote(&orig)),
                (None, Family::Ksh { default_env }) => {
                    format!("__fugue_env=\"$HOME\"/{default_env}\nunset ENV")
                }
                (None, _) => "__fugue_env=\nunset ENV".to_string(),
            };
            let (head, tail) = match kind {
                Family::Dash => (
                    r"'${__fugue_a%$((__fugue_k=__fugue_k+1))}$(__fugue_mark $?)'",
                    r"'$(__fugue_report $?)'",
                ),
                _ => (r"'${ __fugue_next $?;}'", r"'${ __fugue_report $__fugue_s;}'"),
            };
            // mksh has no printf builtin, and an external one would show the nonce in /proc.
            let out = match kind {
                Family::Ksh { default_env: ".mkshrc" } => MKSH_OUT,
                _ => PRINTF_OUT,
            };
            let text = POSIX
                .replace("@OUT@", out)
                .replace("@ESC@", "\x1b")
                .replace("@BEL@", "\x07")
                .replace("@DIR@", &quoted_dir)
                .replace("@RESTORE_ENV@", &restore)
                .replace("@PS1_HEAD@", head)
                .replace("@PS1_TAIL@", tail);
            dir.write("init.sh", &text)?;
            launch.env.push(("ENV".into(), path("init.sh")));
        }
    }
    Ok(launch)
}

/// A shell that speaks the POSIX language, for text written in it (a pipeline's steps): `shell`
/// itself when it does (so bash users keep `set -o pipefail`, `[[`, `source`), else /bin/sh.
pub(crate) fn posix(shell: &str) -> &str {
    match Family::of(shell) {
        Some(Family::Fish) | None => "/bin/sh",
        Some(_) => shell,
    }
}

/// One word for a POSIX shell (and for fish and zsh, which read `'\''` the same way).
pub(crate) fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The word every line `fugue_exec` types begins with.
const STUB_WORD: &str = "__fugue_b ";

/// Whether `line` of the text view is the echo of a line `fugue_exec` typed (after whatever prompt
/// the shell drew before it): ` __fugue_b ID;eval "$__fugue_c"`, or fish's form.
pub(crate) fn is_stub(line: &str) -> bool {
    let Some(at) = line.find(STUB_WORD) else { return false };
    let rest = &line[at + STUB_WORD.len()..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let tail = rest[digits..].trim_end();
    digits > 0 && (tail == ";eval \"$__fugue_c\"" || tail == "; eval $__fugue_c")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_typed_line_is_recognised_after_any_prompt() {
        for kind in [Family::Bash, Family::Fish] {
            let typed = kind.stub(12);
            assert!(is_stub(&format!("user@host:~$ {}", typed.trim_end())), "{typed:?}");
        }
        assert!(!is_stub("echo __fugue_b 1;eval something else"));
        assert!(!is_stub("plain output"));
    }

    #[test]
    fn shells_are_recognised_by_name() {
        assert_eq!(Family::of("/usr/bin/bash"), Some(Family::Bash));
        assert_eq!(Family::of("/bin/sh"), Some(Family::Dash));
        assert_eq!(Family::of("mksh"), Some(Family::Ksh { default_env: ".mkshrc" }));
        assert_eq!(Family::of("/usr/bin/nu"), None);
    }
}
