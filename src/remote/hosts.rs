//! The hosts this fugue has reached: per host, its master connection and the channel to its
//! fugue, made on first use and made again when they have dropped.
//!
//! Connecting to one host holds that host's lock only, so a call to another host, or a fan-out
//! over many, connects to each in parallel. The host's shared server is named after the binary
//! (`ssh-` and its hash), so a fugue of another build there, and its panes, are left alone.

use super::link::Link;
use super::ssh::Master;
use super::upload;
use crate::error::Result;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One host's connection, while it lasts. The link is dropped before the master.
struct Tunnel {
    link: Arc<Link>,
    master: Master,
    binary: upload::Binary,
}

/// A host fugue reaches, with its tunnel while one is open.
#[derive(Default)]
struct Remote {
    connection: Mutex<Option<Tunnel>>,
}

fn hosts() -> &'static Mutex<BTreeMap<String, Arc<Remote>>> {
    // Not yet the runtime's: `remote` lies above it; a process has one runtime, so one set.
    static HOSTS: Mutex<BTreeMap<String, Arc<Remote>>> = Mutex::new(BTreeMap::new());
    &HOSTS
}

/// The hosts reached so far, in name order.
pub(crate) fn known() -> Vec<String> {
    hosts().lock().keys().cloned().collect()
}

/// The channel to `host`'s fugue: the open one, or a new one (connecting, uploading and starting
/// fugue there as needed).
pub(crate) fn link(host: &str) -> Result<Arc<Link>> {
    let entry = hosts().lock().entry(host.to_string()).or_default().clone();
    let mut connection = entry.connection.lock();
    if let Some(open) = connection.as_mut()
        && open.link.alive()
        && open.master.alive()
    {
        return Ok(open.link.clone());
    }
    *connection = None;
    let master = Master::connect(host, control_path()?)?;
    let binary = upload::ensure(&master)?;
    let link = Arc::new(Link::open(&master, &binary, &server_name(&binary))?);
    *connection = Some(Tunnel { link: link.clone(), master, binary });
    Ok(link)
}

/// The hosts whose connection is open now, each with its master's socket and the path of fugue's
/// binary there, for `fugue ls` to list their sessions over the same connection. A host that is
/// connecting at this moment is left out rather than waited for.
pub(crate) fn open() -> Vec<Value> {
    let entries: Vec<(String, Arc<Remote>)> =
        hosts().lock().iter().map(|(h, e)| (h.clone(), e.clone())).collect();
    let mut open = Vec::new();
    for (host, entry) in entries {
        let Some(mut connection) = entry.connection.try_lock() else { continue };
        let Some(c) = connection.as_mut() else { continue };
        if c.link.alive() && c.master.alive() {
            let socket = c.master.control.to_string_lossy().to_string();
            open.push(json!({"host": host, "socket": socket, "binary": c.binary.remote_path()}));
        }
    }
    open
}

/// The name of the shared server fugue runs on a host: one per build, so another build's is left
/// alone.
pub(crate) fn server_name(binary: &upload::Binary) -> String {
    format!("ssh-{}", &binary.name[binary.name.len() - 12..])
}

/// A new master socket path in fugue's private directory: short, since a socket's path is at most
/// 107 bytes.
pub(crate) fn control_path() -> Result<PathBuf> {
    // Process-wide: the socket names must differ across the process, whose pid they carry.
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = crate::control::dir::create()?.join("ssh");
    crate::files::private_dir(&dir, crate::files::Existing::Keep)?;
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    Ok(dir.join(format!("{}-{n}", std::process::id())))
}
