//! The tool registry: every tool's name, description, schemas, hints and handler in one value.
//!
//! Each module that offers tools defines a `TOOLS` slice of `Tool`s next to their handlers; `all`
//! concatenates them in a fixed order. `tools/list` and `tools/call` both read this one list, so
//! what is advertised and what is dispatched cannot drift apart, and `call` turns a handler's
//! `Result` into the MCP result shape (structured content plus its compact text copy).

use crate::args::Args;
use crate::call::{Cancel, Progress};
use crate::error::Error;
use crate::mux::Mux;
use serde_json::{Map, Value, json};
use std::sync::OnceLock;

/// What a handler gets: the registry, and its call's cancellation and progress.
pub(crate) struct Ctx<'a> {
    pub(crate) mux: &'a Mux,
    pub(crate) cancel: &'a Cancel,
    pub(crate) progress: &'a Progress,
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

pub(crate) type Handler = fn(&Ctx<'_>, &Args<'_>) -> crate::error::Result<Value>;

pub(crate) struct Tool {
    pub(crate) name: &'static str,
    pub(crate) title: &'static str,
    pub(crate) description: &'static str,
    pub(crate) hints: Hints,
    /// The JSON Schema of the arguments (an object schema).
    pub(crate) input: fn() -> Value,
    /// The JSON Schema of a successful result (an object schema).
    pub(crate) output: fn() -> Value,
    pub(crate) call: Handler,
}

/// Every tool, in the order `tools/list` gives them.
pub(crate) fn all() -> &'static [&'static Tool] {
    static ALL: OnceLock<Vec<&'static Tool>> = OnceLock::new();
    ALL.get_or_init(|| {
        crate::pane::tools::TOOLS
            .iter()
            .chain(crate::orchestrate::TOOLS.iter().copied())
            .chain(crate::agent::TOOLS.iter())
            .collect()
    })
}

pub(crate) fn find(name: &str) -> Option<&'static Tool> {
    all().iter().copied().find(|t| t.name == name)
}

/// The `tools/list` entries, built once: the list never varies within a process.
pub(crate) fn list() -> &'static Value {
    static LIST: OnceLock<Value> = OnceLock::new();
    LIST.get_or_init(|| Value::Array(all().iter().map(|t| describe(t)).collect()))
}

fn describe(tool: &Tool) -> Value {
    json!({
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": (tool.input)(),
        "outputSchema": (tool.output)(),
        "annotations": {
            "readOnlyHint": tool.hints.read_only,
            "destructiveHint": tool.hints.destructive,
            "idempotentHint": tool.hints.idempotent,
            "openWorldHint": !tool.hints.read_only,
        },
    })
}

/// Runs a tool and shapes its MCP result. Argument names are checked against the schema first, so
/// a misspelt option is an error instead of being silently ignored.
pub(crate) fn call(tool: &Tool, ctx: &Ctx<'_>, arguments: &Map<String, Value>) -> Value {
    let args = Args::new(arguments);
    let schema = (tool.input)();
    let known: Vec<&str> = schema["properties"]
        .as_object()
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let unknown = args.unknown(&known);
    let outcome = if unknown.is_empty() {
        (tool.call)(ctx, &args)
    } else {
        Err(Error::invalid(format!(
            "unknown argument {} for {}; it takes: {}",
            unknown.iter().map(|k| format!("'{k}'")).collect::<Vec<_>>().join(", "),
            tool.name,
            if known.is_empty() { "no arguments".to_string() } else { known.join(", ") }
        )))
    };
    match outcome {
        Ok(value) => success(value),
        Err(err) => failure(&err),
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

    pub(crate) fn t(kind: &str) -> Value {
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

    #[test]
    fn names_are_unique_and_valid() {
        let mut names: Vec<_> = all().iter().map(|t| t.name).collect();
        assert!(
            names.iter().all(|n| n.len() <= 128
                && n.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)))
        );
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all().len());
    }

    #[test]
    fn schemas_have_object_roots() {
        for tool in all() {
            assert_eq!((tool.input)()["type"], "object", "{}", tool.name);
            assert_eq!((tool.output)()["type"], "object", "{}", tool.name);
            assert!(!tool.description.is_empty());
        }
    }
}
