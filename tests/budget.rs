//! Answers that fit (issue 25 §3): an answer that carries a command's output stays within its
//! budget (about 4 KB by default, `max_bytes` to change it) and keeps, after the last lines, the
//! lines that matter — a noisy build's one error line in the middle of its noise — and what `keep`
//! matches; what it leaves out it says, with the offset to read it from.

use crate::exec::each_shell;
use crate::util::*;
use serde_json::{Value, json};

/// The error line of the noisy build, in the middle of its noise.
const ERROR_LINE: &str = "grammar.c:88:5: error: expected ';' before '}' token";
/// The noisy build's last line.
const MAKE_LINE: &str = "make: *** [Makefile:12: all] Error 2";

/// A failing `make -j4` as a script: 2000 lines of compiler noise with one error line in the
/// middle, then make's own line; it exits 2.
fn noisy_build(dir: &Dir) -> String {
    let noise = "i=$1; while [ $i -lt $2 ]; do \
                 echo \"cc -O2 -Wall -Werror -c src/unit$i.c -o obj/unit$i.o\"; i=$((i+1)); done";
    let script = format!(
        "noise() {{ {noise}; }}\nnoise 0 1000\necho \"{ERROR_LINE}\"\nnoise 1000 2000\n\
         echo '{MAKE_LINE}'\nexit 2\n"
    );
    let path = dir.write("build.sh", &script);
    format!("sh {}", path.display())
}

/// The size of an answer as a client receives its structured content.
fn size(answer: &Value) -> usize {
    answer.to_string().len()
}

/// The lines of a text without the gap markers.
fn shown_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.starts_with("[… ")).collect()
}

#[test]
fn a_noisy_failing_build_answers_its_error_line_within_4_kb() {
    let dir = Dir::new("budget-build");
    let build = noisy_build(&dir);
    each_shell(|name, f, pane| {
        let done =
            f.call("fugue_exec", json!({"pane_id": pane, "command": build, "timeout_ms": 60000}));
        assert_eq!(
            (done["status"].as_str(), done["exit_code"].as_i64()),
            (Some("failed"), Some(2))
        );
        let output = done["output"].as_str().unwrap();
        eprintln!("{name}: answer {} bytes, output {} bytes", size(&done), output.len());
        assert!(size(&done) <= 4096, "{name}: the answer is {} bytes", size(&done));
        assert!(output.lines().any(|l| l == ERROR_LINE), "{name}: {output}");
        assert!(output.ends_with(MAKE_LINE), "{name}: {output}");
        assert!(output.starts_with("cc -O2 -Wall -Werror -c src/unit0.c"), "{name}: {output}");
        let omitted = done["omitted"]["lines"].as_u64().unwrap() as usize;
        assert_eq!(shown_lines(output).len() + omitted, 2002, "{name}: {output}");

        // What was left out, in one call from `omitted_since`: it begins with the first line the
        // answer left out, and holds every omitted line.
        let first_gap = output.lines().position(|l| l.starts_with("[… ")).unwrap();
        let rest = f.call(
            "fugue_get_output",
            json!({"pane_id": pane, "since": done["omitted"]["since"], "lines": 5000,
                   "max_bytes": 1 << 20}),
        );
        let rest = rest["output"].as_str().unwrap();
        let unit = |n: usize| format!("cc -O2 -Wall -Werror -c src/unit{n}.c -o obj/unit{n}.o");
        assert_eq!(rest.lines().next(), Some(unit(first_gap).as_str()), "{name}");
        let left_out: Vec<String> = (0..2000).map(unit).filter(|l| !output.contains(l)).collect();
        assert_eq!(left_out.len(), omitted, "{name}");
        let rest: std::collections::HashSet<&str> = rest.lines().collect();
        assert!(left_out.iter().all(|l| rest.contains(l.as_str())), "{name}: a line is missing");
    });
}

#[test]
fn a_noisy_failing_build_in_a_parallel_run_keeps_its_error_line() {
    let dir = Dir::new("budget-parallel");
    let build = noisy_build(&dir);
    let mut f = Fugue::start();
    let out = f.call(
        "fugue_run_parallel",
        json!({"commands": [{"command": build, "name": "make"}, {"command": "true"}],
               "cleanup": false}),
    );
    eprintln!("parallel: answer {} bytes", size(&out));
    assert!(size(&out) <= 4096, "the answer is {} bytes: {out}", size(&out));
    let result = &out["results"][0];
    assert_eq!(result["status"], "failed", "{out}");
    let tail = result["output_tail"].as_str().unwrap();
    assert!(tail.lines().any(|l| l == ERROR_LINE), "{tail}");
    assert!(tail.ends_with(MAKE_LINE), "{tail}");
    let omitted = result["omitted"]["lines"].as_u64().unwrap() as usize;
    assert_eq!(shown_lines(tail).len() + omitted, 2002, "{tail}");
    // The pane stays (cleanup false): the lines left out are read from it.
    let rest = f.call(
        "fugue_get_output",
        json!({"pane_id": result["pane_id"], "since": result["omitted"]["since"], "lines": 2,
               "max_bytes": 1 << 20}),
    );
    assert_eq!(
        rest["output"],
        "cc -O2 -Wall -Werror -c src/unit0.c -o obj/unit0.o\n\
                                cc -O2 -Wall -Werror -c src/unit1.c -o obj/unit1.o",
        "{rest}"
    );
    assert!(out["results"][1].get("output_tail").is_none(), "a green command has none: {out}");

    // With cleanup the panes are gone: what was left out is counted, not offered.
    let out = f.call("fugue_run_parallel", json!({"commands": [{"command": build}]}));
    let result = &out["results"][0];
    assert!(result["output_tail"].as_str().unwrap().contains(ERROR_LINE), "{out}");
    assert!(result["omitted"]["lines"].as_u64().unwrap() > 1900, "{out}");
    assert!(result["omitted"].get("since").is_none(), "{out}");
}

#[test]
fn a_failing_pipeline_step_and_a_waited_job_keep_the_error_line() {
    let dir = Dir::new("budget-pipeline");
    let build = noisy_build(&dir);
    let mut f = Fugue::start();
    let out = f.call(
        "fugue_run_pipeline",
        json!({"commands": [{"command": "true"}, {"command": build}], "cleanup": true}),
    );
    assert_eq!(out["status"], "failed", "{out}");
    assert!(size(&out) <= 4096, "the answer is {} bytes: {out}", size(&out));
    let tail = out["output_tail"].as_str().unwrap();
    assert!(tail.lines().any(|l| l == ERROR_LINE) && tail.ends_with(MAKE_LINE), "{tail}");

    let job = f.call("fugue_exec", json!({"command": build, "timeout_ms": 1}));
    let pane = job["pane_id"].clone();
    let waited = f.call("fugue_wait", json!({"pane_ids": [pane], "timeout_ms": 60000}));
    let result = &waited["results"][0];
    assert_eq!(result["status"], "failed", "{waited}");
    assert!(size(&waited) <= 4096, "the answer is {} bytes: {waited}", size(&waited));
    // What the pane shows: the build's last lines, and its shell's prompt after them.
    let output = result["output"].as_str().unwrap();
    assert!(output.lines().any(|l| l == ERROR_LINE) && output.contains(MAKE_LINE), "{output}");
    assert!(result["omitted"]["lines"].as_u64().unwrap() > 1900, "{waited}");
}

#[test]
fn keep_adds_the_lines_it_matches() {
    let dir = Dir::new("budget-keep");
    let script = dir.write(
        "quiet.sh",
        "i=0; while [ $i -lt 500 ]; do [ $((i % 2)) = 0 ] && echo \"step $i\" || echo \"copied $i\"; \
         [ $i = 250 ] && echo 'compiled 17 units in 2.5s'; i=$((i+1)); done\n",
    );
    let command = format!("sh {}", script.display());
    let mut f = Fugue::start();
    let plain = f.call("fugue_exec", json!({"command": command, "max_bytes": 1000}));
    assert_eq!(plain["status"], "ok", "{plain}");
    assert!(!plain["output"].as_str().unwrap().contains("compiled"), "{plain}");
    let kept = f.call(
        "fugue_exec",
        json!({"command": command, "max_bytes": 1000, "keep": "compiled \\d+ units"}),
    );
    let output = kept["output"].as_str().unwrap();
    assert!(output.contains("step 250\ncompiled 17 units in 2.5s\ncopied 251"), "{output}");
    assert!(output.len() <= 1000, "{}", output.len());
    // The run tools take it too.
    let out = f.call(
        "fugue_run_parallel",
        json!({"commands": [{"command": format!("{command}; exit 1")}], "keep": "compiled"}),
    );
    assert!(out["results"][0]["output_tail"].as_str().unwrap().contains("compiled 17"), "{out}");
}

#[test]
fn max_bytes_raises_and_lowers_the_budget() {
    let dir = Dir::new("budget-max");
    let build = noisy_build(&dir);
    let mut f = Fugue::start();
    let default = f.call("fugue_exec", json!({"command": build, "timeout_ms": 60000}));
    let omitted = |v: &Value| v["omitted"]["lines"].as_u64().unwrap();
    let text = |v: &Value| v["output"].as_str().unwrap().to_string();
    for max in [300, 1000, 20_000] {
        let answer =
            f.call("fugue_exec", json!({"command": build, "max_bytes": max, "timeout_ms": 60000}));
        let output = text(&answer);
        assert!(output.len() <= max, "{max}: {}", output.len());
        assert!(output.lines().any(|l| l == ERROR_LINE), "{max}: {output}");
        assert!(output.ends_with(MAKE_LINE), "{max}: {output}");
        // Its runs of one shape folded, the build fits 1000 bytes whole; 300 leave more out.
        if max < 1000 {
            assert!(omitted(&answer) > omitted(&default), "{max}");
        } else {
            assert!(omitted(&answer) == omitted(&default), "{max}");
        }
    }
}

#[test]
fn an_invalid_keep_is_refused_before_anything_runs() {
    let dir = Dir::new("budget-invalid");
    let marker = dir.join("ran");
    let touch = format!("touch {}", marker.display());
    let mut f = Fugue::start();
    let shell = ready_shell(&mut f);
    for (tool, args) in [
        ("fugue_exec", json!({"command": touch, "keep": "("})),
        ("fugue_run_parallel", json!({"commands": [{"command": touch}], "keep": "("})),
        ("fugue_run_pipeline", json!({"commands": [{"command": touch}], "keep": "("})),
        (
            "fugue_send_input",
            json!({"pane_id": shell, "input": touch, "submit": true,
                                     "wait_ms": 5000, "keep": "("}),
        ),
        ("fugue_wait", json!({"pane_ids": [shell], "keep": "(", "timeout_ms": 10})),
        ("fugue_expect", json!({"pane_id": shell, "pattern": "x", "keep": "(", "timeout_ms": 10})),
    ] {
        let err = f.call_err(tool, args);
        assert_eq!(err["code"], "invalid_regex", "{tool}: {err}");
    }
    // The shell still works, and nothing ran.
    let done = f.call("fugue_exec", json!({"pane_id": shell, "command": "echo alive"}));
    assert_eq!(done["output"], "alive", "{done}");
    assert!(!marker.exists(), "a refused call ran its command");
}

#[test]
fn a_small_green_answer_is_unchanged() {
    let mut f = Fugue::start();
    let done = f.call("fugue_exec", json!({"command": "echo hello; echo world"}));
    assert_eq!(done["output"], "hello\nworld", "{done}");
    assert!(done.get("omitted").is_none(), "{done}");
    let out = f.call("fugue_run_parallel", json!({"commands": [{"command": "echo hi; exit 3"}]}));
    assert_eq!(out["results"][0]["output_tail"], "hi", "{out}");
    assert!(out["results"][0].get("omitted").is_none(), "{out}");
}

#[test]
fn expect_return_output_keeps_the_error_line() {
    let dir = Dir::new("budget-expect");
    let build = noisy_build(&dir);
    let mut f = Fugue::start();
    let pane = f.pane(&format!("{build}; exec cat"));
    let found = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^make: ", "action": "return_output", "lines": 5,
               "timeout_ms": 60000}),
    );
    assert_eq!(found["status"], "matched", "{found}");
    let output = found["output"].as_str().unwrap();
    assert!(output.lines().any(|l| l == ERROR_LINE) && output.ends_with(MAKE_LINE), "{output}");
    assert!(size(&found) <= 4096, "the answer is {} bytes", size(&found));
    assert_eq!(
        shown_lines(output).len() + found["omitted"]["lines"].as_u64().unwrap() as usize,
        2002
    );
    let rest = f.call(
        "fugue_get_output",
        json!({"pane_id": pane, "since": found["omitted"]["since"], "lines": 1}),
    );
    assert_eq!(rest["output"], "cc -O2 -Wall -Werror -c src/unit0.c -o obj/unit0.o", "{rest}");
}
