//! The tool framework: what a tool is, what its handler is given, and how its answer is shaped.
//!
//! A `Tool` is one value — name, description, schemas, hints and handler — defined next to its
//! handler in the module that offers it. Handlers get a `Ctx` (the runtime they act on, and their
//! call's cancellation and progress) and typed `Args`, and return an `Answer`: their typed answer,
//! serialized once, and whether a program it names waits for input (`asks`), so that no caller
//! reads the JSON back. `Registered::call` checks argument names against the schema and runs the
//! handler. This module is a leaf: it knows nothing of panes, pipelines or the protocol (`mcp`
//! shapes the answer into a result), and is generic over the runtime `R` its handlers act on.

pub(crate) mod args;
pub(crate) mod call;
pub(crate) mod choice;
pub(crate) mod order;
pub(crate) mod params;
pub(crate) mod task;

use crate::cancel::Cancel;
use crate::error::Error;
use args::Args;
use call::Progress;
use serde::Serialize;
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

/// A tool's handler: checked arguments in, an answer or an error out.
pub(crate) type Handler<R> = fn(&Ctx<'_, R>, &Args<'_>) -> crate::error::Result<Answer>;

/// What a handler answers: its typed answer as the object the client reads, and, when a program
/// it names waits for someone to type, what it asks.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) value: Value,
    pub(crate) asks: Option<Asking>,
}

/// A program that waits for input, in a pane an answer can be typed into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Asking {
    pub(crate) pane_id: String,
    /// The line it asks, or what its screen shows; empty when it shows nothing of its own.
    pub(crate) question: String,
    /// The program, when known.
    pub(crate) program: Option<String>,
}

impl Asking {
    /// What to put to the client: the question, or for one with no words of its own (a
    /// full-screen program) the program's name.
    pub(crate) fn message(&self) -> String {
        match &self.program {
            Some(program) if self.question.is_empty() => format!("{program} waits for input"),
            _ if self.question.is_empty() => {
                format!("The program in pane {} waits for input", self.pane_id)
            }
            _ => self.question.clone(),
        }
    }
}

impl Answer {
    /// The answer `typed` as its object; nothing asks.
    pub(crate) fn of(typed: &impl Serialize) -> crate::error::Result<Answer> {
        let value = serde_json::to_value(typed)
            .map_err(|e| Error::internal(format!("the answer cannot be serialized: {e}")))?;
        Ok(Answer { value, asks: None })
    }

    /// The same answer, saying what a program asks.
    pub(crate) fn asking(mut self, asks: Option<Asking>) -> Answer {
        self.asks = asks;
        self
    }
}

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
    /// Its calls can last long enough to be worth a task (MCP Tasks); the others always answer
    /// at once.
    pub(crate) durable: bool,
    /// Its answer can name a program that still waits for input in a pane an answer can be typed
    /// into (the run tools stop a program that asks, so theirs cannot).
    pub(crate) asks: bool,
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

    /// Runs the tool. Argument names are checked against the schema first, so a misspelt option
    /// is an error instead of being silently ignored.
    pub(crate) fn call(
        &self,
        ctx: &Ctx<'_, R>,
        arguments: &Map<String, Value>,
    ) -> crate::error::Result<Answer> {
        let args = Args::new(arguments);
        let known: Vec<&str> = self.known.iter().map(String::as_str).collect();
        params::refuse_unknown(&args, &known, Some(self.tool.name))?;
        let mut answer = (self.tool.call)(ctx, &args)?;
        if !self.tool.asks {
            answer.asks = None;
        }
        Ok(answer)
    }
}

/// Schema helpers for the answers' schemas (the arguments' come from `params!` tables).
pub(crate) mod schema {
    use serde_json::{Map, Value, json};

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

    #[derive(Serialize)]
    struct Said<'a> {
        said: Option<&'a str>,
    }

    params::params! {
        struct EchoParams {
            word: Option<String> = params::Spec::new("What to say"),
        }
    }

    fn echo(_: &Ctx<'_, ()>, args: EchoParams) -> crate::error::Result<Answer> {
        Answer::of(&Said { said: args.word.as_deref() })
    }

    const ECHO: Tool<()> = Tool {
        name: "echo",
        title: "Echo",
        description: "Says the word back.",
        hints: READS,
        input: <EchoParams as params::Params>::schema,
        output: || schema::result(&[("said", schema::typed("string"))]),
        durable: false,
        asks: false,
        call: |ctx, args| echo(ctx, params::Params::read(args)?),
    };

    fn call(arguments: Value) -> crate::error::Result<Answer> {
        let (cancel, progress) = (Cancel::default(), Progress::none());
        let ctx = Ctx { runtime: &(), cwd: Path::new("/"), cancel: &cancel, progress: &progress };
        Registered::new(&ECHO).call(&ctx, arguments.as_object().unwrap())
    }

    #[test]
    fn an_answer_is_its_typed_value() {
        let answer = call(json!({"word": "hi"})).unwrap();
        assert_eq!(answer.value, json!({"said": "hi"}));
        assert_eq!(answer.asks, None);
    }

    #[test]
    fn a_question_without_words_is_named_by_its_program() {
        let asks = |question: &str, program: Option<&str>| Asking {
            pane_id: "p".into(),
            question: question.into(),
            program: program.map(str::to_string),
        };
        assert_eq!(asks("Name?", Some("vim")).message(), "Name?");
        assert_eq!(asks("", Some("vim")).message(), "vim waits for input");
        assert_eq!(asks("", None).message(), "The program in pane p waits for input");
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
        let err = call(json!({"wrod": "hi"})).unwrap_err();
        assert_eq!(err.message(), "unknown argument 'wrod' for echo; it takes: word");
    }
}
