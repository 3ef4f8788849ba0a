// dump-tools.mjs — records the real tools/list answers of the pinned npm MCP servers into
// tests/data/tools/<server>.json, the input of sdkgen's golden-file tests.
//
// Run from anywhere:  node tests/tools/dump-tools.mjs
// It uses the MCP TypeScript SDK client (tests/node_modules) over stdio, follows nextCursor
// until the last page, and writes {"server", "package", "version", "serverInfo",
// "dumped_with", "tools": [...]} so a diff shows which server version changed what.
// server-everything registers some tools lazily and announces them with list_changed, so
// the listing is taken ~0.5 s after the handshake.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const testsDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const modDir = join(testsDir, "node_modules", "@modelcontextprotocol");
const outDir = join(testsDir, "data", "tools");

const servers = [
  { name: "everything", pkg: "server-everything", args: ["stdio"] },
  { name: "memory", pkg: "server-memory", args: [] },
  // filesystem refuses to start without at least one allowed directory.
  { name: "filesystem", pkg: "server-filesystem", args: ["/tmp"] },
];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function pkgVersion(pkg) {
  return JSON.parse(readFileSync(join(modDir, pkg, "package.json"), "utf8")).version;
}

async function listAll(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

async function dump(s) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(modDir, s.pkg, "dist", "index.js"), ...s.args],
    stderr: "ignore",
    // server-memory writes its graph next to itself unless told otherwise.
    env: { ...process.env, MEMORY_FILE_PATH: join("/tmp", `dump-tools-memory-${process.pid}.jsonl`) },
  });
  const client = new Client({ name: "codemcp-dump-tools", version: "0.1.0" });
  await client.connect(transport);
  await sleep(500);
  const tools = await listAll(client);
  const record = {
    server: s.name,
    package: `@modelcontextprotocol/${s.pkg}`,
    version: pkgVersion(s.pkg),
    serverInfo: client.getServerVersion() ?? null,
    dumped_with: `@modelcontextprotocol/sdk ${pkgVersion("sdk")}`,
    tools,
  };
  await client.close();
  mkdirSync(outDir, { recursive: true });
  const path = join(outDir, `${s.name}.json`);
  writeFileSync(path, JSON.stringify(record, null, 2) + "\n");
  console.log(`${s.name}: ${tools.length} tools -> ${path}`);
}

for (const s of servers) {
  await dump(s);
}
