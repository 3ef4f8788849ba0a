// The JavaScript peer of codemcp's execute benchmark: Cloudflare's @cloudflare/codemode in a
// minimal Node MCP host. Usage: node bench/cloudflare/host.mjs <upstream argv...> — speaks MCP
// on stdio and exposes codemode's single `code` tool over the tools of the upstream stdio server.
//
// What is Cloudflare's own code, unmodified: `codeMcpServer` (@cloudflare/codemode/mcp: type
// generation, tool-name sanitising, result unwrapping, the `code` tool, response shaping) and
// `DynamicWorkerExecutor` (@cloudflare/codemode: the generated sandbox module, its tool proxy,
// JSON codec for every call, execution gate, timeout race).
// What is substituted, because it only exists inside workerd:
//  - `cloudflare:workers` (imported by the package's main entry): stub base classes RpcTarget,
//    WorkerEntrypoint, DurableObject (nothing here relies on their runtime behaviour);
//  - the Worker Loader binding (`env.LOADER`): VmWorkerLoader below evaluates the generated
//    module in a fresh node:vm context per execution (Worker Loader starts a fresh Worker per
//    load without an id). Calls from sandbox to host are direct function calls, where workerd
//    would use cross-isolate RPC; there is no CPU limit, only codemode's own timeout race.
//  - codeMcpServer wraps an in-process McpServer; here its InMemoryTransport is piped message by
//    message to a StdioClientTransport, so codemode's own SDK Client talks to the real upstream.
import { register } from 'node:module';
import vm from 'node:vm';

const STUB = 'export class RpcTarget {}\n' +
  'export class WorkerEntrypoint { constructor(ctx, env) { this.ctx = ctx; this.env = env; } }\n' +
  'export class DurableObject { constructor(ctx, env) { this.ctx = ctx; this.env = env; } }\n';
const HOOKS = `export async function resolve(specifier, context, next) {
  if (specifier === 'cloudflare:workers')
    return { url: 'data:text/javascript,' + ${JSON.stringify(encodeURIComponent(STUB))}, shortCircuit: true };
  return next(specifier, context);
}`;
register('data:text/javascript,' + encodeURIComponent(HOOKS));

const { DynamicWorkerExecutor } = await import('@cloudflare/codemode');
const { codeMcpServer } = await import('@cloudflare/codemode/mcp');
const { WorkerEntrypoint } = await import('cloudflare:workers');
const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');

const IMPORT_LINE = 'import { WorkerEntrypoint } from "cloudflare:workers";';
const EXPORT_LINE = 'export default class CodeExecutor';

// Worker Loader stand-in: load() gets the module map DynamicWorkerExecutor generated and returns
// a "worker" whose entrypoint is the module's default export, instantiated in a new vm context.
class VmWorkerLoader {
  load({ mainModule, modules, env }) {
    const src = modules[mainModule];
    if (Object.keys(modules).length !== 1 || !src.includes(IMPORT_LINE) || !src.includes(EXPORT_LINE))
      throw new Error('VmWorkerLoader: unexpected module shape from DynamicWorkerExecutor');
    const timers = new Set();
    const context = vm.createContext({
      console: {}, atob, btoa, clearTimeout,
      setTimeout: (fn, ms) => { const t = setTimeout(fn, ms); timers.add(t); return t; },
    });
    const body = src.replace(IMPORT_LINE, '').replace(EXPORT_LINE, 'return class CodeExecutor');
    const factory = vm.runInContext(`(function (WorkerEntrypoint) {\n${body}\n})`, context,
      { filename: mainModule });
    const Entrypoint = factory(WorkerEntrypoint);
    return {
      getEntrypoint: () => new Entrypoint({}, env ?? {}),
      // Disposing a dynamic Worker ends its isolate; here: drop its pending timeout timers
      // (the context itself is freed whenever V8 next collects it, which can be late).
      [Symbol.dispose]: () => { for (const t of timers) clearTimeout(t); timers.clear(); },
    };
  }
}

const [command, ...args] = process.argv.slice(2);
if (!command) {
  process.stderr.write('usage: host.mjs <upstream command> [args...]\n');
  process.exit(2);
}

// Passed to codeMcpServer as its "server": connect() receives the in-memory server end and joins
// it to the upstream's stdio transport.
const upstream = {
  async connect(inMemory) {
    const stdio = new StdioClientTransport({ command, args, stderr: 'ignore' });
    stdio.onmessage = (m) => inMemory.send(m);
    inMemory.onmessage = (m) => stdio.send(m);
    stdio.onclose = () => inMemory.close();
    await stdio.start();
    await inMemory.start();
  },
};

const server = await codeMcpServer({
  server: upstream,
  executor: new DynamicWorkerExecutor({ loader: new VmWorkerLoader() }),
});
const front = new StdioServerTransport();
front.onclose = () => process.exit(0);
process.stdin.on('end', () => process.exit(0));
await server.connect(front);
