# fugue — the two commands a newcomer needs are `make demo` and `make check`.
CARGO ?= cargo
BIN := target/release/fugue
STATIC_TARGET := x86_64-unknown-linux-gnu
STATIC_BIN := target/$(STATIC_TARGET)/release/fugue
# Where `make install` puts fugue: PREFIX/bin/fugue and PREFIX/share/man/man1/fugue.1, under
# DESTDIR when packaging.
PREFIX ?= $(HOME)/.local
DESTDIR ?=

.PHONY: all build demo check test install uninstall interop soak bench static man clean

all: build

build:
	$(CARGO) build --release

# Build fugue and run what an agent does most, for real, each step's answer printed as the agent
# sees it: a command that asks, answered in the same call by `responses`; a server started with
# `until` and waited on beside a check of it (the panes stay between the calls in a shared server,
# stopped at the end); then commands fanned out in parallel and a pipeline in one shell, each in
# one call with exact exit codes.
DEMO_SERVER := fugue-make-demo
# The demo runs a debug build: it compiles in a third of the release build's time (LTO, one codegen
# unit), and fugue is the same program either way.
DEMO_BIN := target/debug/fugue
DEMO_ANSWER := target/demo-answer.json
demo:
	$(CARGO) build
	@echo '== fugue_exec: rm -i asks, and responses answers it in the same call'
	$(DEMO_BIN) call fugue_exec '{"command":"cd $$(mktemp -d) && touch notes.txt && rm -i notes.txt && test ! -e notes.txt && echo notes.txt removed","responses":{"remove":"y"}}'
	@set -e; call() { echo "\$$ fugue call $$1 '$$2'"; $(DEMO_BIN) call --shared $(DEMO_SERVER) "$$1" "$$2" | tee $(DEMO_ANSWER); }; \
	trap '$(DEMO_BIN) kill-server $(DEMO_SERVER) >/dev/null 2>&1; rm -f $(DEMO_ANSWER)' EXIT; \
	if ! command -v python3 >/dev/null; then echo '== (python3 is not installed: the server step is left out)'; exit 0; fi; \
	echo '== fugue_exec with until: a web server starts; the call answers once it listens, and it runs on'; \
	call fugue_create_session '{"name":"web"}' >/dev/null; \
	call fugue_create_session '{"name":"check"}' >/dev/null; \
	call fugue_exec '{"pane_id":"web","command":"cd $$(mktemp -d) && python3 -m http.server 0 --bind 127.0.0.1","until":"port ([0-9]+)"}'; \
	url=http://127.0.0.1:$$(sed -n 's/.*"match": "port \([0-9]*\)".*/\1/p' $(DEMO_ANSWER))/; \
	echo '== a check beside it (timeout_ms 1 leaves it running), then fugue_wait on both: the check ends, the server runs on'; \
	call fugue_exec '{"pane_id":"check","timeout_ms":1,"command":"for i in 1 2 3; do sleep 0.3; python3 -c \"import sys, urllib.request as u; print(sys.argv[1], u.urlopen(sys.argv[1]).status)\" '$$url'; done"}' >/dev/null; \
	call fugue_wait '{"pane_ids":["web","check"],"timeout_ms":20000}'
	@echo '== fugue_run_parallel: three commands at once'
	$(DEMO_BIN) call fugue_run_parallel '{"commands":[{"name":"kernel","command":"uname -sr"},{"name":"count","command":"seq 1 3 | wc -l"},{"name":"fails","command":"echo oops >&2; exit 4"}]}'
	@echo '== fugue_run_pipeline: cd and export carry over; the failing step is named'
	-$(DEMO_BIN) call fugue_run_pipeline '{"commands":[{"name":"enter","command":"cd /tmp && export GREETING=hello"},{"name":"show","command":"echo $$GREETING from $$(pwd)"},{"name":"fail","command":"false"},{"name":"never","command":"echo not reached"}]}'

# The test suite: formatting, lints (the [lints] table in Cargo.toml, warnings denied), unit tests
# and integration tests against the real binary. A test that cannot run for want of a program
# records it in SKIP_LOG (tests/util.rs `skip`), and the last line says what was skipped and why,
# whether the tests passed or not.
SKIP_LOG := target/skipped-tests
check:
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings
	$(CARGO) build --all-targets
	@mkdir -p target && : >$(SKIP_LOG)
	FUGUE_SKIP_LOG=$(CURDIR)/$(SKIP_LOG) $(CARGO) test; status=$$?; .ci/skipped summary $(SKIP_LOG); exit $$status

test: check

# Real MCP clients (Python SDK, TypeScript SDK, MCP Inspector) and the official conformance suite,
# each listing the tools and making real calls: a parallel run and a pipeline through the Python
# SDK, a day in one live shell pane (interop/live_day.py), durable calls (MCP Tasks) with the
# TypeScript clients of both eras, and a slow parallel run that every client cancels (the processes
# must die, the server serve on).
define INTEROP_CALLS
fugue_run_parallel {"commands":[{"command":"echo one"},{"command":"exit 3"}]}
fugue_run_pipeline {"commands":[{"command":"cd /tmp"},{"command":"test $$(pwd) = /tmp"}],"cleanup":true}
endef
export INTEROP_EXTRA ?= $(INTEROP_CALLS)
export INTEROP_SLOW_TOOL ?= fugue_run_parallel
export INTEROP_SLOW_ARGS ?= {"commands":[{"name":"nap","command":"sleep 5"}]}
# The Python SDK steps again through a shared-server front (fugue serve --shared).
export INTEROP_SHARED ?= 1
# A day in one live shell pane through the Python SDK (interop/live_day.py), also through the front.
export INTEROP_LIVE_DAY ?= 1
interop: build
	interop/install.sh
	interop/run.sh $(CURDIR)/$(BIN)

# A few minutes of mixed load (pane churn, parallel runs, pipelines, agent pipelines, timeouts,
# cancellations); descriptors, threads, RSS and children must end where they started.
soak:
	$(CARGO) test --release --test integration -- --ignored soak --nocapture

# Performance figures, each next to a baseline measured in the same run, as one table (a few
# minutes; not part of `make check`, which never depends on timing). It measures the static
# binary, the one that ships. BENCH_ARGS=--quick takes fewer repetitions; BENCH_ARGS=NAME runs one
# figure (see `target/bench/release/fugue-bench --help`).
BENCH_ARGS ?=
bench: static
	$(CARGO) build --release --manifest-path bench/Cargo.toml --target-dir target/bench
	target/bench/release/fugue-bench --fugue $(STATIC_BIN) $(BENCH_ARGS)

# A fully static binary (glibc with crt-static); prints what `file` says and the size. The linker
# folds functions whose code is identical (--icf=all: 25 KB; Rust promises no function a unique
# address, and LLVM merges such functions itself; data is never folded).
static:
	RUSTFLAGS='-C target-feature=+crt-static -C relocation-model=static -C link-arg=-Wl,--icf=all' $(CARGO) build --release --target $(STATIC_TARGET)
	@file $(STATIC_BIN)
	@ls -l $(STATIC_BIN) | awk '{printf "size: %d bytes (%.2f MB)\n", $$5, $$5/1048576}'

man:
	man ./man/fugue.1

# The release binary and the manual page onto the PATH and the MANPATH (man finds
# PREFIX/share/man through PREFIX/bin on the PATH).
install: build
	install -D -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/fugue
	install -D -m 644 man/fugue.1 $(DESTDIR)$(PREFIX)/share/man/man1/fugue.1

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/fugue $(DESTDIR)$(PREFIX)/share/man/man1/fugue.1

clean:
	$(CARGO) clean
