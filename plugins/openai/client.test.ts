import { expect, test } from "bun:test";
import type { ProviderConfig } from "../../src/plugin/index.ts";
import { openaiClients } from "./client.ts";

const config = (over: Partial<ProviderConfig> = {}): ProviderConfig => ({ providerId: "openai", apiKey: "k1", baseUrl: "http://127.0.0.1:9/v1", fetch, options: {}, ...over });

test("adapters of one key, base URL and fetch share one client; any of them differing gets another", async () => {
  const clients = openaiClients();
  const first = clients(config());
  expect(clients(config())).toBe(first);
  expect(await first()).toBe(await clients(config())());
  expect(clients(config({ apiKey: "k2" }))).not.toBe(first);
  expect(clients(config({ baseUrl: "http://127.0.0.1:9/other" }))).not.toBe(first);
  // Each client sends through the fetch it was built with.
  const sent: string[] = [];
  const recording = (tag: string) => (async () => (sent.push(tag), new Response("{}", { headers: { "content-type": "application/json" } }))) as unknown as typeof fetch;
  const [a, b] = [clients(config({ fetch: recording("a") })), clients(config({ fetch: recording("b") }))];
  expect(a).not.toBe(first);
  expect(b).not.toBe(a);
  await (await b()).post("/chat/completions", { body: {} });
  await (await a()).post("/chat/completions", { body: {} });
  expect(sent).toEqual(["b", "a"]);
});
