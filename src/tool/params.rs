//! Each tool's parameters, declared once: `params!` makes from one table both the struct its
//! handler gets and the `inputSchema` clients read, so a type, default, range or description
//! cannot say one thing in `tools/list` and do another in the handler.
//!
//! A row is `name: Type = Spec`: the Rust type says how the argument reads (`Param`), the `Spec`
//! its description, range and default. Reading goes through `Args`, whose errors name the
//! argument and what it must be (`argument 'lines' must be between 1 and 1000000, got 0`), and
//! an argument the table does not list is refused by name before the handler runs
//! (`Registered::call`, and `Vec<T>` / nested tables for the objects inside). Every wait a call
//! takes is one `Timeout`: milliseconds, 0 (look once) to a day.

use super::args::Args;
use super::choice::Choice;
use crate::error::{Error, Result};
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::time::Duration;

/// A tool's arguments as one type, declared with `params!`.
pub(crate) trait Params: Sized {
    /// The argument names, in table order.
    const NAMES: &'static [&'static str];

    /// The JSON Schema of the arguments: an object schema that refuses other keys.
    fn schema() -> Value;

    /// The arguments, each checked; none of them read by name outside the table.
    fn read(args: &Args<'_>) -> Result<Self>;
}

/// What a table row says of its argument beside its type.
#[derive(Clone, Copy)]
pub(crate) struct Spec {
    pub(crate) description: &'static str,
    pub(crate) min: u64,
    /// `u64::MAX`: no maximum (an offset), and none in the schema.
    pub(crate) max: u64,
    pub(crate) default: Fallback,
    /// For a choice: it has no default.
    pub(crate) required: bool,
    /// The schema's shape when the type's own is not what clients should read (`responses`).
    pub(crate) shape: Option<fn() -> Value>,
}

/// The value an absent argument takes, declared as the schema's `default`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Fallback {
    None,
    Int(u64),
    Bool(bool),
}

impl Spec {
    /// An argument described so (an empty description adds none), of any value of its type.
    pub(crate) const fn new(description: &'static str) -> Spec {
        Spec {
            description,
            min: 0,
            max: u64::MAX,
            default: Fallback::None,
            required: false,
            shape: None,
        }
    }

    /// Integers, or an array's length, from `min` to `max`.
    pub(crate) const fn range(self, min: u64, max: u64) -> Spec {
        Spec { min, max, ..self }
    }

    /// An integer that is `default` when absent.
    pub(crate) const fn or(self, default: u64) -> Spec {
        Spec { default: Fallback::Int(default), ..self }
    }

    /// A boolean that is `default` when absent.
    pub(crate) const fn or_bool(self, default: bool) -> Spec {
        Spec { default: Fallback::Bool(default), ..self }
    }

    /// A choice without a default.
    pub(crate) const fn required(self) -> Spec {
        Spec { required: true, ..self }
    }

    /// Shown to clients as `shape()` (with the description) rather than as its type's schema.
    pub(crate) const fn shaped(self, shape: fn() -> Value) -> Spec {
        Spec { shape: Some(shape), ..self }
    }

    /// `base` with this row's description, range and default: the schema of one argument.
    pub(crate) fn describe(&self, base: Value) -> Value {
        let mut schema = match self.shape {
            Some(shape) => shape(),
            None => base,
        };
        if !self.description.is_empty() {
            schema["description"] = json!(self.description);
        }
        match self.default {
            Fallback::Int(n) => schema["default"] = json!(n),
            Fallback::Bool(b) => schema["default"] = json!(b),
            Fallback::None => {}
        }
        schema
    }

    /// `describe`, with the range as an integer's `minimum` and `maximum`.
    fn describe_integer(&self) -> Value {
        let mut schema = json!({"type": "integer", "minimum": self.min});
        if self.max != u64::MAX {
            schema["maximum"] = json!(self.max);
        }
        self.describe(schema)
    }

    /// The integer argument `key`: in range, else its default, else required.
    fn integer(&self, args: &Args<'_>, key: &str) -> Result<Option<u64>> {
        let n = args.u64(key, self.min, self.max)?;
        Ok(n.or(match self.default {
            Fallback::Int(n) => Some(n),
            _ => None,
        }))
    }
}

/// One argument's type: how it is read and what its schema says.
pub(crate) trait Param: Sized {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<Self>;
    fn schema(spec: &Spec) -> Value;
    /// Whether the schema lists it as required.
    fn required(_spec: &Spec) -> bool {
        false
    }
}

fn missing(args: &Args<'_>, key: &str) -> Error {
    Error::invalid(format!("argument '{}' is required", args.at(key)))
}

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

/// A list of strings, such as pane ids; empty when absent.
impl Param for Vec<String> {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<Self> {
        let items = args.strings(key)?;
        check_length(args, key, spec, items.len())?;
        Ok(items)
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(array_schema(spec, json!({"type": "string"})))
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

/// A list of objects, each a table of its own (a run's commands), within its row's length.
impl<T: Params> Param for Vec<T> {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<Self> {
        let Some(items) = args.array(key)? else { return Err(missing(args, key)) };
        check_length(args, key, spec, items.len())?;
        let at = args.at(key);
        let read = |(i, item): (usize, &Value)| nested::<T>(&format!("{at}[{i}]"), item);
        items.iter().enumerate().map(read).collect()
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(array_schema(spec, T::schema()))
    }
    fn required(_: &Spec) -> bool {
        true
    }
}

/// An object that is a table of its own (a pipeline's `limits`).
impl<T: Params> Param for Option<T> {
    fn read(args: &Args<'_>, key: &str, _: &Spec) -> Result<Self> {
        args.value(key).map(|value| nested::<T>(&args.at(key), value)).transpose()
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(T::schema())
    }
}

/// `value`, named `at` in errors, read as table `T`: an object with none but `T`'s keys.
pub(crate) fn nested<T: Params>(at: &str, value: &Value) -> Result<T> {
    let inner = Args::object(at, value)?;
    refuse_unknown(&inner, T::NAMES, at)?;
    T::read(&inner)
}

/// The error naming the arguments `args` has that `known` does not list, and the ones it takes.
pub(crate) fn refuse_unknown(args: &Args<'_>, known: &[&str], what: &str) -> Result<()> {
    let unknown = args.unknown(known);
    if unknown.is_empty() {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "unknown argument {} for {what}; it takes: {}",
        unknown.iter().map(|k| format!("'{k}'")).collect::<Vec<_>>().join(", "),
        if known.is_empty() { "no arguments".to_string() } else { known.join(", ") }
    )))
}

fn check_length(args: &Args<'_>, key: &str, spec: &Spec, len: usize) -> Result<()> {
    let len = len as u64;
    if len < spec.min || len > spec.max {
        return Err(Error::invalid(format!(
            "argument '{}' has {len} items; give {} to {}",
            args.at(key),
            spec.min,
            spec.max
        )));
    }
    Ok(())
}

/// An array of `items`, with its row's range as the array's length.
fn array_schema(spec: &Spec, items: Value) -> Value {
    let mut schema = json!({"type": "array", "items": items});
    if spec.min > 0 {
        schema["minItems"] = json!(spec.min);
    }
    if spec.max != u64::MAX {
        schema["maxItems"] = json!(spec.max);
    }
    schema
}

/// An object schema of `properties` that refuses other keys: what `params!` declares.
pub(crate) fn object(properties: Vec<(&str, Value)>, required: Vec<&str>) -> Value {
    let properties: Map<String, Value> =
        properties.into_iter().map(|(name, schema)| (name.to_string(), schema)).collect();
    let mut schema =
        json!({"type": "object", "properties": properties, "additionalProperties": false});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// Declares a tool's parameters as one table: the struct, its `Params` (schema and reading).
///
/// ```ignore
/// params! {
///     /// `fugue_resize_pane`'s arguments.
///     pub(crate) struct Resize {
///         pane_id: String = Spec::new("Pane id or name"),
///         rows: u16 = Spec::new("Rows").range(2, 1000),
///     }
/// }
/// ```
macro_rules! params {
    ($(#[$meta:meta])* $vis:vis struct $name:ident {
        $($(#[$fmeta:meta])* $field:ident : $ty:ty = $spec:expr),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug)]
        $vis struct $name {
            $($(#[$fmeta])* pub(crate) $field: $ty,)*
        }

        impl $crate::tool::params::Params for $name {
            const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];

            fn schema() -> serde_json::Value {
                use $crate::tool::params::Param;
                let mut properties = Vec::new();
                let mut required = Vec::new();
                $(
                    let spec: $crate::tool::params::Spec = $spec;
                    properties.push((stringify!($field), <$ty as Param>::schema(&spec)));
                    if <$ty as Param>::required(&spec) {
                        required.push(stringify!($field));
                    }
                )*
                $crate::tool::params::object(properties, required)
            }

            fn read(
                #[allow(unused_variables, reason = "a table without rows reads nothing")]
                args: &$crate::tool::args::Args<'_>,
            ) -> $crate::error::Result<$name> {
                use $crate::tool::params::Param;
                Ok($name {
                    $($field: <$ty as Param>::read(args, stringify!($field), &$spec)?,)*
                })
            }
        }
    };
}
pub(crate) use params;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::choice::choice_enum;

    choice_enum! {
        enum Side { Left = "left", Right = "right" }
    }

    params! {
        struct Item {
            command: String = Spec::new(""),
            name: Option<Name> = Spec::new("Default item-N"),
        }
    }

    params! {
        struct Sample {
            pane_id: String = Spec::new("Pane id or name"),
            lines: usize = Spec::new("Lines").range(1, 1000).or(100),
            rows: u16 = Spec::new("Rows").range(2, 1000),
            since: Option<u64> = Spec::new("Offset"),
            timeout_ms: Timeout = Spec::new("Give up after this long").or(60_000),
            wait_ms: Option<Timeout> = Spec::new(""),
            submit: bool = Spec::new("Press Enter").or_bool(true),
            side: Side = Spec::new("Which side"),
            items: Vec<Item> = Spec::new("").range(1, 3),
            env: Vec<(String, String)> = Spec::new(""),
        }
    }

    fn read(value: Value) -> Result<Sample> {
        let map = value.as_object().unwrap().clone();
        Sample::read(&Args::new(&map))
    }

    fn least() -> Value {
        json!({"pane_id": "p", "rows": 24, "items": [{"command": "true"}]})
    }

    fn with(key: &str, value: Value) -> Result<Sample> {
        let mut args = least();
        args[key] = value;
        read(args)
    }

    #[test]
    fn the_schema_says_what_the_table_does() {
        let schema = Sample::schema();
        let props = &schema["properties"];
        assert_eq!(schema["required"], json!(["pane_id", "rows", "items"]));
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(
            props["lines"],
            json!({"type": "integer", "minimum": 1, "maximum": 1000, "default": 100,
                   "description": "Lines"})
        );
        assert_eq!(
            props["since"],
            json!({"type": "integer", "minimum": 0, "description": "Offset"})
        );
        assert_eq!(props["timeout_ms"]["maximum"], Timeout::MAX_MS);
        assert_eq!(
            props["wait_ms"],
            json!({"type": "integer", "minimum": 0, "maximum": 86_400_000})
        );
        assert_eq!(props["submit"]["default"], true);
        assert_eq!(props["side"]["enum"], json!(["left", "right"]));
        assert_eq!(props["side"]["default"], "left");
        assert_eq!(props["items"]["minItems"], 1);
        assert_eq!(props["items"]["maxItems"], 3);
        assert_eq!(props["items"]["items"]["required"], json!(["command"]));
        assert_eq!(Sample::NAMES.len(), props.as_object().unwrap().len());
    }

    #[test]
    fn absent_arguments_take_the_defaults_the_schema_declares() {
        let sample = read(least()).unwrap();
        let props = &Sample::schema()["properties"];
        assert_eq!(json!(sample.lines), props["lines"]["default"]);
        assert_eq!(json!(sample.timeout_ms.0.as_millis() as u64), props["timeout_ms"]["default"]);
        assert_eq!(json!(sample.submit), props["submit"]["default"]);
        assert_eq!(json!(sample.side), props["side"]["default"]);
        assert_eq!((sample.since, sample.wait_ms), (None, None));
        assert_eq!(sample.items[0].command, "true");
        assert_eq!(sample.items[0].name, None);
    }

    #[test]
    fn a_value_past_a_range_is_refused_by_name() {
        let cases = [
            ("lines", json!(0), "argument 'lines' must be between 1 and 1000, got 0"),
            ("lines", json!(1001), "argument 'lines' must be between 1 and 1000, got 1001"),
            ("rows", json!(1), "argument 'rows' must be between 2 and 1000, got 1"),
            (
                "timeout_ms",
                json!(86_400_001),
                "argument 'timeout_ms' must be between 0 and 86400000, got 86400001",
            ),
            ("items", json!([]), "argument 'items' has 0 items; give 1 to 3"),
        ];
        for (key, value, message) in cases {
            assert_eq!(with(key, value).unwrap_err().message(), message);
        }
        assert_eq!(with("timeout_ms", json!(0)).unwrap().timeout_ms, Timeout(Duration::ZERO));
    }

    #[test]
    fn wrong_types_and_missing_arguments_are_named() {
        let message = |r: Result<Sample>| r.unwrap_err().message().to_string();
        assert_eq!(
            message(with("submit", json!("yes"))),
            "argument 'submit' must be true or false, got a string"
        );
        assert_eq!(message(with("side", json!("up"))), "side \"up\" is not one of left, right");
        let mut args = least();
        args.as_object_mut().unwrap().remove("rows");
        assert_eq!(message(read(args)), "argument 'rows' is required");
        assert_eq!(
            message(with("items", json!([{"command": 5}]))),
            "argument 'items[0].command' must be a string, got a number"
        );
        assert_eq!(
            message(with("items", json!([{"command": "x", "cwd": "/"}]))),
            "unknown argument 'cwd' for items[0]; it takes: command, name"
        );
        assert_eq!(
            message(with("env", json!({"1X": "y"}))),
            "env: \"1X\" is not a valid variable name (letters, digits and _, not starting with \
             a digit)"
        );
    }
}
