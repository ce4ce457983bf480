/**
 * `cachet probe FILE [--emulate] [--model M ...] [--cache auto|off|both] [--json]`:
 * runs a scenario file through the run command's pipeline and prints a
 * per-call cache table (or a JSON document that is byte-identical across
 * runs), with a side-by-side cost forecast for several models or cache settings.
 */
import { defineCommand } from "citty";
import { CachetError } from "../errors.ts";
import { emulateArg, globalArgs, jsonArg } from "./_args.ts";
import { stdout } from "../stdout.ts";

const args = {
  file: { type: "positional", required: true, description: "Scenario file (JSON): models, system, tools, schema, answers, steps" },
  model: { type: "string", alias: "m", description: "provider/model to run instead of the scenario's (repeatable: one table each, then a comparison)" },
  cache: { type: "enum", options: ["auto", "off", "both"] as string[], description: "Cache strategies: auto, off, or both side by side (default: the scenario's, else auto)" },
  ...jsonArg,
  ...emulateArg,
  ...globalArgs,
} as const;

export default defineCommand({
  meta: { name: "probe", description: "Run a multi-turn cache experiment from a scenario file" },
  args,
  async run({ args: a, rawArgs }) {
    const { loadScenario } = await import("../probe/scenario.ts");
    const { runProbe } = await import("../probe/run-probe.ts");
    const { probeReport } = await import("../probe/probe-report.ts");
    const { verbose, warn } = await import("../log.ts");
    const scenario = loadScenario(a.file);
    const cache = a.cache === undefined ? undefined : a.cache === "both" ? (["auto", "off"] as const) : ([a.cache as "auto" | "off"] as const);
    const runs = await runProbe(scenario, {
      emulate: a.emulate === true,
      models: repeatedModels(rawArgs),
      ...(cache ? { cache: [...cache] } : {}),
      notice: (m) => void warn(m),
      turnNotice: (m) => void verbose(m),
    });
    const report = probeReport(scenario.name, a.emulate === true, runs);
    if (a.json) {
      stdout().write(`${JSON.stringify(report, null, 2)}\n`);
    } else {
      const { formatProbe } = await import("../probe/format-probe.ts");
      stdout().write(formatProbe(report));
    }
  },
});

/** Every `--model`/`-m` value in order; citty keeps only the last one. */
function repeatedModels(rawArgs: readonly string[]): string[] {
  const models: string[] = [];
  for (let i = 0; i < rawArgs.length; i++) {
    const arg = rawArgs[i]!;
    if (arg === "--") break;
    let value: string | undefined;
    if (arg === "--model" || arg === "-m") value = rawArgs[++i];
    else if (arg.startsWith("--model=")) value = arg.slice("--model=".length);
    else if (arg.startsWith("-m=")) value = arg.slice(3);
    else continue;
    if (value === undefined || value === "" || value.startsWith("-")) throw new CachetError("BAD_FLAG", "--model needs a provider/model value", { hint: "e.g. --model anthropic/claude-sonnet-4-6 --model openai/gpt-5" });
    if (!models.includes(value)) models.push(value);
  }
  return models;
}
