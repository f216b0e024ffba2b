//! Integration tests: each drives the real `fugue` binary over stdio through `util::Fugue`.

// The stdio harness: start fugue, send requests, wait for answers.
mod util;
// Private sshd servers on 127.0.0.1, for the tests that ssh somewhere.
mod sshd;
// What /proc shows of fugue and its children: memory, threads, descriptors, zombies, sockets.
mod procfs;

// JSON-RPC framing, both MCP eras, errors, cancellation and concurrency.
mod protocol;
// The ten pane tools against real shells.
mod panes;
// fugue_expect against real shells.
mod expect;
// fugue_run_parallel: exit codes, tails, timeouts, layouts (tiles sized before programs start).
mod parallel;
// fugue_run_pipeline: one shell, exact exit codes, timeouts, the kept pane, temp directories.
mod pipeline;
// What a person watching a pane sees of the commands fugue runs in it.
mod watched;
// The shell matrix: pipelines and kept panes under bash, dash, zsh, fish, ksh and mksh.
mod shells;
// The command line: call, tools, help, version.
mod cli;
// The agent pipeline with fake agents in real git repositories.
mod agent;
// The control socket, fugue ls, and fugue attach through a real PTY.
mod attach;
// Hostile protocol input: garbage, deep nesting, oversized lines, wrong types for every tool.
mod hostile;
// Hostile terminals: garbage, endless lines, bursts, resize storms, fork trees, stubborn processes.
mod hostile_panes;
// Every hard limit, one step past it.
mod limits;
// Process hygiene: zombies, signals, SIGKILL, a client that stops reading, a broken stdout.
mod hygiene;
// Sandboxed panes: writes, .git, network, secrets, fail-closed; as root and as nobody.
mod sandbox;
// Everyday work sandboxed: a build and test suite, pip into a venv, npm install, git.
mod sandbox_work;
// Everyday tools sandboxed: a dev server, vim, attach, a shared server's fronts, tmux.
mod sandbox_tools;
// Panes from the layout template: every promise kept, stale templates and holders replaced.
mod sandbox_template;
// The well-known ways out of a sandboxed pane, each expected to fail.
mod escape;
// Escapes through a call's own sandbox and through fugue's own work on a sandboxed tree.
mod escape_calls;
// Ways out found by attacking the merged sandbox: other terminals, nested repositories moved.
mod escape_more;
// No way back: capabilities, the mount API, the keyring, Unix sockets outside; as root and nobody.
mod lockdown;
// Security: no network, private files, arguments are data, env names validated.
mod security;
// The soak (ignored; `make soak`): thousands of mixed calls, resources flat from start to end.
mod soak;
// The text view and what fugue_expect returns: output after `since`, the main screen only.
mod text_view;
// What tools/list tells a model: declared defaults, the traps named.
mod schemas;
// Every tool's real answers against its outputSchema: types, status words, nested results.
mod answers;
// Megabytes of output: expect over large backlogs, long lines.
mod bulk;
// Shared servers: fronts that come and go, kill-server, exit-empty, start races, stale sockets.
mod shared;
// Shared servers: each front's calls work in the front's own directory.
mod shared_cwd;
// Shared servers on the wire: both eras, progress, cancellation, a dying server, version skew, ls.
mod shared_wire;
// Questions seen at once: the kernel's word, the program named, no false input under load.
mod at_once;
// Activity: programs that wait for someone to type, told apart from those that work or wait on
// something else.
mod activity;
// Questions in orchestration: run tools stop a command that asks and answer `input`; pipeline cwd.
mod asking;
// fugue_exec and live shells: exact commands in interactive panes, in every installed shell.
mod exec;
// Jobs: fugue's shells never wait their turn, until, fugue_wait, answers and handles.
mod jobs;
// responses: a program's questions answered from keys given up front, one call for a dialogue.
mod responses;
// Durable calls: MCP Tasks in both eras, questions as input_required, a task outliving its front.
mod tasks;
// Live shells: rc files and hooks kept, integration off, cleanup, wait_ms in non-shell panes.
mod live_shell;
// The names fugue gives the sessions and windows it creates.
mod names;
// The manual names exactly the tools, environment variables and error codes fugue has.
mod docs;
// The layers of src/: imports point down, and no files import each other in a circle.
mod layers;
// Answers that fit: a noisy failure's error line within the budget, keep, omitted.
mod budget;
// Answers an agent can trust: search, cuts that say what they cut, folds, the ceiling, dialogues.
mod trust;
// The watchdog for silent work: quiet_ms answers `quiet` for a command that hangs without asking.
mod quiet;
// Remote hosts over ssh: private sshd servers as hosts, every tool there, faults, fan-out.
mod remote;
// Durable calls and cancels on remote panes.
mod remote_tasks;
