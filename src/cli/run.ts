/**
 * `cachet [PROMPT]` / `cachet run [PROMPT]`: the main job. Parses flags and
 * stdin into turn options and hands them to src/run; nothing else.
 */
import { defineCommand } from "citty";
import type { ToolDefinition } from "../context/types.ts";
import { CachetError } from "../errors.ts";
import { emulateArg, globalArgs, jsonArg } from "./_args.ts";

const args = {
  prompt: { type: "positional", required: false, description: "The prompt; `-` reads stdin to the end. With stdin piped, stdin comes first, then the prompt" },
  model: { type: "string", alias: "m", description: "provider/model (models.dev id), e.g. anthropic/claude-sonnet-4-5" },
  system: { type: "string", alias: "s", description: "System prompt TEXT, or @FILE" },
  tools: { type: "string", description: "JSON file of tool definitions [{name, description, parameters}]" },
  "tool-result": { type: "string", description: "stdin is the result of tool call ID; continues the session" },
  schema: { type: "string", description: "JSON schema FILE or inline JSON: the answer is validated JSON" },
  overlay: { type: "string", description: "Volatile text for this turn only (date, plan, budget), TEXT or @FILE; rendered after the last message" },
  continue: { type: "boolean", alias: "c", description: "Continue the latest session" },
  session: { type: "string", description: "Continue session ID or NAME (a new NAME starts a named session)" },
  fork: { type: "boolean", description: "Fork the chosen session (default: the latest) and continue in the fork; --fork=ID forks ID" },
  "max-tokens": { type: "string", description: "Maximum output tokens" },
  temperature: { type: "string", description: "Sampling temperature" },
  stream: { type: "boolean", default: true, negativeDescription: "Wait for the whole answer instead of streaming", description: "Stream the answer" },
  "base-url": { type: "string", description: "Base URL for the provider's SDK (OpenAI-compatible servers, proxies)" },
  option: { type: "string", alias: "o", description: "Provider option key=value (repeatable); value parsed as JSON when it can be" },
  cache: { type: "enum", options: ["auto", "off"] as string[], description: "Cache strategies: auto (default) or off (for comparisons)" },
  "cache-ttl": { type: "enum", options: ["5m", "1h"] as string[], description: "Breakpoint TTL where the provider offers a choice (default 5m)" },
  "stdin-encoding": { type: "enum", options: ["strict", "replace"] as string[], description: "Invalid UTF-8 on stdin: strict (error, default) or replace (U+FFFD)" },
  "idle-timeout": { type: "string", description: "Seconds without content before a stream counts as stalled (default 120)" },
  retries: { type: "string", description: "Retries of a retryable provider error before any output (default 2)" },
  ...jsonArg,
  ...emulateArg,
  ...globalArgs,
} as const;

export default defineCommand({
  meta: { name: "run", description: "Send a prompt (and stdin) to a model and stream the answer" },
  args,
  async run({ args: a, rawArgs }) {
    const { readStdin, mergeInput } = await import("../run/stdin.ts");
    const { runCommand } = await import("../run/command.ts");
    const forkTarget = rawArgs.find((r) => r.startsWith("--fork="))?.slice("--fork=".length);
    const prompt = a.prompt === "-" ? undefined : a.prompt;
    const stdin = await readStdin({
      force: a.prompt === "-",
      firstByteWaitMs: 2_000,
      encoding: (a["stdin-encoding"] as "strict" | "replace" | undefined) ?? "strict",
      maxBytes: Number(process.env.CACHET_MAX_STDIN_BYTES ?? 1 << 30),
    });
    const toolResultId = a["tool-result"];
    const text = toolResultId ? prompt : mergeInput(stdin.text, prompt);
    if (toolResultId && stdin.text === undefined) {
      throw new CachetError("MISSING_ARGUMENT", `--tool-result ${toolResultId} needs the tool's result on stdin`, { hint: `e.g. ./tool | cachet --tool-result ${toolResultId}` });
    }
    const exitCode = await runCommand({
      prompt: text,
      stdinTimedOut: stdin.timedOut,
      toolResult: toolResultId ? { id: toolResultId, content: stdin.text! } : undefined,
      model: a.model,
      system: a.system === undefined ? undefined : [await textOrFile(a.system, "--system")],
      tools: a.tools === undefined ? undefined : await readTools(a.tools),
      schemaArg: a.schema,
      overlay: a.overlay === undefined ? undefined : await textOrFile(a.overlay, "--overlay"),
      session: forkTarget ? { mode: "named", ref: forkTarget } : a.session ? { mode: "named", ref: a.session } : a.continue || toolResultId ? { mode: "continue" } : { mode: "new" },
      fork: a.fork === true || forkTarget !== undefined,
      maxTokens: intFlag(a["max-tokens"], "--max-tokens", 1),
      temperature: numberFlag(a.temperature, "--temperature"),
      stream: a.stream !== false,
      baseUrl: a["base-url"],
      providerOptions: parseOptions(rawArgs),
      cacheMode: (a.cache as "auto" | "off" | undefined) ?? undefined,
      cacheTtl: (a["cache-ttl"] as "5m" | "1h" | undefined) ?? undefined,
      idleMs: (numberFlag(a["idle-timeout"], "--idle-timeout") ?? 120) * 1000,
      retries: intFlag(a.retries, "--retries", 0) ?? 2,
      json: a.json === true,
      emulate: a.emulate === true,
      quiet: a.quiet === true,
    });
    if (exitCode !== 0) process.exit(exitCode);
  },
});

/** `TEXT` or `@FILE`. */
async function textOrFile(value: string, flag: string): Promise<string> {
  if (!value.startsWith("@")) return value;
  const path = value.slice(1);
  const file = Bun.file(path);
  if (!(await file.exists())) throw new CachetError("BAD_FLAG", `${flag} @${path}: no such file`, { hint: `pass text, or @FILE with an existing file` });
  const { decodeUtf8 } = await import("../run/stdin.ts");
  try {
    return decodeUtf8(new Uint8Array(await file.arrayBuffer()), "strict");
  } catch (cause) {
    throw new CachetError("INPUT_INVALID", `${flag} @${path}: ${(cause as Error).message.replace(/^stdin/, "file")}`, { hint: "convert the file to UTF-8" });
  }
}

async function readTools(path: string): Promise<ToolDefinition[]> {
  const file = Bun.file(path);
  if (!(await file.exists())) throw new CachetError("BAD_FLAG", `--tools ${path}: no such file`, { hint: "pass a JSON file with an array of {name, description, parameters}" });
  let data: unknown;
  try {
    data = JSON.parse(await file.text());
  } catch (cause) {
    throw new CachetError("INPUT_INVALID", `--tools ${path}: not JSON: ${(cause as Error).message}`, { hint: "fix the JSON syntax" });
  }
  const { parseTools } = await import("../context/tools.ts");
  return parseTools(data, path);
}

function parseOptions(rawArgs: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i < rawArgs.length; i++) {
    const arg = rawArgs[i]!;
    let pair: string | undefined;
    if (arg === "-o" || arg === "--option") pair = rawArgs[++i];
    else if (arg.startsWith("--option=")) pair = arg.slice(9);
    else if (arg.startsWith("-o") && arg.length > 2 && !arg.startsWith("--")) pair = arg.slice(2).replace(/^=/, "");
    if (pair === undefined) continue;
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new CachetError("BAD_FLAG", `-o ${pair}: expected key=value`, { hint: "e.g. -o top_p=0.9 -o reasoning_effort=low" });
    const key = pair.slice(0, eq);
    const raw = pair.slice(eq + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // a plain string value
    }
    out[key] = value;
  }
  return out;
}

function numberFlag(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < 0) throw new CachetError("BAD_FLAG", `${flag} ${value}: expected a non-negative number`, { hint: "run `cachet run --help` for the flags and their values" });
  return n;
}

function intFlag(value: string | undefined, flag: string, min: number): number | undefined {
  const n = numberFlag(value, flag);
  if (n !== undefined && (!Number.isInteger(n) || n < min)) throw new CachetError("BAD_FLAG", `${flag} ${value}: expected an integer ≥ ${min}`, { hint: "run `cachet run --help` for the flags and their values" });
  return n;
}
