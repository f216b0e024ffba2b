//! The verdict protocol between an analyzer agent and fugue, from both ends.
//!
//! An analyzer writes `{"verdict": "complete|followup|failed", "reason": "...", "followup_prompt":
//! "...", "cost_usd": 0.0}` to `$FUGUE_VERDICT_FILE`, by hand or with `fugue verdict ...`, which
//! validates it and writes it atomically. fugue reads it after the analyzer exits: a missing,
//! oversized or malformed file, or a follow-up without a prompt, is an error in words (the attempt
//! fails); it never guesses. Unknown fields are ignored. Other stages may write the same file with
//! only `cost_usd` to report what they spent.

use super::record::AnalyzerVerdict;
use super::store::write_atomic;
use crate::words::Words;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The reason recorded for a verdict that gave none.
pub(crate) const NO_REASON: &str = "no reason given";

/// A verdict file larger than this is refused.
const MAX_VERDICT_BYTES: u64 = 1 << 20;

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Verdict {
    pub(crate) verdict: AnalyzerVerdict,
    pub(crate) reason: String,
    pub(crate) followup_prompt: Option<String>,
    pub(crate) cost_usd: Option<f64>,
}

/// Reads and checks the verdict file an analyzer wrote.
pub(crate) fn read(path: &Path) -> Result<Verdict, String> {
    let value = read_json(path)?.ok_or_else(|| {
        "no verdict: the analyzer exited without writing $FUGUE_VERDICT_FILE".to_string()
    })?;
    parse(&value)
}

/// The cost a stage reported in its verdict file, if it wrote one. Returns the cost and, when the
/// file was there but unusable, why.
pub(crate) fn read_cost(path: &Path) -> (Option<f64>, Option<String>) {
    match read_json(path) {
        Ok(None) => (None, None),
        Ok(Some(value)) => match cost(&value) {
            Ok(cost) => (cost, None),
            Err(e) => (None, Some(e)),
        },
        Err(e) => (None, Some(e)),
    }
}

fn read_json(path: &Path) -> Result<Option<Value>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read the verdict file: {e}")),
    };
    if meta.len() > MAX_VERDICT_BYTES {
        return Err(format!("malformed verdict: {} bytes is over the 1 MiB limit", meta.len()));
    }
    let text = std::fs::read(path).map_err(|e| format!("cannot read the verdict file: {e}"))?;
    serde_json::from_slice(&text)
        .map(Some)
        .map_err(|e| format!("malformed verdict: not valid JSON ({e})"))
}

pub(crate) fn parse(value: &Value) -> Result<Verdict, String> {
    let bad = |why: &str| format!("malformed verdict: {why}");
    if !value.is_object() {
        return Err(bad("not a JSON object"));
    }
    let word = value["verdict"].as_str().ok_or_else(|| bad("no \"verdict\" string"))?;
    let verdict = AnalyzerVerdict::parse(word).ok_or_else(|| {
        bad(&format!("verdict {word:?} is not one of {}", AnalyzerVerdict::words()))
    })?;
    let text = |key: &str| match &value[key] {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(bad(&format!("\"{key}\" is not a string"))),
    };
    // A reason is optional; the stage and the events then say there was none.
    let reason =
        text("reason")?.filter(|r| !r.trim().is_empty()).unwrap_or_else(|| NO_REASON.to_string());
    let followup_prompt = text("followup_prompt")?.filter(|p| !p.trim().is_empty());
    if verdict == AnalyzerVerdict::Followup && followup_prompt.is_none() {
        return Err(bad("a followup verdict needs a non-empty \"followup_prompt\""));
    }
    Ok(Verdict { verdict, reason, followup_prompt, cost_usd: cost(value)? })
}

fn cost(value: &Value) -> Result<Option<f64>, String> {
    match &value["cost_usd"] {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_f64() {
            Some(c) if c.is_finite() && c >= 0.0 => Ok(Some(c)),
            _ => Err("malformed verdict: \"cost_usd\" must be a non-negative number".into()),
        },
        _ => Err("malformed verdict: \"cost_usd\" is not a number".into()),
    }
}

pub(crate) const USAGE: &str = "\
Usage: fugue verdict complete|followup|failed [--reason TEXT]
                     [--prompt TEXT | --prompt-file PATH] [--cost USD] [--file PATH]

Writes an agent-pipeline verdict as JSON, atomically, to PATH (default $FUGUE_VERDICT_FILE).
A reason is optional; followup needs a prompt: what the implementer should do next.
";

/// `fugue verdict`'s options, as `cli` reads them.
pub(crate) struct VerdictArgs {
    pub(crate) verdict: AnalyzerVerdict,
    /// `--reason TEXT`.
    pub(crate) reason: Option<String>,
    /// `--prompt TEXT` or `--prompt-file PATH`, the last given.
    pub(crate) prompt: Option<FollowUp>,
    /// `--cost USD`, checked finite and not negative.
    pub(crate) cost: Option<f64>,
    /// `--file PATH`; else `$FUGUE_VERDICT_FILE`.
    pub(crate) file: Option<PathBuf>,
}

/// Where the follow-up prompt is.
pub(crate) enum FollowUp {
    Text(String),
    File(String),
}

/// `fugue verdict ...`: writes the file, exits 0; or explains and exits 2.
pub(crate) fn cli(args: VerdictArgs) -> ExitCode {
    match build(args).and_then(|(path, value)| {
        write_atomic(&path, format!("{value}\n").as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => misuse(&message),
    }
}

/// What is wrong with a `fugue verdict` line, said with its usage; exit 2.
pub(crate) fn misuse(message: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "fugue verdict: {message}\n\n{USAGE}");
    ExitCode::from(2)
}

/// The file to write and the verdict to write there, checked as fugue will read it.
pub(crate) fn build(args: VerdictArgs) -> Result<(PathBuf, Value), String> {
    let file = args
        .file
        .or_else(|| {
            std::env::var_os("FUGUE_VERDICT_FILE").filter(|f| !f.is_empty()).map(PathBuf::from)
        })
        .ok_or("no file: give --file or run under a pipeline ($FUGUE_VERDICT_FILE)")?;
    let prompt = match args.prompt {
        Some(FollowUp::Text(text)) => Some(text),
        Some(FollowUp::File(path)) => Some(
            std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read --prompt-file {path}: {e}"))?,
        ),
        None => None,
    };
    let verdict = args.verdict.name();
    let mut value = json!({"verdict": verdict});
    if let Some(reason) = args.reason.filter(|r| !r.trim().is_empty()) {
        value["reason"] = json!(reason);
    }
    match prompt.filter(|p| !p.trim().is_empty()) {
        Some(prompt) => value["followup_prompt"] = json!(prompt),
        None if args.verdict == AnalyzerVerdict::Followup => {
            return Err("followup needs --prompt or --prompt-file".into());
        }
        None => {}
    }
    if let Some(cost) = args.cost {
        value["cost_usd"] = json!(cost);
    }
    // The file fugue will read must hold what fugue accepts.
    parse(&value)?;
    Ok((file, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_parse_strictly() {
        let v = parse(&json!({"verdict": "COMPLETE", "reason": "ok", "extra": 1})).unwrap();
        assert_eq!((v.verdict, v.reason.as_str()), (AnalyzerVerdict::Complete, "ok"));
        let f = parse(&json!({"verdict": "followup", "followup_prompt": "more", "cost_usd": 0.5}))
            .unwrap();
        assert_eq!((f.followup_prompt.as_deref(), f.cost_usd), (Some("more"), Some(0.5)));
        for bad in [
            json!([]),
            json!({}),
            json!({"verdict": "maybe"}),
            json!({"verdict": 1}),
            json!({"verdict": "followup"}),
            json!({"verdict": "followup", "followup_prompt": " "}),
            json!({"verdict": "failed", "reason": 3}),
            json!({"verdict": "failed", "cost_usd": -1}),
            json!({"verdict": "failed", "cost_usd": "1"}),
        ] {
            let err = parse(&bad).unwrap_err();
            assert!(err.starts_with("malformed verdict"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_missing_file_is_no_verdict() {
        let err = read(Path::new("/nonexistent/fugue/verdict.json")).unwrap_err();
        assert!(err.starts_with("no verdict"));
        assert_eq!(read_cost(Path::new("/nonexistent/fugue/verdict.json")), (None, None));
    }

    #[test]
    fn verdicts_and_actions_are_their_words_everywhere() {
        use crate::agent::record::Action;
        for verdict in
            [AnalyzerVerdict::Complete, AnalyzerVerdict::Followup, AnalyzerVerdict::Failed]
        {
            let word = verdict.name();
            assert_eq!(serde_json::to_value(verdict).unwrap(), json!(word));
            assert_eq!(serde_json::from_value::<AnalyzerVerdict>(json!(word)).unwrap(), verdict);
            assert_eq!(AnalyzerVerdict::parse(&word.to_uppercase()), Some(verdict));
            assert!(USAGE.contains(word), "fugue verdict's usage names {word}");
        }
        assert_eq!(AnalyzerVerdict::parse("follow-up"), Some(AnalyzerVerdict::Followup));
        assert!(serde_json::from_value::<AnalyzerVerdict>(json!("maybe")).is_err());
        let actions = serde_json::to_value([Action::Retry, Action::Followup, Action::Cancel]);
        assert_eq!(actions.unwrap(), json!(["retry", "followup", "cancel"]));
        assert_eq!(serde_json::from_value::<Action>(json!("cancel")).unwrap(), Action::Cancel);
    }
}
