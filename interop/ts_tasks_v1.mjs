// Durable calls through the official TypeScript SDK v1 (@modelcontextprotocol/sdk 1.x), whose
// experimental tasks client speaks the 2025-11-25 Tasks: a task-augmented tools/call, tasks/get
// polls, tasks/result, tasks/cancel, and the program's question answered as an elicitation/create
// request tied to the task.
//
// Usage: node ts_tasks_v1.mjs -- SERVER_CMD [ARGS...]
// Exit status: 0 when a task completed, a task's question was answered and a task was cancelled.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const argv = process.argv.slice(2);
const sep = argv.indexOf("--");
if (sep < 0 || sep === argv.length - 1) {
  console.error("usage: node ts_tasks_v1.mjs -- SERVER_CMD [ARGS...]");
  process.exit(1);
}
const [command, ...args] = argv.slice(sep + 1);
const env = { ...getDefaultEnvironment(), FUGUE_INPUT_QUIET_MS: "400" };
const transport = new StdioClientTransport({ command, args, env, stderr: "inherit" });
const client = new Client(
  { name: "ts-sdk-v1-tasks", version: "0.0.1" },
  { capabilities: { elicitation: { form: {} } } },
);
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params);
  console.log(`  elicitation: ${JSON.stringify(request.params.message)} ` +
    `related-task=${JSON.stringify(request.params._meta?.["io.modelcontextprotocol/related-task"])}`);
  return { action: "accept", content: { input: "blue" } };
});

function check(ok, what) {
  console.log(`${ok ? "ok" : "NOT OK"} - ${what}`);
  if (!ok) process.exitCode = 1;
}

// Runs a task-augmented call to the end; returns what the stream yielded.
async function stream(name, args) {
  const seen = { statuses: [], result: undefined, error: undefined, taskId: undefined };
  const it = client.experimental.tasks.callToolStream(
    { name, arguments: args }, CallToolResultSchema, { task: { ttl: 60000 } });
  for await (const message of it) {
    if (message.type === "taskCreated") seen.taskId = message.task.taskId;
    if (message.type === "taskStatus") seen.statuses.push(message.task.status);
    if (message.type === "result") seen.result = message.result;
    if (message.type === "error") seen.error = message.error;
  }
  return seen;
}

try {
  await client.connect(transport);
  const caps = client.getServerCapabilities();
  check(!!caps?.tasks?.requests?.tools?.call, `the server offers tasks for tools/call: ${JSON.stringify(caps?.tasks)}`);
  const tools = (await client.listTools()).tools;
  const exec = tools.find((t) => t.name === "fugue_exec");
  check(exec?.execution?.taskSupport === "optional", "fugue_exec may run as a task");

  // 1. A task that completes.
  const done = await stream("fugue_exec", { command: "sleep 1; echo task-done-$((6*7))" });
  console.log(`  statuses=${JSON.stringify(done.statuses)} error=${done.error}`);
  check(done.taskId && done.result?.structuredContent?.output === "task-done-42",
    `a task completes: ${JSON.stringify(done.result?.structuredContent)}`);

  // 2. A task whose program asks: the SDK waits in tasks/result and answers the elicitation.
  const answered = await stream("fugue_exec", { command: "printf 'Colour? '; read c; echo got-$c" });
  check(asked.length === 1 && asked[0].message === "Colour?", "the question came as an elicitation");
  check(String(answered.result?.structuredContent?.output ?? "").includes("got-blue"),
    `the answer was typed: ${JSON.stringify(answered.result?.structuredContent)}`);

  // 3. A task cancelled.
  const it = client.experimental.tasks.callToolStream(
    { name: "fugue_exec", arguments: { command: "sleep 60" } }, CallToolResultSchema, { task: {} });
  const created = (await it.next()).value;
  check(created?.type === "taskCreated", "a task was created for sleep 60");
  const cancelled = await client.experimental.tasks.cancelTask(created.task.taskId);
  check(cancelled.status === "cancelled", `tasks/cancel: ${JSON.stringify(cancelled)}`);
  const state = await client.experimental.tasks.getTask(created.task.taskId);
  check(state.status === "cancelled", `tasks/get after the cancel: ${state.status}`);
  await it.return();
  const listed = await client.experimental.tasks.listTasks();
  check(listed.tasks.length >= 3, `tasks/list: ${listed.tasks.length} tasks`);
  await client.callTool({ name: "fugue_close_session", arguments: { session_id: "shell" } });
  await client.close();
} catch (e) {
  console.error(`FAILED: ${e?.stack ?? e}`);
  process.exitCode = 1;
}
process.exit(process.exitCode ?? 0);
