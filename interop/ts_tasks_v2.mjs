// Durable calls through the official 2026-07-28 clients: @modelcontextprotocol/client (v2, the
// modern era through server/discover) with @modelcontextprotocol/ext-tasks, the Tasks extension's
// requester. A task that completes, a task whose program asks (its elicitation form answered
// through tasks/update), and a task cancelled.
//
// ext-tasks needs the host to dispatch raw task requests (the SDK client's own codecs reject
// `resultType: "task"`): `rawDispatch` below sends them on the client's own stdio transport and
// routes their responses back, passing everything else to the client.
//
// Usage: node ts_tasks_v2.mjs -- SERVER_CMD [ARGS...]
// Exit status: 0 when every check passed.
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/client/stdio";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

const argv = process.argv.slice(2);
const sep = argv.indexOf("--");
if (sep < 0 || sep === argv.length - 1) {
  console.error("usage: node ts_tasks_v2.mjs -- SERVER_CMD [ARGS...]");
  process.exit(1);
}
const [command, ...args] = argv.slice(sep + 1);
const env = { ...getDefaultEnvironment(), FUGUE_INPUT_QUIET_MS: "400" };
const transport = new StdioClientTransport({ command, args, env, stderr: "inherit" });
const clientInfo = { name: "ext-tasks-v2", version: "0.0.1" };
const clientCapabilities = { elicitation: { form: {} } };
const client = new Client(clientInfo, {
  capabilities: clientCapabilities,
  versionNegotiation: { mode: { pin: "2026-07-28" } },
});

function check(ok, what) {
  console.log(`${ok ? "ok" : "NOT OK"} - ${what}`);
  if (!ok) process.exitCode = 1;
}

// Raw requests on the client's transport, answered by id.
const pending = new Map();
let nextRaw = 1;
function rawDispatch(request) {
  const id = `raw-${nextRaw++}`;
  return new Promise((resolve, reject) => {
    pending.set(id, (message) => resolve(
      message.error ? { kind: "error", error: message.error } : { kind: "result", result: message.result }));
    transport.send({ jsonrpc: "2.0", ...request, id }).catch(reject);
  });
}

const asked = [];
try {
  await client.connect(transport);
  check(client.getProtocolEra() === "modern", `the modern era: ${client.getProtocolEra()}`);
  const ext = client.getServerCapabilities()?.extensions?.["io.modelcontextprotocol/tasks"];
  check(ext !== undefined, `the server offers the tasks extension: ${JSON.stringify(ext)}`);
  const toClient = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const answer = typeof message.id === "string" && !("method" in message) && pending.get(message.id);
    if (answer) {
      pending.delete(message.id);
      answer(message);
    } else {
      toClient(message, extra);
    }
  };
  const session = createTaskSessionFromClient(client, {
    endpointId: "fugue-interop",
    rawDispatch,
    v2RequestFraming: { protocolVersion: "2026-07-28", clientInfo, clientCapabilities },
    onInputRequest: async (request) => {
      asked.push(request.params);
      console.log(`  input request: ${JSON.stringify(request.params.message)}`);
      return { action: "accept", content: { input: "blue" } };
    },
  });

  // 1. A task that completes.
  const done = await session.callTool("fugue_exec", { command: "sleep 1; echo task-done-$((6*7))" });
  check(done.kind === "task", `a call of a second answers a task: ${done.kind}`);
  const settled = await done.settle();
  const result = resultFromTaskOutcome(settled.outcome);
  check(result.structuredContent?.output === "task-done-42",
    `the task completed: ${JSON.stringify(result.structuredContent)}`);

  // 2. A task whose program asks: input_required, answered through tasks/update.
  const asking = await session.callTool("fugue_exec", { command: "printf 'Colour? '; read c; echo got-$c" });
  const answered = resultFromTaskOutcome((await asking.settle()).outcome);
  check(asked.length === 1 && asked[0].message === "Colour?", "the question came as an input request");
  check(String(answered.structuredContent?.output ?? "").includes("got-blue"),
    `the answer was typed: ${JSON.stringify(answered.structuredContent)}`);

  // 3. A task cancelled.
  const slow = await session.callTool("fugue_exec", { command: "sleep 60" });
  check(slow.kind === "task", "sleep 60 is a task");
  await slow.cancel();
  const outcome = (await slow.settle()).outcome;
  check(outcome.status === "cancelled", `the task was cancelled: ${outcome.status}`);
  await session.close();
  // fugue's own shells, where the tasks ran, go: a shared server then holds nothing and ends.
  await client.callTool({ name: "fugue_close_session", arguments: { session_id: "shell" } });
  await client.close();
} catch (e) {
  console.error(`FAILED: ${e?.stack ?? e}`);
  process.exitCode = 1;
}
process.exit(process.exitCode ?? 0);
