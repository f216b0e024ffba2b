//! The control socket: how a person's terminal reaches a running fugue.
//!
//! `fugue serve` listens on a private Unix socket (`socket`, in the directory that `dir` makes safe)
//! beside its MCP stdio loop, and answers line-delimited JSON (`wire`) about what the registry holds
//! (`view`), pushing a `changed` event when a watched view goes out of date (`watch`). `fugue ls`
//! and `fugue attach` are its clients. It is never a network port.

pub(crate) mod dir;
pub(crate) mod socket;
pub(crate) mod view;
pub(crate) mod watch;
pub(crate) mod wire;

/// Stack size of the connection and watcher threads.
pub(crate) const THREAD_STACK: usize = 256 << 10;
