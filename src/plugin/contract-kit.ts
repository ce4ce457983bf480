/**
 * The plugin contract kit: the checks every provider plugin must pass, run
 * offline through the plugin host (so through the same guards as a real
 * turn) and against the local emulator. `cachet plugins test FILE` runs it
 * on a third-party plugin; plugins/contract.test.ts runs it on every built-in
 * provider — one suite for all, as hono's adapters share one.
 *
 * Checks per provider:
 * - render is deterministic, request N's segments are a byte-identical
 *   prefix of request N+1's, and the overlay sits after the last message;
 * - it streams, and answers without streaming, against the emulator: text
 *   arrives, one `finish` ends it, and `usage()` maps the raw usage to known,
 *   non-zero prompt and output counts;
 * - `usage()` round-trips every documented example the provider declares
 *   (`usageExamples`);
 * - with its cache strategies applied over a 10-turn session, no request has
 *   more than 4 cache markers and every request stays a prefix of the next
 *   (markers stripped), so the cache is read, not rewritten (CASES.md 15, 17).
 */
import type { Message, RequestContext } from "../context/types.ts";
import { canonicalJson } from "../wire/canonical-json.ts";
import type { PluginHost } from "./host.ts";
import type { StreamEvent } from "./stream.ts";
import { USAGE_COUNTS, promptTokens } from "./usage.ts";
import { CACHE_MARKER_KEYS, type WirePath, type WireRequest } from "./wire.ts";

/** The result of one check on one provider. */
export interface ContractCheck {
  provider: string;
  /** What was checked, one line. */
  check: string;
  ok: boolean;
  /** Why it failed, or a note (e.g. no examples declared). */
  detail?: string;
}

/** Options of {@link runContract}. */
export interface ContractOptions {
  /** Root URL of a running emulator (`startEmulator`). */
  emulatorUrl: string;
  /** Model per provider id; default the spec's first `models` entry, else `test-model`. */
  models?: Record<string, string>;
  /** Longest wait for one emulator exchange, ms. Default 20,000. */
  timeoutMs?: number;
}

/** Turns of the cache-strategy session. */
const SESSION_TURNS = 10;
/** Anthropic's (and Bedrock's, Qwen's) limit of cache breakpoints per request. @see providers.md §2 */
const MAX_MARKERS = 4;

/**
 * Runs every check on one provider. Never throws for a failing plugin: each
 * failure is a check with `ok: false` and the guard's one-line message.
 */
export async function runContract(host: PluginHost, providerId: string, options: ContractOptions): Promise<ContractCheck[]> {
  const spec = host.provider(providerId);
  const model = options.models?.[providerId] ?? spec.models?.[0] ?? "test-model";
  const adapter = () =>
    host.createAdapter(providerId, { providerId, apiKey: "cachet-contract-kit", baseUrl: options.emulatorUrl + spec.emulatorPath, fetch, options: {} });
  const checks: ContractCheck[] = [];
  const run = async (check: string, body: () => void | string | Promise<void | string>) => {
    try {
      const note = await body();
      checks.push({ provider: providerId, check, ok: true, ...(note ? { detail: note } : {}) });
    } catch (error) {
      checks.push({ provider: providerId, check, ok: false, detail: (error as Error).message });
    }
  };

  await run("render is deterministic: the same context gives the same bytes", () => {
    const a = adapter().render(toolContext(providerId, model, 2, "budget: 10"));
    const b = adapter().render(toolContext(providerId, model, 2, "budget: 10"));
    same(canonicalJson(b.body), canonicalJson(a.body), "the body differs between two renders");
    same(canonicalJson(b.segments), canonicalJson(a.segments), "the segments differ between two renders");
  });

  await run("request N is a byte-identical prefix of request N+1; the overlay is after the last message", () => {
    const n = adapter().render(toolContext(providerId, model, 2, "budget: 10"));
    const n1 = adapter().render(toolContext(providerId, model, 3, "budget: 9"));
    assertPrefix(n, n1);
    const overlay = n.segments.at(-1);
    if (overlay?.kind !== "overlay") throw new Error("the last segment is not the overlay");
    if (!JSON.stringify(at(n.body, overlay.path)).includes("budget: 10")) throw new Error("the overlay segment does not hold the overlay text");
    if (JSON.stringify(n1.body).includes("budget: 10")) throw new Error("the previous request's overlay is still in the next request");
    const [list, index] = overlay.path;
    const messages = n.body[String(list)];
    if (!Array.isArray(messages) || index !== messages.length - 1) throw new Error("the overlay is not inside the last message");
    if (JSON.stringify(n.body.system ?? n.body.systemInstruction ?? n.body.instructions ?? "").includes("budget: 10")) throw new Error("the overlay is in the system prompt");
  });

  for (const stream of [true, false]) {
    await run(`${stream ? "streams" : "answers without streaming"} against the emulator; usage() maps known prompt and output counts`, async () => {
      const a = adapter();
      const events: StreamEvent[] = [];
      for await (const event of a.send(a.render(chatContext(providerId, model, stream)), { signal: AbortSignal.timeout(options.timeoutMs ?? 20_000) })) events.push(event);
      const text = events.map((e) => (e.type === "text" ? e.delta : "")).join("");
      if (text.length === 0) throw new Error("no text arrived");
      const finishes = events.filter((e) => e.type === "finish");
      if (finishes.length !== 1 || events.at(-1)?.type !== "finish") throw new Error(`expected exactly one finish event, last; got ${finishes.length}`);
      const finish = finishes[0]!;
      if (finish.type !== "finish" || finish.rawUsage === undefined) throw new Error("the finish event carries no raw usage");
      const usage = a.usage(finish.rawUsage).usage;
      if (!((promptTokens(usage) ?? 0) > 0)) throw new Error(`usage() gave no prompt tokens for ${JSON.stringify(finish.rawUsage)}`);
      if (!((usage.output ?? 0) > 0)) throw new Error(`usage() gave no output tokens for ${JSON.stringify(finish.rawUsage)}`);
    });
  }

  await run("usage() round-trips the provider's documented usage examples", () => {
    const examples = spec.usageExamples ?? [];
    if (examples.length === 0) return "no usageExamples declared";
    const a = adapter();
    examples.forEach((example, i) => {
      const got = a.usage(example.raw).usage;
      for (const key of USAGE_COUNTS) {
        if (got[key] !== example.usage[key]) {
          throw new Error(`example #${i}${example.source ? ` (${example.source})` : ""}: ${key} is ${String(got[key])}, expected ${String(example.usage[key])}`);
        }
      }
    });
    return `${examples.length} example(s)`;
  });

  await run(`cache strategies over a ${SESSION_TURNS}-turn session: ≤ ${MAX_MARKERS} markers, every request a prefix of the next`, () => {
    const protocol = spec.protocol;
    const strategies = host.strategiesFor(protocol, providerId).map((s) => s.value.id);
    // A provider that declares a lower limit than the 4 every breakpoint provider allows is held to its own.
    const limit = Math.min(MAX_MARKERS, spec.cacheRules?.(model).maxBreakpoints ?? MAX_MARKERS);
    let previous: WireRequest | undefined;
    for (let turn = 1; turn <= SESSION_TURNS; turn++) {
      const context = toolContext(providerId, model, turn, `turn ${turn} of ${SESSION_TURNS}`);
      const wire = host.applyStrategies(adapter().render(context), context, providerId);
      const markers = countMarkers(wire.body);
      if (markers > limit) throw new Error(`turn ${turn}: ${markers} cache markers (at most ${limit})`);
      if (previous) assertPrefix(previous, wire, `turn ${turn - 1} → ${turn}: `);
      previous = wire;
    }
    return strategies.length ? `strategies: ${strategies.join(", ")}` : "no cache strategy applies";
  });

  return checks;
}

/** The arguments a model streamed, byte for byte (a space and a key order a re-serializer would change, case 14). */
export const RAW_ARGUMENTS = '{"unit": "celsius","city":"Tokyo"}';

/** Request N's stable segments (overlay excluded) are request N+1's first segments, with the same bytes once markers are stripped. */
function assertPrefix(n: WireRequest, n1: WireRequest, label = ""): void {
  const stable = n.segments.filter((s) => s.kind !== "overlay");
  if (stable.length === 0) throw new Error(`${label}the request has no segments`);
  for (const [i, segment] of stable.entries()) {
    const next = n1.segments[i];
    if (!next || canonicalJson(next.path) !== canonicalJson(segment.path) || next.nodeId !== segment.nodeId) {
      throw new Error(`${label}segment #${i} (${segment.nodeId}) moved in the next request`);
    }
    if (canonicalJson(stripMarkers(at(n1.body, next.path))) !== canonicalJson(stripMarkers(at(n.body, segment.path)))) {
      throw new Error(`${label}segment #${i} (${segment.nodeId}) renders to other bytes in the next request`);
    }
  }
}

function at(body: unknown, path: WirePath): unknown {
  let node = body;
  for (const key of path) node = (node as Record<string | number, unknown> | undefined)?.[key];
  return node;
}

function stripMarkers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripMarkers);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => !CACHE_MARKER_KEYS.includes(k)).map(([k, v]) => [k, stripMarkers(v)]));
}

function countMarkers(value: unknown): number {
  if (Array.isArray(value)) return value.reduce<number>((n, v) => n + countMarkers(v), 0);
  if (value === null || typeof value !== "object") return 0;
  let n = 0;
  for (const [k, v] of Object.entries(value)) n += CACHE_MARKER_KEYS.includes(k) ? 1 : countMarkers(v);
  return n;
}

function same(actual: string, expected: string, message: string): void {
  if (actual !== expected) throw new Error(message);
}

/**
 * A session of `turns` tool round trips (user asks, the model calls
 * `get_weather` with {@link RAW_ARGUMENTS}, the result, an answer), ending
 * with a new question; system parts and one tool in the stable prefix.
 */
export function toolContext(provider: string, model: string, turns: number, overlay?: string): RequestContext {
  const messages: Message[] = [];
  for (let k = 1; k <= turns; k++) {
    messages.push({ id: `u${k}`, role: "user", content: [{ type: "text", text: `Weather in Tokyo, question ${k}?` }] });
    messages.push({ id: `a${k}`, role: "assistant", content: [{ type: "text", text: "Let me check." }, { type: "tool_use", id: `call_${k}`, name: "get_weather", arguments: RAW_ARGUMENTS }] });
    messages.push({ id: `r${k}`, role: "user", content: [{ type: "tool_result", toolUseId: `call_${k}`, content: `{"temp":${20 + k}}` }] });
    messages.push({ id: `b${k}`, role: "assistant", content: [{ type: "text", text: `It is ${20 + k} °C.` }] });
  }
  messages.push({ id: `u${turns + 1}`, role: "user", content: [{ type: "text", text: `Weather in Tokyo, question ${turns + 1}?` }] });
  return {
    model,
    provider,
    prefix: {
      system: [
        { id: "sys-1", text: "You are a weather assistant. ".repeat(80) },
        { id: "sys-2", text: "Answer in one sentence." },
      ],
      tools: [
        {
          name: "get_weather",
          description: "Current weather for a city",
          parameters: { type: "object", properties: { unit: { type: "string", enum: ["celsius", "fahrenheit"] }, city: { type: "string" } }, required: ["city", "unit"] },
        },
      ],
      fingerprint: "0000000000000000",
    },
    summary: [],
    messages,
    ...(overlay === undefined ? {} : { overlay }),
    generation: { maxTokens: 256, temperature: 0, stream: true, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m" },
  };
}

/** One plain question after a long system prompt (long enough for every provider's minimum cacheable length). */
function chatContext(provider: string, model: string, stream: boolean): RequestContext {
  return {
    model,
    provider,
    prefix: { system: [{ id: "sys", text: "You answer in one word. ".repeat(200) }], tools: [], fingerprint: "0000000000000000" },
    summary: [],
    messages: [{ id: "u1", role: "user", content: [{ type: "text", text: "Name a colour." }] }],
    generation: { maxTokens: 64, stream, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m" },
  };
}
