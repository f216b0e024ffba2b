//! A table row's `Spec` (description, range, default) and the `Param` trait by which each
//! argument type reads itself and says its schema; the types are in `kinds`, the tables in
//! `params!`.

use crate::error::{Error, Result};
use crate::tool::args::Args;
use serde_json::{Value, json};

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

    /// A choice without a default, or a list that must be given.
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
    pub(crate) fn describe_integer(&self) -> Value {
        let mut schema = json!({"type": "integer", "minimum": self.min});
        if self.max != u64::MAX {
            schema["maximum"] = json!(self.max);
        }
        self.describe(schema)
    }

    /// The integer argument `key`: in range, else its default, else required.
    pub(super) fn integer(&self, args: &Args<'_>, key: &str) -> Result<Option<u64>> {
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

pub(super) fn missing(args: &Args<'_>, key: &str) -> Error {
    Error::invalid(format!("argument '{}' is required", args.at(key)))
}

pub(super) fn check_length(args: &Args<'_>, key: &str, spec: &Spec, len: usize) -> Result<()> {
    let len = len as u64;
    if (spec.min..=spec.max).contains(&len) {
        return Ok(());
    }
    let give = match spec.max {
        u64::MAX => format!("at least {}", spec.min),
        max => format!("{} to {max}", spec.min),
    };
    Err(Error::invalid(format!("argument '{}' has {len} items; give {give}", args.at(key))))
}

/// An array of `items`, with its row's range as the array's length.
pub(super) fn array_schema(spec: &Spec, items: Value) -> Value {
    let mut schema = json!({"type": "array", "items": items});
    if spec.min > 0 {
        schema["minItems"] = json!(spec.min);
    }
    if spec.max != u64::MAX {
        schema["maxItems"] = json!(spec.max);
    }
    schema
}
