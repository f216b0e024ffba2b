//! The runtime: everything one fugue server owns and acts on, in one value.
//!
//! A `Runtime` owns the registry of panes (`mux`). Tool handlers reach it through their `Ctx`;
//! the protocol connections share it by `Arc`.

use crate::mux::Mux;
use std::sync::Arc;

/// The context a tool handler of fugue gets.
pub(crate) type Ctx<'a> = crate::tool::Ctx<'a, Runtime>;
/// A tool of fugue.
pub(crate) type Tool = crate::tool::Tool<Runtime>;

pub(crate) struct Runtime {
    pub(crate) mux: Arc<Mux>,
}
