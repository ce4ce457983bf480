/**
 * `cachet plugins [list|add|remove|update|new|test] [ARG] [--json]`:
 * - `list` (default): the loaded plugins, what each registered, the installed
 *   ones with version and integrity, and the plugins that failed to load;
 * - `add SOURCE`: install from a path, `npm-name[@version]` or a tarball URL;
 * - `remove NAME`, `update [NAME]`: uninstall, or re-install from the recorded source;
 * - `new NAME`: write a ready plugin project into ./NAME;
 * - `test FILE`: run the plugin contract kit on a plugin, offline.
 * The work is in src/plugin (install.ts, scaffold.ts, test-plugin.ts).
 */
import { defineCommand } from "citty";
import { CachetError, EXIT } from "../errors.ts";
import { printable } from "../printable.ts";
import { globalArgs, jsonArg } from "./_args.ts";
import { stdout } from "../stdout.ts";
import type { PluginUpdate } from "../plugin/install.ts";

/** The words of the ACTION positional (`cachet help plugins ACTION` checks them too). */
export const actions = ["list", "add", "remove", "update", "new", "test"] as const;
type Action = (typeof actions)[number];

/** What each action's argument is; `required` ones fail without it. */
const ARGUMENT: Record<Action, { name: string; required: boolean } | undefined> = {
  list: undefined,
  add: { name: "SOURCE (a path, npm-name[@version] or tarball URL)", required: true },
  remove: { name: "NAME", required: true },
  update: { name: "NAME", required: false },
  new: { name: "NAME", required: true },
  test: { name: "FILE", required: true },
};

export default defineCommand({
  meta: { name: "plugins", description: "List, add, remove, update, scaffold and test plugins" },
  args: {
    action: { type: "positional", required: false, description: "list (default), add SOURCE, remove NAME, update [NAME], new NAME, test FILE" },
    target: { type: "positional", required: false, description: "SOURCE, NAME or FILE, per action" },
    ...jsonArg,
    ...globalArgs,
  },
  async run({ args }) {
    const action = (args.action ?? "list") as Action;
    if (!actions.includes(action)) {
      throw new CachetError("UNKNOWN_COMMAND", `unknown action "${action}" for \`cachet plugins\``, { hint: `use ${actions.join(", ")}` });
    }
    const argument = ARGUMENT[action];
    const target = args.target as string | undefined;
    if (argument?.required && !target) {
      throw new CachetError("MISSING_ARGUMENT", `\`cachet plugins ${action}\` needs ${argument.name}`, { hint: `e.g. cachet plugins ${action} ${action === "add" ? "./acme" : action === "test" ? "dist/index.js" : "acme"}` });
    }
    if (!argument && target !== undefined) {
      throw new CachetError("EXTRA_WORD", `\`cachet plugins ${action}\` takes no word "${target}"`, { hint: "run `cachet plugins --help` for what each action takes" });
    }
    const out = (line: string) => stdout().write(`${line}\n`);
    const json = (value: unknown) => out(JSON.stringify(value));
    const { info } = await import("../log.ts");
    // The working directory is read only when a relative path needs it: it may have been removed since cachet started
    // there (a URL, an absolute path and `update`'s recorded sources, absolute paths or package names, need none).
    const { baseFor, workingDirectoryExists } = await import("../working-dir.ts");
    const cwd = () => (target !== undefined && action !== "update" && !/^https?:\/\//.test(target) ? baseFor(target) : workingDirectoryExists() ? process.cwd() : "/");
    const options = {
      env: process.env,
      fetch,
      get cwd() {
        return cwd();
      },
    };

    switch (action) {
      case "list":
        return list(args.json === true);
      case "add": {
        const { addPlugin } = await import("../plugin/install.ts");
        const record = await addPlugin(target!, options);
        if (args.json) json(record);
        else await info(`installed ${record.name}@${record.version} (plugin API ${record.api}, ${record.integrity.slice(0, 20)}…); it loads from the next run`);
        return;
      }
      case "remove": {
        const { removePlugin } = await import("../plugin/install.ts");
        const record = await removePlugin(target!, options);
        if (args.json) json({ removed: record });
        else await info(`removed ${record.name}@${record.version}`);
        return;
      }
      case "update": {
        const { updatePlugins } = await import("../plugin/install.ts");
        const updated = await updatePlugins(target, options);
        if (args.json) json({ updated });
        else if (updated.length === 0) await info("no installed plugins");
        else for (const u of updated) await info(`${u.name}: ${updateLine(u)}`);
        return;
      }
      case "new": {
        const { scaffoldPlugin, SCAFFOLD_STEPS } = await import("../plugin/scaffold.ts");
        const project = await scaffoldPlugin(target!, cwd());
        if (args.json) json(project);
        else {
          for (const file of project.files) out(`${project.dir}/${file}`);
          await info(`next: cd ${project.dir} && ${SCAFFOLD_STEPS.join(" && ")}   (the build runs bun: have it on PATH, or npm i -D bun)`);
        }
        return;
      }
      case "test": {
        const { testPlugin } = await import("../plugin/test-plugin.ts");
        const report = await testPlugin(target!, { cwd: cwd(), env: process.env });
        if (args.json) json(report);
        else {
          for (const error of report.loadErrors) out(`FAIL load  ${error}`);
          for (const c of report.checks) out(`${c.ok ? "ok  " : "FAIL"} ${c.provider}: ${c.check}${c.detail ? ` — ${c.detail}` : ""}`);
          const failed = report.checks.filter((c) => !c.ok).length;
          out(report.ok ? `passed: ${report.plugin}, ${report.checks.length} of ${report.checks.length} checks` : `failed: ${report.plugin}, ${failed} of ${report.checks.length} checks failed${report.loadErrors.length ? `, ${report.loadErrors.length} load error${report.loadErrors.length === 1 ? "" : "s"}` : ""}`);
        }
        if (!report.ok) process.exitCode = EXIT.failure;
        return;
      }
    }
  },
});

/** How `update` reports one plugin: a new version, the same version rebundled differently, or nothing changed. */
function updateLine(u: PluginUpdate): string {
  const integrity = u.integrity.from === u.integrity.to ? "" : `, integrity ${u.integrity.from.slice(0, 20)}… → ${u.integrity.to.slice(0, 20)}…`;
  if (u.from !== u.to) return `${u.from} → ${u.to}${u.changed ? "" : " (the bundle is the same)"}`;
  return u.changed ? `${u.to} (same version, bundle changed${integrity})` : `${u.to} (unchanged)`;
}

async function list(asJson: boolean): Promise<void> {
  const { loadConfig } = await import("../config.ts");
  const { loadPlugins } = await import("../plugin/loader.ts");
  const config = await loadConfig();
  const host = await loadPlugins({ config });
  const installed = config.installed_plugins ?? [];
  const plugins = host.plugins.map((p) => ({
    ...p,
    ...(installed.find((r) => r.file === p.source) ? { installed: installed.find((r) => r.file === p.source) } : {}),
    providers: p.providers.map((id) => ({ id, protocol: host.providers.get(id)!.value.protocol, env: host.providers.get(id)!.value.env })),
  }));
  if (asJson) {
    stdout().write(`${JSON.stringify({ plugins, failures: host.failures })}\n`);
  } else {
    for (const p of plugins) {
      const record = "installed" in p ? p.installed : undefined;
      stdout().write(`${printable(`${p.name}  (${record ? `${record.name}@${record.version}, ${record.source}` : p.source})`)}\n`);
      for (const pr of p.providers) stdout().write(`  provider  ${printable(pr.id).padEnd(18)} ${pr.protocol.padEnd(20)} ${printable(pr.env.join(", "))}\n`);
      for (const s of p.strategies) stdout().write(`  strategy  ${printable(s)}\n`);
      if (p.hooks.length) stdout().write(`  hooks     ${[...new Set(p.hooks)].join(", ")}\n`);
    }
    for (const f of host.failures) stdout().write(`FAILED ${printable(`${f.plugin}: ${f.message}`)}\n`);
  }
  if (host.failures.length > 0) process.exitCode = EXIT.failure;
}
