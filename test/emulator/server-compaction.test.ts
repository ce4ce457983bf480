/**
 * Anthropic's server-side compaction in the emulator (src/emulator/server-compaction.ts,
 * https://platform.claude.com/docs/en/build-with-claude/compaction): refused without
 * its beta header, on a model the page does not list, or with a trigger below
 * 50,000; past the trigger, a compaction block leads the answer, the top-level usage
 * is the answer's pass and `usage.iterations` lists both passes; a later request is
 * read from its compaction block on.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { EmulatorHandle } from "../../src/emulator/index.ts";
import { emulator, post, tokens } from "./_helpers.ts";

let emu: EmulatorHandle;
beforeAll(async () => {
  emu = await emulator();
});
afterAll(() => emu.stop());

const BETA = { "anthropic-beta": "compact-2026-01-12" };
const edit = (trigger?: number) => ({ edits: [{ type: "compact_20260112", ...(trigger !== undefined ? { trigger: { type: "input_tokens", value: trigger } } : {}) }] });
const system = [{ type: "text", text: tokens(3000, "rule"), cache_control: { type: "ephemeral" } }];
const body = (messages: unknown[], trigger?: number, model = "claude-sonnet-4-6") => ({ model, max_tokens: 100, system, messages, context_management: edit(trigger) });

test("refused without the beta header, on a model the page does not list, and with a trigger below 50,000", async () => {
  const messages = [{ role: "user", content: "hi" }];
  const cases: [unknown, Record<string, string>, string][] = [
    [body(messages), {}, "requires the beta header anthropic-beta: compact-2026-01-12"],
    [body(messages, undefined, "claude-haiku-4-5"), BETA, "compaction is not supported for model claude-haiku-4-5"],
    [body(messages, 10_000), BETA, "trigger.value: must be at least 50000"],
  ];
  for (const [request, headers, message] of cases) {
    const r = await post(`${emu.url}/anthropic/v1/messages`, request, headers);
    expect({ status: r.status, type: r.json.error.type, message: r.json.error.message.includes(message) }).toEqual({ status: 400, type: "invalid_request_error", message: true });
  }
  // Under the trigger nothing is compacted and no iterations are reported.
  const under = await post(`${emu.url}/anthropic/v1/messages`, body(messages), BETA);
  expect(under.status).toBe(200);
  expect(under.json.content[0].type).toBe("text");
  expect(under.json.usage.iterations).toBeUndefined();
});

test("past the trigger: a compaction block first, top-level usage is the answer's pass, iterations hold both; the next request is read from the block on", async () => {
  const messages = [
    { role: "user", content: tokens(30_000, "harbor") },
    { role: "assistant", content: "noted" },
    { role: "user", content: tokens(30_000, "lantern") },
  ];
  const r = await post(`${emu.url}/anthropic/v1/messages`, body(messages, 50_000), BETA);
  expect(r.status).toBe(200);
  const [block, text] = r.json.content;
  expect(block.type).toBe("compaction");
  expect(block.content).toStartWith("Summary of the conversation so far:");
  expect(text.type).toBe("text");
  const { usage } = r.json;
  const [compaction, message] = usage.iterations;
  expect(compaction.type).toBe("compaction");
  expect(message.type).toBe("message");
  // The compaction pass read the whole prompt (system written to the cache here); the answer's pass read the system and the summary.
  expect(compaction.input_tokens + compaction.cache_read_input_tokens + compaction.cache_creation_input_tokens).toBeGreaterThan(63_000);
  expect(message.cache_read_input_tokens).toBeGreaterThanOrEqual(3000);
  expect(message.input_tokens + message.cache_read_input_tokens + message.cache_creation_input_tokens).toBeLessThan(4000);
  expect({ input: usage.input_tokens, read: usage.cache_read_input_tokens, output: usage.output_tokens }).toEqual({ input: message.input_tokens, read: message.cache_read_input_tokens, output: message.output_tokens });

  // The whole history sent back with the block: everything before it is ignored.
  const next = [...messages, { role: "assistant", content: r.json.content }, { role: "user", content: "and then?" }];
  const counted = await post(`${emu.url}/anthropic/v1/messages/count_tokens`, { model: "claude-sonnet-4-6", system, messages: next });
  const dropped = await post(`${emu.url}/anthropic/v1/messages/count_tokens`, { model: "claude-sonnet-4-6", system, messages: next.slice(3) });
  expect(counted.json.input_tokens).toBe(dropped.json.input_tokens);
  expect(counted.json.input_tokens).toBeLessThan(4000);
});
