/**
 * `cachet plugins [list] [--json]`: the loaded plugins, what each registered,
 * and the plugins that failed to load (with the reason).
 */
import { defineCommand } from "citty";
import { CachetError } from "../errors.ts";
import { globalArgs, jsonArg } from "./_args.ts";

const ACTIONS = ["list"] as const;

export default defineCommand({
  meta: { name: "plugins", description: "List loaded plugins, their providers and strategies, and load errors" },
  args: {
    action: { type: "positional", required: false, description: "list (default)" },
    ...jsonArg,
    ...globalArgs,
  },
  async run({ args }) {
    const action = args.action ?? "list";
    if (!(ACTIONS as readonly string[]).includes(action)) {
      throw new CachetError("UNKNOWN_COMMAND", `unknown action "${action}" for \`cachet plugins\``, { hint: `use ${ACTIONS.join(", ")}` });
    }
    const { loadConfig } = await import("../config.ts");
    const { loadPlugins } = await import("../plugin/loader.ts");
    const host = await loadPlugins({ config: await loadConfig() });
    const plugins = host.plugins.map((p) => ({
      ...p,
      providers: p.providers.map((id) => ({ id, protocol: host.providers.get(id)!.value.protocol, env: host.providers.get(id)!.value.env })),
    }));
    if (args.json) {
      process.stdout.write(`${JSON.stringify({ plugins, failures: host.failures })}\n`);
    } else {
      for (const p of plugins) {
        process.stdout.write(`${p.name}  (${p.source})\n`);
        for (const pr of p.providers) process.stdout.write(`  provider  ${pr.id.padEnd(18)} ${pr.protocol.padEnd(20)} ${pr.env.join(", ")}\n`);
        for (const s of p.strategies) process.stdout.write(`  strategy  ${s}\n`);
        if (p.hooks.length) process.stdout.write(`  hooks     ${[...new Set(p.hooks)].join(", ")}\n`);
      }
      for (const f of host.failures) process.stdout.write(`FAILED ${f.plugin}: ${f.message}\n`);
    }
    if (host.failures.length > 0) process.exitCode = 1;
  },
});
