// Drive a stdio MCP server with the official TypeScript SDK v1 client
// (@modelcontextprotocol/sdk 1.x: legacy initialize handshake only, protocol 2025-11-25;
// this is what most shipped hosts embed).
//
// Usage: node ts_client.mjs [--tool NAME] [--args JSON] [--timeout MS] [--cancel-after MS]
//                           [--parallel N] -- SERVER_CMD [ARGS...]
// Exit status: 0 ok, 1 failure, 2 the tool result had isError=true.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

const argv = process.argv.slice(2);
const sep = argv.indexOf("--");
if (sep < 0 || sep === argv.length - 1) {
  console.error("usage: node ts_client.mjs [opts] -- SERVER_CMD [ARGS...]");
  process.exit(1);
}
const opt = {};
for (let i = 0; i < sep; i += 2) opt[argv[i].replace(/^--/, "")] = argv[i + 1];
const [command, ...args] = argv.slice(sep + 1);

const t0 = Date.now();
// Only HOME, LOGNAME, PATH, SHELL, TERM, USER are inherited unless `env` is given.
const transport = new StdioClientTransport({ command, args, env: { ...getDefaultEnvironment() }, stderr: "inherit" });
let negotiated = "?";
transport.setProtocolVersion = (v) => { negotiated = v; }; // the SDK reports the negotiated version here
const client = new Client({ name: "ts-sdk-v1-probe", version: "0.0.1" });
try {
  await client.connect(transport); // initialize + notifications/initialized
  console.log(`protocol=${negotiated} server=${JSON.stringify(client.getServerVersion())}`);
  console.log(`capabilities=${JSON.stringify(client.getServerCapabilities())}`);
  console.log(`instructions=${JSON.stringify(client.getInstructions())}`);

  const tools = [];
  let cursor;
  do { // follow nextCursor
    const page = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  for (const t of tools) console.log(`  - ${t.name} annotations=${JSON.stringify(t.annotations ?? {})}`);

  const name = opt.tool ?? tools[0]?.name;
  let exit = 0;
  if (name) {
    const callOne = async (i) => {
      const ac = new AbortController();
      if (opt["cancel-after"]) setTimeout(() => ac.abort("caller gave up"), Number(opt["cancel-after"]));
      try {
        const r = await client.callTool({ name, arguments: JSON.parse(opt.args ?? "{}") }, undefined, {
          onprogress: (p) => console.log(`  progress +${Date.now() - t0}ms ${p.progress}/${p.total ?? "?"} ${p.message ?? ""}`),
          signal: ac.signal,                              // abort => SDK sends notifications/cancelled
          timeout: Number(opt.timeout ?? 60000),          // SDK default is 60 s!
          resetTimeoutOnProgress: true,                   // progress notifications extend the timeout
        });
        console.log(`  call#${i} isError=${!!r.isError} content=${JSON.stringify(r.content)}` +
          (r.structuredContent ? ` structured=${JSON.stringify(r.structuredContent)}` : ""));
        if (r.isError) exit = Math.max(exit, 2);
        if (opt["cancel-after"]) { // nothing was cancelled: the check is meaningless
          console.error(`  call#${i} ended before --cancel-after ${opt["cancel-after"]}ms (use a slower tool)`);
          exit = 1;
        }
      } catch (e) {
        console.log(`  call#${i} error code=${e.code} message=${JSON.stringify(e.message)}`);
        if (!opt["cancel-after"] || !ac.signal.aborted) exit = 1; // only our own abort is expected
      }
    };
    await Promise.all(Array.from({ length: Number(opt.parallel ?? 1) }, (_, i) => callOne(i)));
    if (opt["cancel-after"]) console.log(`  after cancel, tools/list -> ${(await client.listTools()).tools.length} tools`);
  }
  await client.close(); // closes stdin, then SIGTERM/SIGKILL if the server lingers
  process.exit(exit);
} catch (e) {
  console.error(`FAILED: ${e?.stack ?? e}`);
  process.exit(1);
}
