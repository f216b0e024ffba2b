//! Megabytes of output: `fugue_expect` searching a backlog larger than one scan step, lines that
//! straddle a step boundary, a single line longer than a step, and text reads of the same.

use crate::util::*;
use serde_json::json;

/// `seq 1 n` as the PTY delivers it, and the offset just past each line.
fn seq_ends(n: u64) -> Vec<u64> {
    let mut end = 0;
    (1..=n)
        .map(|i| {
            end += i.to_string().len() as u64 + 2; // "\r\n": the terminal adds the \r
            end
        })
        .collect()
}

#[test]
fn expect_searches_a_backlog_of_megabytes_to_its_end() {
    let mut f = Fugue::start();
    let pane = f.pane("seq 1 600000");
    f.wait_exit(&pane);
    let ends = seq_ends(600_000);
    let total = *ends.last().unwrap();
    assert!(total > 4 << 20, "the backlog must span several scan steps");

    // Every line that straddles a 1 MiB boundary, plus the last line, is found where it is.
    let mut wanted: Vec<usize> =
        (1..=4u64).map(|mib| ends.iter().position(|e| *e > mib << 20).unwrap()).collect();
    wanted.push(ends.len() - 1);
    for i in wanted {
        let number = i + 1;
        let found = f.call(
            "fugue_expect",
            json!({"pane_id": pane, "pattern": format!("^{number}$"), "since": 0,
                   "timeout_ms": 20000}),
        );
        assert_eq!(found["status"], "matched", "line {number}: {found}");
        assert_eq!(found["line"], number.to_string());
        assert_eq!(found["offset"], ends[i], "offset after line {number}");
    }

    // No match: the answer is `exited` only after every byte was searched.
    let done = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^600001$", "since": 0, "timeout_ms": 20000}),
    );
    assert_eq!(done["status"], "exited", "{done}");
    assert_eq!(done["offset"], total);
    assert_eq!(f.text(&pane).lines().last(), Some("600000"));
}

#[test]
fn a_line_longer_than_a_scan_step_does_not_stall_the_search() {
    let mut f = Fugue::start();
    let pane = f.pane("head -c 3000000 /dev/zero | tr '\\0' x; printf '\\nEND %s\\n' done");
    let found = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^END (\\w+)$", "since": 0, "timeout_ms": 20000}),
    );
    assert_eq!(found["status"], "matched", "{found}");
    assert_eq!(found["groups"], json!(["done"]));
    assert_eq!(found["offset"], 3_000_000 + 2 + 10);
    let early = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "x{1000}", "since": 0, "timeout_ms": 20000}),
    );
    assert_eq!(early["status"], "matched", "{early}");
}
