//! Orchestration tools: one call instead of a polling loop.
//!
//! `expect` waits for a pattern in a pane's output, `parallel` fans commands out over panes, and
//! `pipeline` runs steps in one shell. All of them block on pane events and the call's cancel
//! channel with deadlines; none of them sleeps to poll.

pub(crate) mod expect;

use crate::mcp::tools::Tool;

/// The orchestration tools in `tools/list` order.
pub(crate) static TOOLS: [&Tool; 1] = [&expect::TOOL];
