//! The tool registry: every tool fugue offers, in the order `tools/list` gives them.
//!
//! Each module of handlers defines its `TOOL` or `TOOLS` next to them; this file lists those and
//! nothing else, so no module below the handlers (a folder's `mod.rs`) has to name its tools. `tools/list`, `tools/call`, `fugue call` and `fugue tools` all
//! read this one list, so what is advertised and what is dispatched cannot drift apart.

use crate::runtime::Runtime;
use crate::tool::Registered;
use serde_json::Value;
use std::sync::OnceLock;

/// Every tool, ready to call, in the order `tools/list` gives them.
pub(crate) fn all() -> &'static [Registered<Runtime>] {
    static ALL: OnceLock<Vec<Registered<Runtime>>> = OnceLock::new();
    ALL.get_or_init(|| {
        [
            crate::tools::panes::TOOLS,
            &[crate::tools::exec::TOOL],
            &[
                crate::tools::expect::TOOL,
                crate::tools::wait::TOOL,
                crate::tools::parallel::TOOL,
                crate::tools::pipeline::TOOL,
            ],
            crate::tools::agent::TOOLS,
        ]
        .into_iter()
        .flatten()
        .map(Registered::new)
        .collect()
    })
}

pub(crate) fn find(name: &str) -> Option<&'static Registered<Runtime>> {
    all().iter().find(|r| r.tool.name == name)
}

/// The `tools/list` entries, built once: the list never varies within a process.
pub(crate) fn list() -> &'static Value {
    static LIST: OnceLock<Value> = OnceLock::new();
    LIST.get_or_init(|| {
        let describe = |r: &Registered<Runtime>| {
            let mut entry = r.tool.describe();
            if r.tool.durable {
                // 2025-11-25 clients see which calls may run as tasks.
                entry["execution"] = serde_json::json!({"taskSupport": "optional"});
            }
            entry
        };
        Value::Array(all().iter().map(describe).collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_valid() {
        let mut names: Vec<_> = all().iter().map(|r| r.tool.name).collect();
        assert!(
            names.iter().all(|n| n.len() <= 128
                && n.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)))
        );
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all().len());
    }

    #[test]
    fn schemas_have_object_roots() {
        for r in all() {
            assert_eq!((r.tool.input)()["type"], "object", "{}", r.tool.name);
            assert_eq!((r.tool.output)()["type"], "object", "{}", r.tool.name);
            assert!(!r.tool.description.is_empty());
        }
    }
}
