/**
 * Every built-in provider adapter against the local emulator, through the
 * real SDKs and a real loopback socket: streaming and not, a first request
 * and a second one that extends it (so the emulator's cache can answer).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmulator } from "../src/emulator/index.ts";
import { PluginHost } from "../src/plugin/host.ts";
import { promptTokens, type Message, type RequestContext, type StreamEvent } from "../src/plugin/index.ts";
import { collect } from "../test/fixtures/wire/replay.ts";
import { EMULATOR_MODELS } from "./emulator-models.ts";
import { builtinPlugins } from "./index.ts";


let host: PluginHost;
let emulator: { url: string; stop: () => unknown };

beforeAll(async () => {
  process.env.CACHET_HOME ??= mkdtempSync(join(tmpdir(), "cachet-emulator-test-"));
  host = new PluginHost();
  for (const [name, load] of Object.entries(builtinPlugins)) await host.load(((await load()) as { default: unknown }).default, `builtin:${name}`);
  emulator = await startEmulator({ statePath: null });
});

afterAll(async () => {
  await emulator?.stop();
});

describe.each(Object.keys(EMULATOR_MODELS))("%s against the emulator", (id) => {
  const adapter = () => {
    const spec = host.provider(id);
    return host.createAdapter(id, { providerId: id, apiKey: "emulator-key", baseUrl: emulator.url + spec.emulatorPath, fetch, options: {} });
  };

  for (const stream of [true, false]) {
    test(`${stream ? "streaming" : "non-streaming"}: text arrives and usage is known`, async () => {
      const a = adapter();
      const events = await collect(a.send(a.render(context(id, stream, conversation(1))), { signal: AbortSignal.timeout(10_000) }));
      expect(textOf(events).length).toBeGreaterThan(0);
      const finish = events.at(-1)!;
      expect(finish.type).toBe("finish");
      if (finish.type !== "finish") return;
      const usage = a.usage(finish.rawUsage).usage;
      // The second request may be served from the emulator's cache, so the uncached part can be 0.
      expect(promptTokens(usage)).toBeGreaterThan(100);
      expect(usage.output).toBeGreaterThan(0);
    });
  }
});

function textOf(events: StreamEvent[]): string {
  return events.map((e) => (e.type === "text" ? e.delta : "")).join("");
}

function conversation(turns: number): Message[] {
  const out: Message[] = [];
  for (let k = 1; k <= turns; k++) {
    out.push({ id: `u${k}`, role: "user", content: [{ type: "text", text: `Question ${k}: name a colour.` }] });
    if (k < turns) out.push({ id: `a${k}`, role: "assistant", content: [{ type: "text", text: "Blue." }] });
  }
  return out;
}

function context(id: string, stream: boolean, messages: Message[]): RequestContext {
  return {
    model: EMULATOR_MODELS[id]!,
    provider: id,
    prefix: { system: [{ id: "sys", text: "You answer in one word. ".repeat(200) }], tools: [], fingerprint: "0000000000000000" },
    summary: [],
    messages,
    generation: { maxTokens: 64, stream, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m" },
  };
}
