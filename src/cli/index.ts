/**
 * The command table: each name maps to a lazy import of its file, so start-up
 * loads only the command that runs. Descriptions live here too, so the root
 * `--help` imports no command module.
 */
import type { CommandDef } from "citty";
import { moduleOnce } from "../module-once.ts";

/** A command entry: one-line description and its lazy module (`actions`: the words its ACTION positional takes, if it has one). */
export interface CommandEntry {
  description: string;
  load: () => Promise<{ default: CommandDef<any>; actions?: readonly string[] }>;
}

/** Every command, by name. `run` is the default: `cachet [PROMPT]`. */
export const commands: Record<string, CommandEntry> = {
  run: { description: "Send a prompt (and stdin) to a model and stream the answer (default)", load: moduleOnce(() => import("./run.ts")) },
  emulate: { description: "Serve the provider emulator on loopback", load: () => import("./emulate.ts") },
  proxy: { description: "Record any client's LLM traffic: forward it unchanged and meter each request", load: () => import("./proxy.ts") },
  sessions: { description: "List, show or remove sessions", load: () => import("./sessions.ts") },
  export: { description: "Write a session as JSON lines", load: () => import("./export.ts") },
  compact: { description: "Compact a session now: move its older turns into the summary zone", load: () => import("./compact.ts") },
  why: { description: "Explain a request's cache hits and misses against the previous one", load: () => import("./why.ts") },
  cost: { description: "Show a session's cost, per request and per node", load: () => import("./cost.ts") },
  stats: { description: "Tokens, hit rate, cache efficiency and cost over the ledger", load: () => import("./stats.ts") },
  price: { description: "Price one raw provider usage object", load: () => import("./price.ts") },
  prices: { description: "Update the price catalog", load: () => import("./prices.ts") },
  models: { description: "List models with prices, tiers and limits", load: () => import("./models.ts") },
  probe: { description: "Run a multi-turn cache experiment from a scenario file", load: () => import("./probe.ts") },
  schema: { description: "Check a JSON schema against a provider's structured-output contract", load: () => import("./schema.ts") },
  plugins: { description: "List, add, remove, update, scaffold and test plugins", load: () => import("./plugins.ts") },
  daemon: { description: "Start, stop or show the resident daemon that turns run in (a turn starts one)", load: () => import("./daemon.ts") },
};
