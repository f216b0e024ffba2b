//! Hostile terminals: panes that print binary garbage, invalid UTF-8, endless lines and escape
//! sequences, hundreds of megabytes, switch screens, get resized in a storm, fork a tree of
//! processes, or ignore every polite signal.
//!
//! Each test checks what matters to the agent on the other side: fugue keeps answering promptly,
//! its memory stays flat however much a pane prints, every view stays valid JSON within its byte
//! cap, and closing the pane ends every process it started.

use crate::procfs;
use crate::util::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The slowest acceptable answer to a ping while a pane misbehaves. Generous: the machine is
/// shared; a hung or starved server takes far longer.
const PROMPT: Duration = Duration::from_secs(5);

/// Sends a ping and returns how long the answer took.
fn ping(f: &mut Fugue) -> Duration {
    let started = Instant::now();
    let pong = f.request("ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
    started.elapsed()
}

/// Pings and lists sessions until the pane has exited; returns the slowest answer and the peak
/// RSS seen meanwhile, in KiB.
fn watch_until_exit(f: &mut Fugue, pane: &str) -> (Duration, u64) {
    let pid = f.pid();
    let deadline = Instant::now() + Duration::from_secs(120);
    let (mut slowest, mut peak) = (Duration::ZERO, procfs::rss_kb(pid));
    loop {
        slowest = slowest.max(ping(f));
        let started = Instant::now();
        f.call("fugue_list_sessions", json!({}));
        slowest = slowest.max(started.elapsed());
        peak = peak.max(procfs::rss_kb(pid));
        let status = f.call("fugue_get_status", json!({"pane_id": pane}));
        if status["status"] == "exited" {
            return (slowest, peak);
        }
        assert!(Instant::now() < deadline, "pane did not finish: {status}");
        // Block on the pane for a moment: returns at once if it exits.
        f.call_result(
            "fugue_expect",
            json!({"pane_id": pane, "pattern": "x\\A", "since": status["offset"], "timeout_ms": 100}),
        );
    }
}

/// Every view of the pane is valid, within its cap, and says so when it cut.
fn check_views(f: &mut Fugue, pane: &str) {
    for format in ["text", "raw", "screen"] {
        for max_bytes in [100, 65536] {
            let out = f.call(
                "fugue_get_output",
                json!({"pane_id": pane, "format": format, "lines": 50, "max_bytes": max_bytes}),
            );
            let text = out["output"].as_str().unwrap();
            assert!(text.len() <= max_bytes, "{format} gave {} > {max_bytes} bytes", text.len());
        }
        let since = f.call(
            "fugue_get_output",
            json!({"pane_id": pane, "format": format, "since": 0, "max_bytes": 1000}),
        );
        assert!(since["output"].as_str().unwrap().len() <= 1000, "{format} since: {since}");
    }
}

#[test]
fn binary_garbage_keeps_every_view_valid() {
    let mut f = Fugue::start();
    let pane = f.pane("head -c 5000000 /dev/urandom; printf '\\a\\033\\\\\\r\\nEND\\r\\n'");
    let (slowest, _) = watch_until_exit(&mut f, &pane);
    assert!(slowest < PROMPT, "an answer took {slowest:?}");
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["exit_code"], 0, "{status}");
    assert!(status["offset"].as_u64().unwrap() >= 5_000_000, "{status}");
    check_views(&mut f, &pane);
    let tail = f.call("fugue_get_output", json!({"pane_id": pane, "lines": 1}));
    assert_eq!(tail["output"], "END", "{tail}");
}

#[test]
fn invalid_utf8_becomes_replacement_characters() {
    let mut f = Fugue::start();
    let pane = f.pane(
        "printf 'a\\377\\376b\\303(c\\342\\202\\n'; printf '\\360\\237'; printf '\\216\\211!\\n'",
    );
    f.wait_exit(&pane);
    let text = f.text(&pane);
    assert_eq!(text, "a\u{FFFD}\u{FFFD}b\u{FFFD}(c\u{FFFD}\n🎉!", "{text:?}");
    let raw = f.call("fugue_get_output", json!({"pane_id": pane, "format": "raw"}));
    assert!(raw["output"].as_str().unwrap().contains('\u{FFFD}'));
    check_views(&mut f, &pane);
}

#[test]
fn a_ten_megabyte_line_is_capped_and_still_searchable() {
    let mut f = Fugue::start();
    let pane = f.pane("head -c 10000000 /dev/zero | tr '\\0' x; printf NEEDLE; exec sleep 1000");
    let found = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "x{100}NEEDLE", "timeout_ms": 60000}),
    );
    assert_eq!(found["status"], "matched", "{found}");
    let pid = f.pid();
    assert!(procfs::rss_kb(pid) < 64 * 1024, "RSS {} KiB", procfs::rss_kb(pid));
    check_views(&mut f, &pane);
    let out = f.call("fugue_get_output", json!({"pane_id": pane, "lines": 1}));
    let text = out["output"].as_str().unwrap();
    assert_eq!(out["truncated"], true);
    assert!(text.len() <= 65536 && text.ends_with("xNEEDLE"), "{}", text.len());
    // Paging forward from a dropped offset says so and resumes at the oldest byte kept.
    let page = f.call("fugue_get_output", json!({"pane_id": pane, "since": 0, "format": "raw"}));
    assert_eq!(page["dropped"], true, "{}", page["offset"]);
    assert_eq!(page["truncated"], true);
    f.call("fugue_close_pane", json!({"pane_id": pane}));
}

#[test]
fn endless_escape_sequences_cost_no_memory() {
    let mut f = Fugue::start();
    let pid = f.pid();
    // Colours, clears, title strings, screen switches, cursor moves far right, and one string
    // (an OSC title) that never ends.
    let storm = "i=0; while [ $i -lt 3000 ]; do \
                 printf '\\033[31;1m\\033[2J\\033[H\\033]0;title\\007\\033[?1049h\\033[9999Cx\\033[?1049l\\033[0m\\n'; \
                 i=$((i+1)); done; \
                 printf '\\033]0;'; head -c 30000000 /dev/zero | tr '\\0' a";
    let pane = f.pane(storm);
    let before = procfs::rss_kb(pid);
    let mut peak = before;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        // Looking at the screen feeds the emulator everything printed since the last look.
        for format in ["screen", "text"] {
            let out = f.call(
                "fugue_get_output",
                json!({"pane_id": pane, "format": format, "max_bytes": 4096}),
            );
            assert!(out["output"].as_str().unwrap().len() <= 4096);
        }
        peak = peak.max(procfs::rss_kb(pid));
        let status = f.call("fugue_get_status", json!({"pane_id": pane}));
        if status["status"] == "exited" {
            break;
        }
        assert!(Instant::now() < deadline, "the storm did not end");
    }
    assert!(ping(&mut f) < PROMPT);
    eprintln!("escape storm: RSS {before} KiB -> peak {peak} KiB");
    assert!(peak < before + 40 * 1024, "RSS grew from {before} to {peak} KiB");
    check_views(&mut f, &pane);
}

/// A title string (OSC) that never ends, watched on the screen view all along: the emulator keeps
/// at most a kilobyte of it, whatever the pane prints.
#[test]
fn an_endless_title_string_costs_no_memory() {
    let mut f = Fugue::start_with(&[("FUGUE_SCROLLBACK_BYTES", "1048576")]);
    let pid = f.pid();
    let pane = f.pane(
        "printf '\\033]0;'; i=0; while [ $i -lt 250 ]; do head -c 100000 /dev/zero | tr '\\0' a; \
         i=$((i+1)); done; printf '\\007DONE'; exec sleep 1000",
    );
    let before = procfs::rss_kb(pid);
    let mut peak = before;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = f.call("fugue_get_output", json!({"pane_id": pane, "format": "screen"}));
        peak = peak.max(procfs::rss_kb(pid));
        if out["output"].as_str().unwrap().contains("DONE") {
            break;
        }
        assert!(Instant::now() < deadline, "DONE never showed");
    }
    eprintln!("endless title: 25 MB printed, RSS {before} KiB -> peak {peak} KiB");
    assert!(peak < before + 12 * 1024, "RSS grew from {before} to {peak} KiB");
}

#[test]
fn cursor_moves_cannot_inflate_a_read() {
    let mut f = Fugue::start();
    let pid = f.pid();
    // 200 lines of 100 far-right cursor moves: 200 KB printed, each line padded to the limit if
    // the renderer believed every move.
    let pane = f.pane(
        "i=0; while [ $i -lt 200 ]; do j=0; while [ $j -lt 100 ]; do printf '\\033[9999Cx'; \
         j=$((j+1)); done; echo; i=$((i+1)); done",
    );
    f.wait_exit(&pane);
    let before = procfs::rss_kb(pid);
    for since in [None, Some(0)] {
        let mut args = json!({"pane_id": pane, "lines": 1000, "max_bytes": 100000});
        if let Some(since) = since {
            args["since"] = json!(since);
        }
        let out = f.call("fugue_get_output", args);
        let len = out["output"].as_str().unwrap().len();
        assert!(len <= 100000, "since {since:?}: {len} bytes over a 100000 cap");
    }
    let grown = procfs::rss_kb(pid).saturating_sub(before);
    assert!(grown < 64 * 1024, "one read grew RSS by {grown} KiB");
}

#[test]
fn a_200_megabyte_burst_keeps_memory_flat() {
    let mut f = Fugue::start_with(&[("FUGUE_SCROLLBACK_BYTES", "4194304")]);
    let pid = f.pid();
    let before = procfs::rss_kb(pid);
    let started = Instant::now();
    // 5,128,205 lines of 39 bytes: 199,999,995 bytes, plus a \r for each \n from the terminal.
    let pane = f.pane("yes 'a fairly ordinary line of build output' | head -c 199999995");
    let (slowest, peak) = watch_until_exit(&mut f, &pane);
    let elapsed = started.elapsed();
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["exit_code"], 0, "{status}");
    assert_eq!(status["offset"], 199_999_995u64 + 5_128_205, "every byte counted");
    eprintln!(
        "200 MB burst: {elapsed:?}, RSS {before} KiB -> peak {peak} KiB, slowest answer {slowest:?}"
    );
    assert!(slowest < PROMPT, "an answer took {slowest:?}");
    assert!(peak < 40 * 1024 + 4 * 1024, "RSS peaked at {peak} KiB");
    let tail = f.call("fugue_get_output", json!({"pane_id": pane, "lines": 2}));
    assert_eq!(
        tail["output"],
        "a fairly ordinary line of build output\na fairly ordinary line of build output"
    );
}

#[test]
fn the_alternate_screen_comes_and_goes() {
    let mut f = Fugue::start();
    let pane = f.pane(
        "echo MAIN-TEXT; printf '\\033[?1049h\\033[HIN-ALT\\n'; read x; \
         printf '\\033[?1049l'; echo BACK; exec sleep 1000",
    );
    let screen = |f: &mut Fugue| {
        let out = f.call("fugue_get_output", json!({"pane_id": pane, "format": "screen"}));
        out["output"].as_str().unwrap().to_string()
    };
    // The alternate screen is not in the text view that fugue_expect searches: watch the screen.
    f.screen_until(&pane, "IN-ALT");
    let alt = screen(&mut f);
    assert!(alt.contains("IN-ALT") && !alt.contains("MAIN-TEXT"), "{alt}");
    let sent = f.call("fugue_send_input", json!({"pane_id": pane, "input": "", "submit": true}));
    f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^BACK$", "since": sent["offset"], "timeout_ms": 20000}),
    );
    let main = screen(&mut f);
    assert!(
        main.contains("MAIN-TEXT") && main.contains("BACK") && !main.contains("IN-ALT"),
        "{main}"
    );
    // The text view is the main screen's log, as a terminal's scrollback is.
    let text = f.text(&pane);
    let (a, c) = (text.find("MAIN-TEXT"), text.find("BACK"));
    assert!(a.is_some() && a < c && !text.contains("IN-ALT"), "{text}");
}

/// Three hundred resizes of two panes, one printing flat out: sizes over the cell limit are refused,
/// the rest take effect, the last one is what the program sees, and a second storm costs no more
/// memory than the first (the grids are reused, not leaked).
#[test]
fn a_resize_storm_while_printing_leaves_the_last_size() {
    let mut f = Fugue::start();
    let pid = f.pid();
    let busy = f.pane("yes resize-storm | head -c 50000000; exec sleep 1000");
    let shell = f.shell();
    let mut rng = Rng::new(seed());
    let mut storm = |f: &mut Fugue| {
        let (mut applied, mut refused) = (0, 0);
        for pane in [&busy, &shell] {
            f.call("fugue_resize_pane", json!({"pane_id": pane, "rows": 500, "cols": 500}));
        }
        for i in 0..150 {
            let (rows, cols) = (2 + rng.below(999) as u64, 10 + rng.below(991) as u64);
            let pane = if i % 2 == 0 { &busy } else { &shell };
            let args = json!({"pane_id": pane, "rows": rows, "cols": cols});
            if rows * cols > 250_000 {
                let err = f.call_err("fugue_resize_pane", args);
                assert!(err["message"].as_str().unwrap().contains("cells"), "{err}");
                refused += 1;
            } else {
                f.call("fugue_resize_pane", args);
                applied += 1;
            }
            if i % 50 == 0 {
                assert!(ping(f) < PROMPT);
                let screen = json!({"pane_id": busy, "format": "screen", "max_bytes": 1000});
                f.call("fugue_get_output", screen);
            }
        }
        (applied, refused)
    };
    let first = storm(&mut f);
    let after_first = procfs::rss_kb(pid);
    let second = storm(&mut f);
    let after_second = procfs::rss_kb(pid);
    eprintln!(
        "resize storm: {first:?} then {second:?} (applied, refused); RSS {after_first} -> {after_second} KiB"
    );
    assert!(first.0 > 0 && first.1 > 0);
    assert!(after_second < after_first + 16 * 1024, "{after_first} -> {after_second} KiB");
    f.call("fugue_resize_pane", json!({"pane_id": shell, "rows": 24, "cols": 100}));
    let sent =
        f.call("fugue_send_input", json!({"pane_id": shell, "input": "stty size", "submit": true}));
    let size = f.call(
        "fugue_expect",
        json!({"pane_id": shell, "pattern": "^(\\d+) (\\d+)$", "since": sent["offset"],
               "timeout_ms": 20000}),
    );
    assert_eq!(size["groups"], json!(["24", "100"]), "{size}");
    let status = f.call("fugue_get_status", json!({"pane_id": busy}));
    assert_eq!(status["status"], "running", "{status}");
}

/// A process tree, every member ignoring hang-up and terminate, spread over process groups.
/// As root RLIMIT_NPROC is not enforced, so the tree bounds itself: depth 7, 128 leaves.
#[test]
fn a_fork_tree_ignoring_signals_dies_with_its_pane() {
    let mut f = Fugue::start();
    let created = f.call(
        "fugue_create_session",
        json!({"command": "trap '' HUP TERM; set -m; \
                b() { if [ $1 -le 0 ]; then exec sleep 1000; fi; b $(($1-1)) & b $(($1-1)); }; b 7"}),
    );
    let (pane, leader) =
        (created["pane_id"].as_str().unwrap().to_string(), created["pid"].as_u64().unwrap() as u32);
    let deadline = Instant::now() + Duration::from_secs(60);
    let members = loop {
        let members = procfs::session_members(leader);
        if members.len() >= 128 {
            break members;
        }
        assert!(Instant::now() < deadline, "the tree grew to {} only", members.len());
        std::thread::sleep(Duration::from_millis(50));
    };
    let groups: std::collections::HashSet<u32> =
        members.iter().filter_map(|p| procfs::stat(*p)).map(|s| s.pgrp).collect();
    assert!(groups.len() > 1, "set -m should spread the tree over process groups");
    assert!(ping(&mut f) < PROMPT);
    let started = Instant::now();
    let closed = f.call("fugue_close_pane", json!({"pane_id": pane}));
    let took = started.elapsed();
    assert_eq!(closed["closed"], true);
    let left = procfs::all_gone_within(&members, Duration::from_secs(2));
    assert!(left.is_empty(), "{} of {} processes survived the close", left.len(), members.len());
    eprintln!(
        "fork tree: {} processes in {} groups closed in {took:?}",
        members.len(),
        groups.len()
    );
    assert!(procfs::zombies(f.pid()).is_empty());
}

#[test]
fn processes_ignoring_hangup_and_terminate_still_end() {
    let mut f = Fugue::start();
    let created = f.call(
        "fugue_create_session",
        json!({"command": "trap '' HUP TERM INT; sleep 1000 & sleep 1000 & echo READY; \
                while :; do sleep 1000; done"}),
    );
    let pane = created["pane_id"].as_str().unwrap().to_string();
    let leader = created["pid"].as_u64().unwrap() as u32;
    f.expect(&pane, "^READY$");
    // The shell and its two background sleeps (the loop's sleep may not have started yet).
    let members = procfs::session_members(leader);
    assert!(members.len() >= 3, "{members:?}");
    let started = Instant::now();
    let closed = f.call("fugue_close_pane", json!({"pane_id": pane}));
    assert_eq!(closed["signal"], "SIGKILL", "only SIGKILL ends them: {closed}");
    // Two graces of 300 ms, then SIGKILL: well under a second on a quiet machine. The bound is
    // what tells "each signal had its grace" from "the close waited on processes that ignore
    // it", with room for a machine whose two cores run twenty jobs (2.5 s seen there).
    assert!(started.elapsed() < Duration::from_secs(5), "close took {:?}", started.elapsed());
    let left: Vec<String> = procfs::survivors(&members)
        .iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
        .collect();
    assert!(left.is_empty(), "{left:?} outlived the close {closed}");
    let session = procfs::session_members(leader);
    assert!(session.is_empty(), "{session:?} are still in the pane's session");
    let err = f.call_err("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(err["code"], "pane_not_found");
}

/// Output that arrives faster than anyone reads it never blocks a reader of another pane.
#[test]
fn a_flooding_pane_does_not_slow_a_quiet_one() {
    let mut f = Fugue::start();
    let flood = f.pane("yes flood | head -c 100000000");
    let quiet = f.pane("cat");
    for i in 0..20 {
        let word = format!("echo-{i}");
        let sent =
            f.call("fugue_send_input", json!({"pane_id": quiet, "input": word, "submit": true}));
        let started = Instant::now();
        let found = f.call(
            "fugue_expect",
            json!({"pane_id": quiet, "pattern": format!("^{word}$"), "since": sent["offset"], "timeout_ms": 20000}),
        );
        assert_eq!(found["status"], "matched", "{found}");
        assert!(started.elapsed() < PROMPT, "echo {i} took {:?}", started.elapsed());
    }
    let _: Value = f.call("fugue_close_pane", json!({"pane_id": flood}));
}
