//! What a shared server costs: the same calls through a front (`fugue serve --shared NAME`) and
//! in-process, in one run, interleaved so that the machine's noise falls on both alike.
//!
//! The server lives in a private runtime directory made for the run and is ended with
//! `fugue kill-server` afterwards, so the user's own servers are never touched.

use crate::client::{Fugue, R};
use crate::clock::{median, ms, show};
use crate::figures::{Bench, emitter, wake_samples};
use crate::report::Row;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

pub const LIST_FIG: &str = "`fugue_list_sessions` through a shared-server front";
pub const WAKE_FIG: &str = "`fugue_expect` wake-up through a shared-server front";
const TARGET: &str = "median ≤ +0.3 ms over in-process";

/// A private runtime directory and the server NAME in it; ends the server when dropped.
struct World {
    dir: PathBuf,
    bin: PathBuf,
}

impl World {
    fn new(bin: &std::path::Path) -> R<World> {
        let dir = std::env::temp_dir().join(format!("fugue-bench-shared-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| e.to_string())?;
        Ok(World { dir, bin: bin.to_path_buf() })
    }

    fn env(&self) -> [(&'static str, &str); 2] {
        let dir = self.dir.to_str().unwrap_or("/nonexistent");
        [("XDG_RUNTIME_DIR", dir), ("FUGUE_STATE_DIR", dir)]
    }

    /// A front for server `bench` (plain `fugue` with `FUGUE_SERVER`, as a host would set it).
    fn front(&self) -> R<Fugue> {
        let [runtime, state] = self.env();
        Fugue::start_with(&self.bin, &[runtime, state, ("FUGUE_SERVER", "bench")])
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = std::process::Command::new(&self.bin)
            .args(["kill-server", "bench"])
            .envs(self.env())
            .stderr(std::process::Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn shared(b: &Bench) -> R<Vec<Row>> {
    let world = World::new(&b.fugue)?;
    let mut local = Fugue::start(&b.fugue)?;
    let mut front = world.front()?;
    let (local_pane, local_offset) = emitter(b, &mut local, "wake")?;
    let (front_pane, front_offset) = emitter(b, &mut front, "wake")?;
    let (mut local_list, mut front_list) = (Vec::new(), Vec::new());
    for _ in 0..b.reps(400) {
        local_list.push(local.call_timed("fugue_list_sessions", json!({}))?.1);
        front_list.push(front.call_timed("fugue_list_sessions", json!({}))?.1);
    }
    let (mut local_wake, mut front_wake) = (Vec::new(), Vec::new());
    let (mut local_at, mut front_at) = (local_offset, front_offset);
    for _ in 0..b.reps(10) {
        local_wake.extend(wake_samples(&mut local, &local_pane, local_at, 10)?);
        front_wake.extend(wake_samples(&mut front, &front_pane, front_at, 10)?);
        local_at = offset_now(&mut local, &local_pane)?;
        front_at = offset_now(&mut front, &front_pane)?;
    }
    local.close()?;
    front.close()?;
    Ok(vec![
        compare(LIST_FIG, &local_list, &front_list),
        compare(WAKE_FIG, &local_wake, &front_wake),
    ])
}

/// The pane's output offset now, so the next round of wake-ups looks only past it.
fn offset_now(fugue: &mut Fugue, pane: &serde_json::Value) -> R<u64> {
    let status = fugue.call("fugue_get_status", json!({"pane_id": pane}))?;
    status["offset"].as_u64().ok_or_else(|| format!("no offset in {status}"))
}

fn compare(figure: &str, local: &[Duration], front: &[Duration]) -> Row {
    let (base, ours) = (median(local), median(front));
    let extra = ms(ours) - ms(base);
    Row {
        baseline: format!("in-process median {}", show(base)),
        fugue: format!("median {} (n={})", show(ours), front.len()),
        ratio: format!("{:.2}× ({extra:+.3} ms)", ms(ours) / ms(base).max(1e-9)),
        ..Row::new(figure, TARGET)
    }
    .judge(extra <= 0.3)
}
