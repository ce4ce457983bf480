import { afterEach, expect, test } from "bun:test";
import type { ProviderConfig } from "../../src/plugin/index.ts";
import { openaiClients } from "./client.ts";

/** A fetch that answers `{}` and records the headers of each request. */
function recordingFetch(): { fetch: typeof fetch; headers: Headers[] } {
  const headers: Headers[] = [];
  const record = (async (_input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    headers.push(new Headers(init?.headers));
    return new Response("{}", { headers: { "content-type": "application/json" } });
  }) as typeof fetch;
  return { fetch: record, headers };
}

const recorded = recordingFetch();
const config = (over: Partial<ProviderConfig> = {}): ProviderConfig => ({ providerId: "openai", apiKey: "k1", baseUrl: "http://127.0.0.1:9/v1", fetch: recorded.fetch, options: {}, ...over });

afterEach(() => {
  delete process.env.OPENAI_CUSTOM_HEADERS;
});

test("adapters of one key, base URL, fetch and OPENAI_* environment share one client; any of them differing gets another", async () => {
  const clients = openaiClients();
  const first = clients(config());
  expect(clients(config())).toBe(first);
  expect(await first()).toBe(await clients(config())());
  expect(clients(config({ apiKey: "k2" }))).not.toBe(first);
  expect(clients(config({ baseUrl: "http://127.0.0.1:9/other" }))).not.toBe(first);
  expect(clients(config({ fetch: recordingFetch().fetch }))).not.toBe(first);
  // The SDK reads OPENAI_CUSTOM_HEADERS as it is built: the client kept from before would not send the header.
  process.env.OPENAI_CUSTOM_HEADERS = "x-team: blue";
  const withHeaders = clients(config());
  expect(withHeaders).not.toBe(first);
  await (await withHeaders()).post("/chat/completions", { body: {} });
  expect(recorded.headers.at(-1)?.get("x-team")).toBe("blue");
  delete process.env.OPENAI_CUSTOM_HEADERS;
  expect(clients(config())).toBe(first);
  await (await first()).post("/chat/completions", { body: {} });
  expect(recorded.headers.at(-1)?.get("x-team")).toBeNull();
});
