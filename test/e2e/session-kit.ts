/**
 * Helpers for whole-session e2e tests: an emulator in its own process (so the
 * wire bodies it received can be read back), the ledger rows of a session,
 * a large varied system prompt, and the cache-relevant parts of a wire body.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canonicalJson } from "../../src/wire/canonical-json.ts";
import { BINARY, cachet, type RunOptions, homeEnv } from "./harness.ts";

type Raw = Record<string, any>;

/** An emulator served by `cachet emulate --port 0` in a child process. */
export interface EmulatorProcess {
  /** Root URL, e.g. http://127.0.0.1:41234. */
  url: string;
  /** Wire bodies received so far, oldest first (only model calls, not count_tokens). */
  bodies(): Promise<Raw[]>;
  /** Full received records (body, headers, usage), oldest first. */
  received(): Promise<Raw[]>;
  stop(): void;
}

/** Starts `cachet emulate --port 0` with its own state under `home`; `env` reaches the emulator (e.g. CACHET_EMULATOR_SCRIPT). */
export async function startEmulatorProcess(home: string, env: Record<string, string> = {}): Promise<EmulatorProcess> {
  const proc = Bun.spawn([BINARY, "emulate", "--port", "0"], {
    env: { ...homeEnv(home), ...env },
    stdout: "pipe",
    stderr: "ignore",
  });
  const reader = proc.stdout.getReader();
  let first = "";
  for (let i = 0; i < 200 && !first.includes("\n"); i++) {
    const chunk = await reader.read();
    if (chunk.done) break;
    first += new TextDecoder().decode(chunk.value);
  }
  reader.releaseLock();
  const url = first.split("\n")[0]!.trim();
  if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(url)) {
    proc.kill();
    throw new Error(`the emulator did not print its URL: ${JSON.stringify(first)}`);
  }
  const received = async (): Promise<Raw[]> => {
    const json = (await (await fetch(`${url}/_emulator/requests`)).json()) as { requests?: Raw[] } | Raw[];
    const list = Array.isArray(json) ? json : (json.requests ?? []);
    return list.filter((r) => !String(r.path ?? r.url ?? "").includes("count_tokens"));
  };
  return {
    url,
    received,
    bodies: async () => (await received()).map((r) => r.body as Raw),
    stop: () => proc.kill(),
  };
}

/** Base URL path of each provider on the emulator (ProviderSpec.emulatorPath), and its key variable. */
export const EMULATOR_PATHS: Record<string, { path: string; keyEnv: string }> = {
  anthropic: { path: "/anthropic", keyEnv: "ANTHROPIC_API_KEY" },
  openai: { path: "/openai/v1", keyEnv: "OPENAI_API_KEY" },
  "openai-responses": { path: "/openai/v1", keyEnv: "OPENAI_API_KEY" },
  google: { path: "/google", keyEnv: "GEMINI_API_KEY" },
  deepseek: { path: "/deepseek", keyEnv: "DEEPSEEK_API_KEY" },
};

/** Flags and env that point a run of `model` at an emulator process. */
export function against(emulator: EmulatorProcess, model: string): { args: string[]; env: Record<string, string> } {
  const provider = model.split("/")[0]!;
  const target = EMULATOR_PATHS[provider];
  if (!target) throw new Error(`no emulator path for ${provider}`);
  return { args: ["--base-url", `${emulator.url}${target.path}`], env: { [target.keyEnv]: "test-key", GOOGLE_API_KEY: "test-key" } };
}

/**
 * About `sentences` × 28 tokens of varied, deterministic prose (numbers,
 * names and words mixed so the BPE count is close to the word count).
 */
export function variedText(sentences: number, seed = 7): string {
  const words = [
    "ledger", "harbor", "copper", "violet", "granite", "meadow", "lantern", "orchard", "signal", "quartz", "thimble", "saddle",
    "canyon", "ember", "falcon", "juniper", "mosaic", "nimbus", "obsidian", "pepper", "quiver", "rustle", "sapphire", "tundra",
    "umber", "velvet", "willow", "zephyr", "anchor", "bramble", "cobalt", "dune", "estuary", "fjord", "glacier", "hollow",
  ];
  let state = seed;
  const next = (n: number) => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return (state >>> 8) % n;
  };
  const out: string[] = [];
  for (let s = 0; s < sentences; s++) {
    const parts: string[] = [];
    for (let w = 0; w < 18; w++) parts.push(words[next(words.length)]!);
    out.push(`Rule ${s + 1}: the ${parts.slice(0, 6).join(" ")} keeps ${next(9_000) + 100} ${parts.slice(6, 12).join(" ")}, never ${parts.slice(12).join(" ")}.`);
  }
  return out.join("\n");
}

/** A system prompt of roughly 2,800 tokens: above every provider's minimum cacheable length. */
export const LARGE_SYSTEM = `You are the archivist of a long-running project. Follow every rule below.\n${variedText(80)}`;

/** A file in a fresh temp directory holding `content`. */
export function tempFile(name: string, content: string): string {
  const dir = mkdtempSync(join(tmpdir(), "cachet-e2e-file-"));
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

/** One ledger row as `cachet export` writes it. */
export type Row = Raw & { id: string; usage: Raw; cacheableMax: number | null; expectedCacheRead: number | null; chain: Raw[] };

/** The `cachet export` lines of a session (default: the latest), by type. */
export async function exportSession(home: string, session?: string): Promise<{ session: Raw; messages: Raw[]; requests: Row[]; lines: Raw[] }> {
  const r = await cachet(["export", ...(session ? [session] : [])], { home });
  if (r.code !== 0) throw new Error(`cachet export failed: ${r.stderr}`);
  const lines = r.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Raw);
  return {
    session: lines.find((l) => l.type === "session")!.session,
    messages: lines.filter((l) => l.type === "message").map((l) => l.message),
    requests: lines.filter((l) => l.type === "request").map((l) => l.request as Row),
    lines,
  };
}

/** Runs the binary and fails with its stderr when it exits non-zero. */
export async function ok(args: string[], options: RunOptions): Promise<{ stdout: string; stderr: string }> {
  const r = await cachet(args, options);
  if (r.code !== 0) throw new Error(`cachet ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r;
}

/** A deep copy of `value` without any `cache_control` key (cache markers are not cache-relevant bytes). */
export function withoutMarkers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutMarkers);
  if (value !== null && typeof value === "object") {
    const out: Raw = {};
    for (const [k, v] of Object.entries(value)) if (k !== "cache_control") out[k] = withoutMarkers(v);
    return out;
  }
  return value;
}

/** The cache-relevant parts of a wire body: the head (system, tools, schema) that must stay identical and the list that must only grow. */
export function cacheParts(protocol: string, body: Raw): { head: string; list: unknown[] } {
  switch (protocol) {
    case "anthropic-messages":
      return { head: canonicalJson(withoutMarkers({ system: body.system, tools: body.tools, output: body.output_format ?? body.output_config })), list: body.messages };
    case "openai-chat":
      return { head: canonicalJson({ tools: body.tools, response_format: body.response_format }), list: body.messages };
    case "openai-responses":
      return { head: canonicalJson({ tools: body.tools, instructions: body.instructions, text: body.text }), list: body.input };
    case "gemini":
      return { head: canonicalJson({ systemInstruction: body.systemInstruction, tools: body.tools, schema: body.generationConfig?.responseJsonSchema }), list: body.contents };
    default:
      throw new Error(`unknown protocol ${protocol}`);
  }
}

/** `list` with the overlay text removed from its last element (as a content part, or the whole element when it held only the overlay). */
export function withoutOverlay(list: unknown[], overlay: string | undefined): unknown[] {
  if (overlay === undefined || list.length === 0) return list;
  const copy = structuredClone(list) as Raw[];
  const last = copy.at(-1)!;
  const key = Array.isArray(last.content) ? "content" : Array.isArray(last.parts) ? "parts" : undefined;
  if (!key) return copy;
  const parts = last[key] as Raw[];
  const index = parts.findIndex((p) => p.text === overlay);
  if (index === -1) throw new Error(`the overlay ${JSON.stringify(overlay)} is not in the last element: ${JSON.stringify(last)}`);
  parts.splice(index, 1);
  if (parts.length === 0) copy.pop();
  return copy;
}
