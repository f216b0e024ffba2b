//! The types an argument can be (`Param`): strings, names, paths, integers and sizes, one
//! `Timeout` for every wait, choices, environments, lists, and the objects handlers read on
//! (`responses` in the order written, a raw value where null means something). Each reads through
//! `Args`, whose errors name the argument, and says its schema from its row's `Spec`.

use super::spec::{Fallback, Param, Spec, array_schema, check_length, missing};
use crate::error::Result;
use crate::tool::args::Args;
use crate::tool::choice::Choice;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

/// A required, non-empty string.
impl Param for String {
    fn read(args: &Args<'_>, key: &str, _: &Spec) -> Result<String> {
        args.required_str(key).map(str::to_string)
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(json!({"type": "string"}))
    }
    fn required(_: &Spec) -> bool {
        true
    }
}

impl Param for Option<String> {
    fn read(args: &Args<'_>, key: &str, _: &Spec) -> Result<Self> {
        Ok(args.str(key)?.map(str::to_string))
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(json!({"type": "string"}))
    }
}

/// A path: non-empty, without NUL; relative ones are the caller's (`Ctx::dir`).
impl Param for Option<PathBuf> {
    fn read(args: &Args<'_>, key: &str, _: &Spec) -> Result<Self> {
        args.path(key)
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(json!({"type": "string"}))
    }
}

/// A required path.
impl Param for PathBuf {
    fn read(args: &Args<'_>, key: &str, _: &Spec) -> Result<Self> {
        args.path(key)?.ok_or_else(|| missing(args, key))
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(json!({"type": "string"}))
    }
    fn required(_: &Spec) -> bool {
        true
    }
}

/// A name a caller gives an object: 1 to 128 printable characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Name(pub(crate) String);

impl Param for Option<Name> {
    fn read(args: &Args<'_>, key: &str, _: &Spec) -> Result<Self> {
        Ok(args.name(key)?.map(Name))
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(json!({"type": "string"}))
    }
}

impl Param for bool {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<bool> {
        let default = matches!(spec.default, Fallback::Bool(true));
        Ok(args.bool(key)?.unwrap_or(default))
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(json!({"type": "boolean"}))
    }
}

/// An integer in its row's range; its default when absent, required when it has none.
impl Param for u64 {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<u64> {
        spec.integer(args, key)?.ok_or_else(|| missing(args, key))
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe_integer()
    }
    fn required(spec: &Spec) -> bool {
        spec.default == Fallback::None
    }
}

impl Param for Option<u64> {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<Self> {
        spec.integer(args, key)
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe_integer()
    }
}

/// A count, as `u64` reads it.
impl Param for usize {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<usize> {
        u64::read(args, key, spec).map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe_integer()
    }
    fn required(spec: &Spec) -> bool {
        spec.default == Fallback::None
    }
}

impl Param for Option<usize> {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<Self> {
        Ok(spec.integer(args, key)?.map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe_integer()
    }
}

/// A size such as rows and columns, as `u64` reads it within its row's range.
impl Param for u16 {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<u16> {
        u64::read(args, key, spec).map(|n| u16::try_from(n).unwrap_or(u16::MAX))
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe_integer()
    }
    fn required(spec: &Spec) -> bool {
        spec.default == Fallback::None
    }
}

/// How long a call waits, one rule for every tool: whole milliseconds from 0 (look once, do not
/// wait) to a day. A row gives only the description and the default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Timeout(pub(crate) Duration);

impl Timeout {
    /// The longest wait any call takes: one day.
    pub(crate) const MAX_MS: u64 = 86_400_000;

    fn ranged(spec: &Spec) -> Spec {
        spec.range(0, Timeout::MAX_MS)
    }
}

impl Param for Timeout {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<Timeout> {
        u64::read(args, key, &Timeout::ranged(spec)).map(|ms| Timeout(Duration::from_millis(ms)))
    }
    fn schema(spec: &Spec) -> Value {
        Timeout::ranged(spec).describe_integer()
    }
    fn required(spec: &Spec) -> bool {
        spec.default == Fallback::None
    }
}

impl Param for Option<Timeout> {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<Self> {
        let ms = Timeout::ranged(spec).integer(args, key)?;
        Ok(ms.map(|ms| Timeout(Duration::from_millis(ms))))
    }
    fn schema(spec: &Spec) -> Value {
        Timeout::ranged(spec).describe_integer()
    }
}

/// One of a choice's words: the first when absent, unless the row says `required`.
impl<T: Choice> Param for T {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<T> {
        if spec.required { T::required(args, key) } else { T::parse(args, key) }
    }
    fn schema(spec: &Spec) -> Value {
        if spec.required {
            spec.describe(json!({"enum": T::names()}))
        } else {
            T::schema(spec.description)
        }
    }
    fn required(spec: &Spec) -> bool {
        spec.required
    }
}

/// Environment variables: an object of strings with valid names, in the order given.
impl Param for Vec<(String, String)> {
    fn read(args: &Args<'_>, key: &str, _: &Spec) -> Result<Self> {
        args.env(key)
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(json!({"type": "object", "additionalProperties": {"type": "string"}}))
    }
}

/// A list of strings, such as pane ids; empty when absent, unless the row says `required`.
impl Param for Vec<String> {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<Self> {
        let items = args.strings(key)?;
        match args.has(key) {
            true => check_length(args, key, spec, items.len())?,
            false if spec.required => return Err(missing(args, key)),
            false => {}
        }
        Ok(items)
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(array_schema(spec, json!({"type": "string"})))
    }
    fn required(spec: &Spec) -> bool {
        spec.required
    }
}

/// A list of items checked by the handler (`keys`, whose items are names or objects).
impl Param for Option<Vec<Value>> {
    fn read(args: &Args<'_>, key: &str, _: &Spec) -> Result<Self> {
        Ok(args.array(key)?.cloned())
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(json!({"type": "array"}))
    }
}

/// An object argument's entries in the order the caller wrote them (`responses`), with the name
/// errors about them give.
#[derive(Clone, Debug)]
pub(crate) struct Ordered {
    pub(crate) at: String,
    pub(crate) entries: Vec<(String, Value)>,
}

impl Param for Option<Ordered> {
    fn read(args: &Args<'_>, key: &str, _: &Spec) -> Result<Self> {
        let Some(entries) = args.in_order(key)? else { return Ok(None) };
        let entries = entries.into_iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        Ok(Some(Ordered { at: args.at(key), entries }))
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(json!({"type": "object"}))
    }
}

/// An object argument given as it came (`null` kept apart from absent), for a value of several
/// JSON types that its handler reads (a cost that is a number or null).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Raw(pub(crate) Value);

impl Param for Option<Raw> {
    fn read(args: &Args<'_>, key: &str, _: &Spec) -> Result<Self> {
        Ok(args.raw(key).cloned().map(Raw))
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(json!({}))
    }
}
