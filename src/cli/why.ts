/**
 * `cachet why [REQUEST] [--json]`: compares a request with the previous one
 * of its session at the wire level and names the first divergent node and
 * the cause of each miss. Without an argument, the latest request of the latest
 * of cachet's own sessions (a session `cachet proxy` recorded is explained when named).
 */
import { defineCommand } from "citty";
import { globalArgs, jsonArg } from "./_args.ts";
import { stdout } from "../stdout.ts";

export default defineCommand({
  meta: { name: "why", description: "Explain a request's cache hits and misses against the previous one" },
  args: {
    request: { type: "positional", required: false, description: "Ledger request id (r_...) or session id/name (its latest request); default: the latest request of cachet's own latest session" },
    ...jsonArg,
    ...globalArgs,
  },
  async run({ args }) {
    const { whyReport, formatWhy } = await import("../session/why.ts");
    const report = await whyReport(args.request);
    stdout().write(args.json ? `${JSON.stringify(report)}\n` : formatWhy(report));
  },
});
