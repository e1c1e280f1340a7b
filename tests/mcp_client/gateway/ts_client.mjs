// The official TypeScript SDK's client (@modelcontextprotocol/sdk, pinned in package.json) driving
// one MCP server over stdio, for ../test_gateway.py. Copied next to the installed node_modules
// and run as `node ts_client.mjs PLAN` where PLAN is JSON:
//   {"command": ..., "args": [...], "cwd": ..., "calls": [{"name": ..., "arguments": {...}}]}
// Prints one JSON object: the server's name and version, the negotiated protocol version, the
// tool names, and each call's result (or its error's message).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const plan = JSON.parse(process.argv[2]);
const transport = new StdioClientTransport({
  command: plan.command,
  args: plan.args,
  cwd: plan.cwd,
  stderr: "inherit",
});
const client = new Client({ name: "memlineage-gateway-test", version: "1.0.0" });
await client.connect(transport);
const out = {
  server: client.getServerVersion(),
  protocolVersion: transport.protocolVersion ?? null,
  tools: (await client.listTools()).tools.map((t) => t.name),
  results: [],
};
for (const call of plan.calls) {
  try {
    out.results.push(await client.callTool({ name: call.name, arguments: call.arguments }));
  } catch (e) {
    out.results.push({ thrown: String(e.message ?? e) });
  }
}
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
