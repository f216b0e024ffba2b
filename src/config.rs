//! Settings read once from the environment: the shell, the state directory and every hard limit.
//!
//! Each limit has a default that suits an agent on a laptop and an environment variable to change
//! it. The environment is read once, on the first call of `config()`; the values are passed in at
//! start-up: `Runtime::start` keeps a copy (`Runtime::config`) and hands the registry its `Setup`
//! and the agent manager its `Settings`; `main` and the shared server give each rpc connection its
//! `Bounds` from it; the shared-server front reads its line limits as it starts.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The limits and settings of one fugue process.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// The shell that runs pane commands and interactive panes.
    pub(crate) shell: String,
    /// Where agent pipelines keep their state; `None` means `.state/pipelines` in the repository.
    pub(crate) state_dir: Option<PathBuf>,
    /// Bytes of output kept per pane; older output is dropped (offsets stay valid).
    pub(crate) scrollback_bytes: usize,
    /// Panes alive at once, over all sessions.
    pub(crate) max_panes: usize,
    /// Sessions alive at once.
    pub(crate) max_sessions: usize,
    /// Tool calls running at once.
    pub(crate) max_calls: usize,
    /// The longest JSON-RPC line accepted, in bytes.
    pub(crate) max_line_bytes: usize,
    /// The most output one call returns, in bytes (the ceiling of `max_bytes`).
    pub(crate) max_output_bytes: usize,
    /// The largest compiled regex, in bytes.
    pub(crate) max_regex_bytes: usize,
    /// Agent pipelines that can exist at once.
    pub(crate) max_pipelines: usize,
    /// Interactive shells start with fugue's shell integration (`FUGUE_SHELL_INTEGRATION=0`: no).
    pub(crate) shell_integration: bool,
    /// How long a program that waits for the terminal must have printed nothing before it counts
    /// as asking, in milliseconds.
    pub(crate) input_quiet_ms: usize,
    /// Size of a new window.
    pub(crate) rows: u16,
    pub(crate) cols: u16,
}

impl Config {
    fn from_env() -> Config {
        let shell = std::env::var("FUGUE_SHELL")
            .ok()
            .or_else(|| std::env::var("SHELL").ok())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "/bin/sh".to_string());
        Config {
            shell,
            state_dir: std::env::var_os("FUGUE_STATE_DIR")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
            scrollback_bytes: number("FUGUE_SCROLLBACK_BYTES", 8 << 20, 4096, 1 << 30),
            max_panes: number("FUGUE_MAX_PANES", 256, 1, 4096),
            max_sessions: number("FUGUE_MAX_SESSIONS", 64, 1, 1024),
            max_calls: number("FUGUE_MAX_CALLS", 128, 1, 1024),
            max_line_bytes: number("FUGUE_MAX_LINE_BYTES", 4 << 20, 1024, 256 << 20),
            max_output_bytes: number("FUGUE_MAX_OUTPUT_BYTES", 1 << 20, 1024, 64 << 20),
            max_regex_bytes: number("FUGUE_MAX_REGEX_BYTES", 1 << 20, 1024, 64 << 20),
            max_pipelines: number("FUGUE_MAX_PIPELINES", 32, 1, 1024),
            shell_integration: std::env::var("FUGUE_SHELL_INTEGRATION")
                .map_or(true, |v| v.trim() != "0"),
            input_quiet_ms: number("FUGUE_INPUT_QUIET_MS", 1000, 100, 600_000),
            rows: number("FUGUE_ROWS", 24, 2, 500) as u16,
            cols: number("FUGUE_COLS", 80, 10, 500) as u16,
        }
    }
}

/// The process-wide configuration, read on first use.
pub(crate) fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(Config::from_env)
}

/// Reads a number from the environment; a missing or unusable value falls back to the default, and
/// the result is clamped into `[min, max]` so a typo cannot disable a limit.
fn number(name: &str, default: usize, min: usize, max: usize) -> usize {
    match std::env::var(name) {
        Ok(text) => match text.trim().parse::<usize>() {
            Ok(n) => n.clamp(min, max),
            Err(_) => {
                crate::log::warn(&format!("{name}={text:?} is not a number; using {default}"));
                default
            }
        },
        Err(_) => default,
    }
}
