/**
 * `cachet probe FILE [--emulate] [--model M ...] [--cache auto|off|both] [--json]`:
 * runs a scenario file through the run command's pipeline and prints a
 * per-call cache table (or a JSON document that is byte-identical across
 * runs), with a side-by-side cost forecast for several models or cache settings.
 */
import { defineCommand } from "citty";
import { emulateArg, globalArgs, jsonArg } from "./_args.ts";
import { type ArgvView, flagValues } from "./argv.ts";
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
  async run({ args: a, data }) {
    const { loadScenario } = await import("../probe/scenario.ts");
    const { runProbe } = await import("../probe/run-probe.ts");
    const { probeReport } = await import("../probe/probe-report.ts");
    const { verbose, warn } = await import("../log.ts");
    const scenario = loadScenario(a.file);
    const cache = a.cache === undefined ? undefined : a.cache === "both" ? (["auto", "off"] as const) : ([a.cache as "auto" | "off"] as const);
    const runs = await runProbe(scenario, {
      emulate: a.emulate === true,
      // Every -m in order (citty keeps only the last), each once.
      models: [...new Set(flagValues(data as ArgvView, "model"))],
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
