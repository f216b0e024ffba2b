//! The rows and tables the pane tools share: the id arguments' descriptions, `env`, and the
//! tables of a tool that takes nothing and of one that takes a pane.

use crate::tool::params::{Spec, params};

/// The descriptions of the id arguments, said once.
pub(crate) const PANE_ID: &str = "Pane id or name";
pub(crate) const SESSION_ID: &str = "Session id or name";

/// `env`: an object of strings says what it is, and tools/list is paid for in every context.
pub(crate) const ENV: Spec = Spec::new("");

params! {
    /// The arguments of a tool that takes none.
    pub(super) struct NoParams {}
}

params! {
    /// One pane's arguments (`fugue_get_status`).
    pub(super) struct PaneParams {
        pane_id: String = Spec::new(PANE_ID),
    }
}
