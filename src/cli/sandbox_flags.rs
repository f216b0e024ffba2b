//! The sandbox options of `fugue serve` (and of `__server`, which a front starts with them),
//! read into `sandbox::Flags`; `FUGUE_SANDBOX` gives the mode when `--sandbox` does not. The
//! flags are resolved into a policy by the sandbox (`Flags::policy`), not here.

use crate::sandbox::{Flags, Mode};
use crate::words::Words;
use std::path::PathBuf;

/// Takes the sandbox flags out of `words`; returns the flags and the other words, or what is
/// wrong. `FUGUE_SANDBOX` gives the mode when `--sandbox` does not.
pub(crate) fn parse<'a>(words: &[&'a str]) -> Result<(Flags, Vec<&'a str>), String> {
    let mut flags = Flags::default();
    let mut rest = Vec::new();
    let mut words = words.iter().copied();
    while let Some(word) = words.next() {
        let (name, inline) = match word.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value)),
            _ => (word, None),
        };
        let mut value = |what: &str| {
            inline.or_else(|| words.next()).ok_or_else(|| format!("{name} takes {what}"))
        };
        match name {
            "--sandbox" => {
                let v = value("a mode")?;
                flags.mode = Some(
                    Mode::from_word(v)
                        .ok_or_else(|| format!("--sandbox {}", Mode::not_one_of(v)))?,
                );
            }
            "--writable" => flags.writable.push(PathBuf::from(value("a directory")?)),
            "--network" => {
                flags.network = Some(match value("on or off")? {
                    "on" => true,
                    "off" => false,
                    v => return Err(format!("--network {v:?}: it is on or off")),
                });
            }
            "--writable-git" => flags.writable_git = true,
            "--pass-env" => {
                let v = value("a variable name")?;
                if !valid_name(v) {
                    return Err(format!("--pass-env {v:?} is not a variable name"));
                }
                flags.pass_env.push(v.to_string());
            }
            "--allow-unix-socket" => {
                flags.allow_unix.push(PathBuf::from(value("a socket's path")?));
            }
            _ => rest.push(word),
        }
    }
    if flags.mode.is_none()
        && let Ok(v) = std::env::var("FUGUE_SANDBOX")
        && !v.is_empty()
    {
        flags.mode = Some(
            Mode::from_word(&v).ok_or_else(|| format!("FUGUE_SANDBOX {}", Mode::not_one_of(&v)))?,
        );
    }
    Ok((flags, rest))
}

/// Whether `word` is one of the sandbox flags (plain `fugue` takes them as `serve` does).
pub(crate) fn is_flag(word: &str) -> bool {
    let name = word.split_once('=').map_or(word, |(name, _)| name);
    matches!(
        name,
        "--sandbox"
            | "--writable"
            | "--network"
            | "--writable-git"
            | "--pass-env"
            | "--allow-unix-socket"
    )
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::{flags_of, report};
    use std::path::Path;

    #[test]
    fn flags_are_taken_out_and_checked() {
        let (flags, rest) =
            parse(&["--sandbox", "read-only", "--shared", "--writable=/x", "--network", "on"])
                .unwrap();
        assert_eq!(flags.mode, Some(Mode::ReadOnly));
        assert_eq!(flags.writable, vec![PathBuf::from("/x")]);
        assert_eq!(flags.network, Some(true));
        assert_eq!(rest, vec!["--shared"]);
        assert!(
            parse(&["--sandbox", "loose"])
                .unwrap_err()
                .contains("is not one of read-only, workspace-write, off")
        );
        assert!(parse(&["--network", "maybe"]).is_err());
        assert!(parse(&["--writable"]).unwrap_err().contains("takes"));
        assert!(parse(&["--pass-env", "A B"]).is_err());
        assert!(parse(&["--allow-unix-socket"]).unwrap_err().contains("socket's path"));
        let (flags, _) = parse(&["--allow-unix-socket=/run/a.sock"]).unwrap();
        let err = Flags { mode: Some(Mode::Off), ..flags }.policy(Path::new("/"), Vec::new());
        assert!(err.unwrap_err().contains("--allow-unix-socket"), "needs a sandbox");
    }

    #[test]
    fn a_policy_passes_to_a_shared_server_through_its_flags() {
        let dir = std::env::temp_dir();
        let policy = Flags {
            mode: Some(Mode::WorkspaceWrite),
            writable: vec![dir.clone()],
            network: Some(true),
            writable_git: true,
            pass_env: vec!["GH_TOKEN".into()],
            allow_unix: vec![dir.join("agent.sock")],
        }
        .policy(Path::new("/"), Vec::new())
        .unwrap();
        let flags = flags_of(&policy);
        let words: Vec<&str> = flags.iter().map(String::as_str).collect();
        let (again, rest) = parse(&words).unwrap();
        assert!(rest.is_empty());
        let again = again.policy(Path::new("/"), Vec::new()).unwrap();
        assert_eq!(report(&again), report(&policy));
        assert_eq!(again.pass_env, policy.pass_env);
        assert_eq!(again.allow_unix, policy.allow_unix);
    }
}
