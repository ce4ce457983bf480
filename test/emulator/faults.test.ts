/**
 * Fault injection on the wire: what each `x-emulator-fault` value does to the
 * bytes a client receives.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { EmulatorHandle } from "../../src/emulator/index.ts";
import { jsonBody } from "../../src/emulator/stream-writer.ts";
import { emulator, post } from "./_helpers.ts";

let emu: EmulatorHandle;
beforeAll(async () => {
  emu = await emulator();
});
afterAll(() => emu.stop());

const anthropicStream = { model: "claude-sonnet-4-6", max_tokens: 100, stream: true, messages: [{ role: "user", content: "hello" }] };

/** Reads a response body for at most `ms`, returning each chunk received. */
async function readFor(response: Response, ms: number): Promise<Uint8Array[]> {
  const reader = response.body!.getReader();
  const chunks: Uint8Array[] = [];
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const next = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now()).then(() => "timeout" as const)]);
    if (next === "timeout" || next.done) break;
    chunks.push(next.value);
  }
  await reader.cancel();
  return chunks;
}

const fault = (value: string) => ({ "x-emulator-fault": value });

describe("faults", () => {
  test("429 carries retry-after; 429:2 fails the first two requests only", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await post(`${emu.url}/v1/chat/completions`, { model: "gpt-5", messages: [{ role: "user", content: "x" }] }, fault("429:2"));
      statuses.push(r.status);
      if (r.status === 429) expect([r.headers.get("retry-after"), r.headers.get("retry-after-ms")]).toEqual(["1", "200"]);
    }
    expect(statuses).toEqual([429, 429, 200]);
  });

  test("503 and 529 answer with the protocol's error body", async () => {
    const openai = await post(`${emu.url}/v1/chat/completions`, { model: "gpt-5", messages: [{ role: "user", content: "x" }] }, fault("503"));
    expect(openai.status).toBe(503);
    expect(openai.json.error.message).toContain("unavailable");
    const anthropic = await post(`${emu.url}/v1/messages`, { ...anthropicStream, stream: false }, fault("529"));
    expect(anthropic.json).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
    const gemini = await post(`${emu.url}/v1beta/models/gemini-2.5-flash:generateContent`, { contents: [] }, fault("429"));
    expect(gemini.json.error.status).toBe("RESOURCE_EXHAUSTED");
  });

  test("error-before: an overloaded_error event before any content; error-after: after all content, without message_stop", async () => {
    const before = await (await fetch(`${emu.url}/v1/messages`, { method: "POST", headers: fault("error-before"), body: JSON.stringify(anthropicStream) })).text();
    expect(before).toContain("event: message_start");
    expect(before).not.toContain("text_delta");
    expect(before).toContain('"type":"overloaded_error"');
    const afterAll = await (await fetch(`${emu.url}/v1/messages`, { method: "POST", headers: fault("error-after"), body: JSON.stringify(anthropicStream) })).text();
    expect(afterAll.indexOf("text_delta")).toBeLessThan(afterAll.indexOf("overloaded_error"));
    expect(afterAll).not.toContain("message_stop");
  });

  test("split-utf8 over the wire: the split events arrive whole and decode (é intact)", async () => {
    const response = await fetch(`${emu.url}/v1/chat/completions`, { method: "POST", headers: fault("split-utf8"), body: JSON.stringify({ model: "gpt-5", stream: true, messages: [{ role: "user", content: "é" }] }) });
    const chunks = await readFor(response, 3_000);
    const events = new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks)).split("\n\n").filter(Boolean);
    expect(events.length).toBeGreaterThan(2);
    expect(events.at(-1)).toBe("data: [DONE]");
    // Where the reads end depends on the machine's load (a busy one merges them): the split itself is checked
    // on the emulator's own writes below, not on the client's reads.
  });

  test("split-utf8 writes each piece in two writes, the first ending inside a multi-byte character (é: 0xc3 | 0xa9)", async () => {
    const json = JSON.stringify({ text: "café" });
    const body = jsonBody(json, "split-utf8");
    if (typeof body === "string") throw new Error("split-utf8 gave a body in one piece");
    const writes: Uint8Array[] = [];
    for await (const piece of body) writes.push(piece);
    const bytes = Buffer.from(json);
    const lead = bytes.indexOf(0xc3);
    expect(writes.map((w) => w.length)).toEqual([lead + 1, bytes.length - lead - 1]);
    expect(writes[0]!.at(-1)).toBe(0xc3);
    expect(writes[1]![0]).toBe(0xa9);
    expect(new TextDecoder().decode(Buffer.concat(writes))).toBe(json);
  });

  test("stall: the start and the first text arrive, then nothing", async () => {
    const response = await fetch(`${emu.url}/v1/messages`, { method: "POST", headers: fault("stall"), body: JSON.stringify(anthropicStream) });
    const text = new TextDecoder().decode(Buffer.concat(await readFor(response, 600)));
    expect(text).toContain("content_block_start");
    expect(text).toContain("text_delta");
    expect(text).not.toContain("message_stop");
  });

  test("chatter: only pings and comments, no content", async () => {
    const response = await fetch(`${emu.url}/v1/messages`, { method: "POST", headers: fault("chatter"), body: JSON.stringify(anthropicStream) });
    const text = new TextDecoder().decode(Buffer.concat(await readFor(response, 800)));
    expect(text.match(/event: ping/g)?.length ?? 0).toBeGreaterThanOrEqual(2);
    expect(text).toContain(": upstream busy");
    expect(text).not.toContain("content_block");
  });

  test("cut on a JSON body: the body ends mid-way, its first half always arrives; 20 cuts in a row end the same way", async () => {
    for (let i = 0; i < 20; i++) {
      const response = await fetch(`${emu.url}/v1/chat/completions`, { method: "POST", headers: fault("cut"), body: JSON.stringify({ model: "gpt-5", messages: [{ role: "user", content: "x" }] }) });
      const text = await response.text();
      expect(text).toStartWith('{"id":"chatcmpl-emu');
      expect(() => JSON.parse(text)).toThrow();
    }
  });

  test("500 answers with the protocol's internal-error body (Anthropic api_error)", async () => {
    const anthropic = await post(`${emu.url}/v1/messages`, { ...anthropicStream, stream: false }, fault("500"));
    expect(anthropic.status).toBe(500);
    expect(anthropic.json).toMatchObject({ type: "error", error: { type: "api_error" } });
    const openai = await post(`${emu.url}/v1/chat/completions`, { model: "gpt-5", messages: [{ role: "user", content: "x" }] }, fault("500"));
    expect(openai.status).toBe(500);
  });

  test("reset: the connection closes before any byte of the response (no status), streaming or not; nothing counted as answered", async () => {
    for (const body of [anthropicStream, { ...anthropicStream, stream: false }]) {
      const error = await fetch(`${emu.url}/v1/messages`, { method: "POST", headers: fault("reset"), body: JSON.stringify(body) }).then(
        () => undefined,
        (e: unknown) => e as { code?: string },
      );
      expect(error?.code).toBe("ECONNRESET");
    }
    const last = emu.requests().at(-1)!;
    expect([last.fault, last.status]).toEqual(["reset", 0]);
  });

  test("hold: no byte until POST /_emulator/release, then the normal answer; a client that goes away is not answered", async () => {
    let arrived = false;
    const held = fetch(`${emu.url}/v1/messages`, { method: "POST", headers: fault("hold"), body: JSON.stringify({ ...anthropicStream, stream: false }) }).then((r) => {
      arrived = true;
      return r.json() as Promise<Record<string, any>>;
    });
    const waiting = () => emu.requests().some((r) => r.fault === "hold" && r.status === 0);
    while (!waiting()) await Bun.sleep(5);
    // The emulator has the request and holds it: a second inspection round-trip still finds no response.
    await fetch(`${emu.url}/_emulator/counters`);
    expect(arrived).toBe(false);
    expect(await (await fetch(`${emu.url}/_emulator/release`, { method: "POST" })).json()).toEqual({ released: 1 });
    expect(await held).toMatchObject({ type: "message", role: "assistant" });
    expect(emu.requests().at(-1)!.status).toBe(200);

    const gone = new AbortController();
    const dropped = fetch(`${emu.url}/v1/messages`, { method: "POST", headers: fault("hold"), body: JSON.stringify(anthropicStream), signal: gone.signal }).catch(() => "aborted");
    while (!emu.requests().some((r, i, all) => i === all.length - 1 && r.fault === "hold" && r.status === 0)) await Bun.sleep(5);
    gone.abort();
    expect(await dropped).toBe("aborted");
    expect(await (await fetch(`${emu.url}/_emulator/release`, { method: "POST" })).json()).toMatchObject({ released: expect.any(Number) });
    expect(emu.requests().at(-1)!.status).toBe(0);
  });

  test("an unknown fault value is a 400 that lists the valid ones", async () => {
    const r = await post(`${emu.url}/v1/chat/completions`, { model: "gpt-5", messages: [{ role: "user", content: "x" }] }, fault("explode"));
    expect(r.status).toBe(400);
    expect(r.json.error.message).toContain("split-utf8");
  });

  test("CACHET_EMULATOR_FAULT from the handle's env applies when no header is sent", async () => {
    const faulty = await emulator({ CACHET_EMULATOR_FAULT: "503:1" });
    const body = { model: "gpt-5", messages: [{ role: "user", content: "x" }] };
    expect((await post(`${faulty.url}/v1/chat/completions`, body)).status).toBe(503);
    expect((await post(`${faulty.url}/v1/chat/completions`, body)).status).toBe(200);
    await faulty.stop();
  });
});
