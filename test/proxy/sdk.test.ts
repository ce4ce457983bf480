/**
 * Acceptance of `cachet proxy`: the official SDKs (@anthropic-ai/sdk, openai
 * chat and responses, @google/genai) pointed at `cachet proxy --emulate` (the
 * compiled binary) run a 10-turn conversation each, streaming and not. Every
 * response is byte-identical to the same call made directly against an
 * emulator with the same state and a fixed clock; every turn is in the ledger
 * of its recorded session with the usage the SDK saw and its exact cost;
 * `cachet why` on the turn where the client changed its system prompt names
 * it; the fake keys appear nowhere in the store or the output.
 */
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { type EmulatorHandle, startEmulator } from "../../src/emulator/index.ts";
import { loadCatalog, resolvePrice } from "../../src/meter/index.ts";
import { openStore } from "../../src/session/store.ts";
import type { LedgerRow } from "../../src/session/types.ts";
import { cachet, cleanHomes, freshHome } from "../e2e/harness.ts";
import { type ProxyProcess, spawnProxy } from "./harness.ts";

const CLOCK = "1780000000000";
const KEYS = { anthropic: "sk-ant-api03-FAKEKEY-proxytest-0001", openai: "sk-proj-FAKEKEY-proxytest-0002", gemini: "AIzaFAKEKEY-proxytest-0003" };
const SYSTEM = `You are a careful assistant for a shipping company. ${"Rules of the house: answer in one line, cite the order id, never guess. ".repeat(120)}`;
const TURNS = 10;
/** Turn (0-based) on which every client changes its system prompt. */
const CHANGED = 6;

let home: string;
let proxy: ProxyProcess;
let direct: EmulatorHandle;
let stopped: { code: number; stdout: string; stderr: string };
const seen: Record<string, { proxied: string[]; direct: string[]; usage: unknown[] }> = {};

/** A fetch that keeps the bytes of every response body it returns. */
function capturing(into: string[]): typeof fetch {
  return (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const response = await fetch(input, init);
    into.push(await response.clone().text());
    return response;
  }) as typeof fetch;
}

function system(turn: number): string {
  return turn >= CHANGED ? `${SYSTEM} Today the depot is closed.` : SYSTEM;
}

type Client = "anthropic" | "openai-chat" | "openai-responses" | "gemini";

/** Runs one client's 10-turn conversation against `base` (proxy or direct); returns the usage it saw per turn. */
async function converse(client: Client, base: { root: string; provider: string }, bodies: string[]): Promise<unknown[]> {
  const usage: unknown[] = [];
  const question = (i: number) => `Question ${i}: where is order ${1000 + i}?`;
  if (client === "anthropic") {
    const sdk = new Anthropic({ apiKey: KEYS.anthropic, baseURL: base.provider, maxRetries: 0, fetch: capturing(bodies) });
    const messages: Anthropic.MessageParam[] = [];
    for (let i = 0; i < TURNS; i++) {
      messages.push({ role: "user", content: [{ type: "text", text: question(i), cache_control: { type: "ephemeral" } }] });
      const request = { model: "claude-sonnet-4-6", max_tokens: 200, system: [{ type: "text" as const, text: system(i), cache_control: { type: "ephemeral" as const } }], messages: structuredClone(messages) };
      const answer = i % 2 === 0 ? await sdk.messages.create(request) : await sdk.messages.stream(request).finalMessage();
      usage.push(answer.usage);
      // The breakpoint moves on to the next question; the block itself stays as it was (markers are not content).
      messages[messages.length - 1] = { role: "user", content: [{ type: "text", text: question(i) }] };
      messages.push({ role: "assistant", content: answer.content.map((b) => ({ type: "text" as const, text: (b as { text: string }).text })) });
    }
  } else if (client === "openai-chat") {
    const sdk = new OpenAI({ apiKey: KEYS.openai, baseURL: `${base.root}/v1`, maxRetries: 0, fetch: capturing(bodies) });
    const messages: OpenAI.ChatCompletionMessageParam[] = [];
    for (let i = 0; i < TURNS; i++) {
      messages.push({ role: "user", content: question(i) });
      const body = { model: "gpt-5", messages: [{ role: "system" as const, content: system(i) }, ...messages] };
      let text = "";
      if (i % 2 === 0) {
        const done = await sdk.chat.completions.create(body);
        text = done.choices[0]!.message.content ?? "";
        usage.push(done.usage);
      } else {
        const stream = await sdk.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
        for await (const chunk of stream) {
          text += chunk.choices[0]?.delta.content ?? "";
          if (chunk.usage) usage.push(chunk.usage);
        }
      }
      messages.push({ role: "assistant", content: text });
    }
  } else if (client === "openai-responses") {
    const sdk = new OpenAI({ apiKey: KEYS.openai, baseURL: `${base.root}/v1`, maxRetries: 0, fetch: capturing(bodies) });
    const input: OpenAI.Responses.ResponseInputItem[] = [];
    for (let i = 0; i < TURNS; i++) {
      input.push({ role: "user", content: question(i) });
      const body = { model: "gpt-5", instructions: system(i), input: structuredClone(input) };
      let text = "";
      if (i % 2 === 0) {
        const done = await sdk.responses.create(body);
        text = done.output_text;
        usage.push(done.usage);
      } else {
        const stream = await sdk.responses.create({ ...body, stream: true });
        for await (const event of stream) {
          if (event.type === "response.output_text.delta") text += event.delta;
          if (event.type === "response.completed") usage.push(event.response.usage);
        }
      }
      input.push({ role: "assistant", content: text });
    }
  } else {
    const sdk = new GoogleGenAI({ apiKey: KEYS.gemini, httpOptions: { baseUrl: base.provider, fetch: capturing(bodies) } as never });
    const contents: { role: string; parts: { text: string }[] }[] = [];
    for (let i = 0; i < TURNS; i++) {
      contents.push({ role: "user", parts: [{ text: question(i) }] });
      const params = { model: "gemini-2.5-flash", contents: structuredClone(contents), config: { systemInstruction: system(i) } };
      let text = "";
      if (i % 2 === 0) {
        const done = await sdk.models.generateContent(params);
        text = done.text ?? "";
        usage.push(done.usageMetadata);
      } else {
        let last: unknown;
        for await (const chunk of await sdk.models.generateContentStream(params)) {
          text += chunk.text ?? "";
          if (chunk.usageMetadata) last = chunk.usageMetadata;
        }
        usage.push(last);
      }
      contents.push({ role: "model", parts: [{ text }] });
    }
  }
  return usage;
}

const CLIENTS: { client: Client; provider: string; path: string }[] = [
  { client: "anthropic", provider: "anthropic", path: "/anthropic" },
  { client: "openai-chat", provider: "openai", path: "/openai" },
  { client: "openai-responses", provider: "openai-responses", path: "/openai" },
  { client: "gemini", provider: "google", path: "/google" },
];

beforeAll(async () => {
  home = freshHome();
  proxy = await spawnProxy(home, ["--emulate"], { CACHET_EMULATOR_CLOCK_MS: CLOCK });
  direct = await startEmulator({ statePath: null, env: { CACHET_EMULATOR_CLOCK_MS: CLOCK } });
  for (const { client, path } of CLIENTS) {
    const entry = { proxied: [] as string[], direct: [] as string[], usage: [] as unknown[] };
    seen[client] = entry;
    entry.usage = await converse(client, { root: proxy.url, provider: proxy.url }, entry.proxied);
    await converse(client, { root: `${direct.url}${path}`, provider: `${direct.url}${path}` }, entry.direct);
  }
  await proxy.recorded(CLIENTS.length * TURNS);
  stopped = await proxy.stop();
}, 120_000);

afterAll(async () => {
  await direct?.stop();
  cleanHomes();
});

function sessionRows(provider: string): LedgerRow[] {
  const store = openStore(join(home, "cachet.db"));
  try {
    const rows = store.ledger().filter((r) => r.provider === provider);
    return rows;
  } finally {
    store.close();
  }
}

describe("cachet proxy --emulate with the official SDKs", () => {
  test.each(CLIENTS)("$client: 10 turns, each response byte-identical to the direct call", ({ client }) => {
    const { proxied, direct: straight } = seen[client]!;
    expect(proxied.length).toBe(TURNS);
    expect(straight.length).toBe(TURNS);
    for (let i = 0; i < TURNS; i++) expect(proxied[i]).toBe(straight[i]!);
    // The conversation did reach the cache: otherwise "byte-identical" would prove little about usage.
    expect(proxied.some((body) => /"(cache_read_input_tokens|cached_tokens|cachedContentTokenCount)":\s*[1-9]/.test(body))).toBe(true);
  });

  test.each(CLIENTS)("$client: every turn in one recorded session with the usage the SDK saw and its exact cost", async ({ client, provider }) => {
    const rows = sessionRows(provider);
    expect(rows.length).toBe(TURNS);
    expect(new Set(rows.map((r) => r.sessionId)).size).toBe(1);
    const { catalog } = await loadCatalog();
    for (let i = 0; i < TURNS; i++) {
      const row = rows[i]!;
      expect(row.status).toBe("ok");
      const expected = expectedUsage(client, seen[client]!.usage[i]);
      expect(row.usage).toMatchObject(expected);
      const rates = resolvePrice(catalog, `${provider === "openai-responses" ? "openai" : provider}/${row.model}`)!.price;
      const cost = ((expected.input ?? 0) * rates.input! + (expected.cacheRead ?? 0) * rates.cache_read! + (expected.cacheWrite5m ?? 0) * (rates.cache_write ?? 0) + (expected.output ?? 0) * rates.output!) / 1e6;
      expect(Math.abs(row.costUsd! - cost)).toBeLessThan(1e-9);
    }
  });

  test.each(CLIENTS)("$client: `cachet why` on the turn that changed the system prompt names it", async ({ provider }) => {
    const rows = sessionRows(provider);
    const why = await cachet(["why", rows[CHANGED]!.id, "--json"], { home });
    expect(why.code).toBe(0);
    const report = JSON.parse(why.stdout) as { divergence: { kind: string } | null; causes: string[] };
    expect(report.divergence?.kind).toBe("system");
    expect(report.causes[0]).toBe("system changed");
    const before = JSON.parse((await cachet(["why", rows[CHANGED - 1]!.id, "--json"], { home })).stdout) as { divergence: unknown; causes: string[] };
    expect(before.divergence).toBeNull();
  });

  test("stats --recorded counts every turn; --by client names each SDK; cachet's own stats stay empty", async () => {
    const recorded = JSON.parse((await cachet(["stats", "--recorded", "--json"], { home })).stdout) as { total: { requests: number; tokens: { cacheRead: number } } };
    expect(recorded.total.requests).toBe(CLIENTS.length * TURNS);
    expect(recorded.total.tokens.cacheRead).toBeGreaterThan(0);
    const own = JSON.parse((await cachet(["stats", "--json"], { home })).stdout) as { total: { requests: number } };
    expect(own.total.requests).toBe(0);
    const byClient = JSON.parse((await cachet(["stats", "--recorded", "--by", "client", "--json"], { home })).stdout) as { groups: { key: string; requests: number }[] };
    const keys = byClient.groups.map((g) => g.key).join(" | ");
    expect(keys).toMatch(/Anthropic\/JS/);
    expect(keys).toMatch(/OpenAI\/JS/);
    expect(byClient.groups.reduce((n, g) => n + g.requests, 0)).toBe(CLIENTS.length * TURNS);
    const sessions = await cachet(["sessions", "--recorded"], { home });
    expect(sessions.stdout.split("\n").filter((l) => l.includes("recorded (")).length).toBe(CLIENTS.length);
  });

  test("no key appears in the store, its files, or anything the proxy printed; the store is the owner's only", async () => {
    expect(stopped.code).toBe(0);
    const files = readdirSync(home).filter((f) => f.startsWith("cachet.db"));
    expect(files.length).toBeGreaterThan(0);
    for (const key of Object.values(KEYS)) {
      expect(stopped.stdout).not.toContain(key);
      expect(stopped.stderr).not.toContain(key);
      for (const file of files) expect(readFileSync(join(home, file)).includes(key)).toBe(false);
    }
    for (const file of files) expect(statSync(join(home, file)).mode & 0o077).toBe(0);
  });
});

/** The normalized counts, from the raw usage the SDK returned, read by hand per protocol. */
function expectedUsage(client: Client, raw: unknown): { input?: number; cacheRead?: number; cacheWrite5m?: number; output?: number } {
  const u = raw as Record<string, number> & Record<string, Record<string, number> | undefined>;
  switch (client) {
    case "anthropic":
      return { input: u.input_tokens, cacheRead: u.cache_read_input_tokens, cacheWrite5m: u.cache_creation_input_tokens, output: u.output_tokens };
    case "openai-chat": {
      const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
      return { input: u.prompt_tokens! - cached, cacheRead: cached, output: u.completion_tokens! };
    }
    case "openai-responses": {
      const cached = u.input_tokens_details?.cached_tokens ?? 0;
      return { input: u.input_tokens! - cached, cacheRead: cached, output: u.output_tokens! };
    }
    case "gemini": {
      const cached = (u.cachedContentTokenCount as number | undefined) ?? 0;
      return { input: u.promptTokenCount! - cached, cacheRead: cached, output: u.candidatesTokenCount! + ((u.thoughtsTokenCount as number | undefined) ?? 0) };
    }
  }
}
