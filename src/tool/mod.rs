//! The tool framework: what a tool is, what its handler is given, and how its answer is shaped.
//!
//! A `Tool` is one value — name, description, schemas, hints and handler — defined next to its
//! handler in the module that offers it. Handlers get a `Ctx` (the runtime they act on, and their
//! call's cancellation and progress) and typed `Args`; `Registered::call` checks argument names
//! against the schema, runs the handler and turns its `Result` into the MCP result shape
//! (structured content plus its compact text copy). This module is a leaf: it knows nothing of
//! panes, pipelines or the protocol, and is generic over the runtime `R` its handlers act on.

pub(crate) mod args;
pub(crate) mod call;
pub(crate) mod choice;
pub(crate) mod order;
pub(crate) mod task;

use crate::cancel::Cancel;
use crate::error::Error;
use args::Args;
use call::Progress;
use serde_json::{Map, Value, json};
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// What a handler gets: the runtime it acts on, the caller's directory, and its call's
/// cancellation and progress.
pub(crate) struct Ctx<'a, R> {
    pub(crate) runtime: &'a R,
    /// Where the caller works: fugue's own directory in-process, the front's in a shared server.
    /// Paths in arguments are relative to it, and what names no directory runs in it.
    pub(crate) cwd: &'a Path,
    pub(crate) cancel: &'a Cancel,
    pub(crate) progress: &'a Progress,
}

impl<R> Ctx<'_, R> {
    /// A directory argument as the caller means it (see `dir`).
    pub(crate) fn dir(&self, path: Option<PathBuf>) -> PathBuf {
        dir(self.cwd, path)
    }
}

/// A directory argument as a caller working in `base` means it: relative to `base`, which is also
/// the answer when the argument is absent.
pub(crate) fn dir(base: &Path, path: Option<PathBuf>) -> PathBuf {
    match path {
        Some(path) => base.join(path),
        None => base.to_path_buf(),
    }
}

/// A handler reaches the runtime's parts directly (`ctx.mux`): the runtime is what it acts on.
impl<R> Deref for Ctx<'_, R> {
    type Target = R;

    fn deref(&self) -> &R {
        self.runtime
    }
}

/// The MCP tool annotations, which clients treat as hints.
#[derive(Clone, Copy)]
pub(crate) struct Hints {
    pub(crate) read_only: bool,
    pub(crate) destructive: bool,
    pub(crate) idempotent: bool,
}

/// Reads state and changes nothing.
pub(crate) const READS: Hints = Hints { read_only: true, destructive: false, idempotent: true };
/// Starts processes or writes input; nothing it does destroys earlier work.
pub(crate) const STARTS: Hints = Hints { read_only: false, destructive: false, idempotent: false };
/// Sets a state; repeating it changes nothing more.
pub(crate) const SETS: Hints = Hints { read_only: false, destructive: false, idempotent: true };
/// Ends processes or discards output.
pub(crate) const ENDS: Hints = Hints { read_only: false, destructive: true, idempotent: true };
/// Runs arbitrary commands, which may do anything.
pub(crate) const RUNS: Hints = Hints { read_only: false, destructive: true, idempotent: false };

/// A tool's handler: checked arguments in, a result object or an error out.
pub(crate) type Handler<R> = fn(&Ctx<'_, R>, &Args<'_>) -> crate::error::Result<Value>;

/// One tool, whole: what `tools/list` shows of it and the handler `tools/call` runs.
pub(crate) struct Tool<R: 'static> {
    pub(crate) name: &'static str,
    pub(crate) title: &'static str,
    pub(crate) description: &'static str,
    pub(crate) hints: Hints,
    /// The JSON Schema of the arguments (an object schema).
    pub(crate) input: fn() -> Value,
    /// The JSON Schema of a successful result (an object schema).
    pub(crate) output: fn() -> Value,
    pub(crate) call: Handler<R>,
}

impl<R> Tool<R> {
    /// The tool's `tools/list` entry.
    pub(crate) fn describe(&self) -> Value {
        json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": (self.input)(),
            "outputSchema": (self.output)(),
            "annotations": {
                "readOnlyHint": self.hints.read_only,
                "destructiveHint": self.hints.destructive,
                "idempotentHint": self.hints.idempotent,
                "openWorldHint": !self.hints.read_only,
            },
        })
    }
}

/// A tool ready to be called: the names its schema accepts, read once rather than on every call.
pub(crate) struct Registered<R: 'static> {
    pub(crate) tool: &'static Tool<R>,
    known: Vec<String>,
}

impl<R> Registered<R> {
    pub(crate) fn new(tool: &'static Tool<R>) -> Registered<R> {
        let schema = (tool.input)();
        let known = schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        Registered { tool, known }
    }

    /// Runs the tool and shapes its MCP result. Argument names are checked against the schema
    /// first, so a misspelt option is an error instead of being silently ignored.
    pub(crate) fn call(&self, ctx: &Ctx<'_, R>, arguments: &Map<String, Value>) -> Value {
        let args = Args::new(arguments);
        let known: Vec<&str> = self.known.iter().map(String::as_str).collect();
        let unknown = args.unknown(&known);
        let outcome = if unknown.is_empty() {
            (self.tool.call)(ctx, &args)
        } else {
            Err(Error::invalid(format!(
                "unknown argument {} for {}; it takes: {}",
                unknown.iter().map(|k| format!("'{k}'")).collect::<Vec<_>>().join(", "),
                self.tool.name,
                if known.is_empty() { "no arguments".to_string() } else { known.join(", ") }
            )))
        };
        match outcome {
            Ok(value) => success(value),
            Err(err) => failure(&err),
        }
    }
}

pub(crate) fn success(value: Value) -> Value {
    let text = serde_json::to_string(&value).unwrap_or_default();
    // Built by moving the parts in: json! would copy both through Serialize, which for a large
    // result (200 panes listed, a megabyte of output) costs more than the tool itself.
    let mut block = json!({"type": "text"});
    block["text"] = Value::String(text);
    let mut result = json!({});
    result["content"] = Value::Array(vec![block]);
    result["structuredContent"] = value;
    result
}

pub(crate) fn failure(err: &Error) -> Value {
    json!({
        "content": [{"type": "text", "text": format!("{}: {}", err.code(), err.message())}],
        "structuredContent": {"error": {"code": err.code(), "message": err.message()}},
        "isError": true,
    })
}

/// Schema helpers, so each tool's schema reads as a short table.
pub(crate) mod schema {
    use serde_json::{Map, Value, json};

    pub(crate) fn object(props: &[(&str, Value)], required: &[&str]) -> Value {
        let mut properties = Map::new();
        for (name, schema) in props {
            properties.insert(name.to_string(), schema.clone());
        }
        let mut schema =
            json!({"type": "object", "properties": properties, "additionalProperties": false});
        if !required.is_empty() {
            schema["required"] = json!(required);
        }
        schema
    }

    /// A result object with the types of its main keys. Keys are not marked required: a result
    /// may leave out what does not apply (an exit code while running), and `tools/list` is paid
    /// for in every agent's context.
    pub(crate) fn result(props: &[(&str, Value)]) -> Value {
        let mut properties = Map::new();
        for (name, schema) in props {
            properties.insert(name.to_string(), schema.clone());
        }
        json!({"type": "object", "properties": properties})
    }

    pub(crate) fn string(description: &str) -> Value {
        json!({"type": "string", "description": description})
    }

    pub(crate) fn integer(description: &str) -> Value {
        json!({"type": "integer", "description": description})
    }

    /// An integer argument with the value a handler uses when it is absent. The handler reads the
    /// same constant, so what clients and models read in the schema is what happens.
    pub(crate) fn integer_or(description: &str, default: u64) -> Value {
        json!({"type": "integer", "description": description, "default": default})
    }

    /// A boolean argument with its default (see `integer_or`).
    pub(crate) fn boolean_or(description: &str, default: bool) -> Value {
        json!({"type": "boolean", "description": description, "default": default})
    }

    /// One of `choices`, `default` when absent (see `integer_or`).
    pub(crate) fn choice(description: &str, choices: &[&str], default: &str) -> Value {
        debug_assert!(choices.contains(&default));
        json!({"type": "string", "enum": choices, "description": description, "default": default})
    }

    pub(crate) fn env() -> Value {
        json!({"type": "object", "additionalProperties": {"type": "string"},
               "description": "Extra environment variables"})
    }

    pub(crate) fn typed(kind: &str) -> Value {
        json!({"type": kind})
    }

    /// A value that may be null, such as an exit code while the process runs.
    pub(crate) fn nullable(kind: &str) -> Value {
        json!({"type": [kind, "null"]})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo(_: &Ctx<'_, ()>, args: &Args<'_>) -> crate::error::Result<Value> {
        Ok(json!({"said": args.str("word")?}))
    }

    const ECHO: Tool<()> = Tool {
        name: "echo",
        title: "Echo",
        description: "Says the word back.",
        hints: READS,
        input: || schema::object(&[("word", schema::string("What to say"))], &[]),
        output: || schema::result(&[("said", schema::typed("string"))]),
        call: echo,
    };

    fn call(arguments: Value) -> Value {
        let (cancel, progress) = (Cancel::default(), Progress::none());
        let ctx = Ctx { runtime: &(), cwd: Path::new("/"), cancel: &cancel, progress: &progress };
        Registered::new(&ECHO).call(&ctx, arguments.as_object().unwrap())
    }

    #[test]
    fn a_result_carries_its_text_copy() {
        let result = call(json!({"word": "hi"}));
        assert_eq!(result["structuredContent"], json!({"said": "hi"}));
        assert_eq!(result["content"][0]["text"], r#"{"said":"hi"}"#);
        assert!(result.get("isError").is_none());
    }

    #[test]
    fn directories_are_taken_from_the_callers() {
        let (cancel, progress) = (Cancel::default(), Progress::none());
        let ctx =
            Ctx { runtime: &(), cwd: Path::new("/w/repo"), cancel: &cancel, progress: &progress };
        assert_eq!(ctx.dir(None), Path::new("/w/repo"));
        assert_eq!(ctx.dir(Some("sub/x".into())), Path::new("/w/repo/sub/x"));
        assert_eq!(ctx.dir(Some("/abs".into())), Path::new("/abs"));
    }

    #[test]
    fn unknown_arguments_are_named_with_the_known_ones() {
        let result = call(json!({"wrod": "hi"}));
        assert_eq!(result["isError"], true);
        let message = result["structuredContent"]["error"]["message"].as_str().unwrap();
        assert_eq!(message, "unknown argument 'wrod' for echo; it takes: word");
    }
}
