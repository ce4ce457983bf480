import { expect, test } from "bun:test";
import { generationChanged, stickyGeneration } from "./sticky-generation.ts";

const thinking = { type: "enabled", budget_tokens: 2048 };
const held = { providerOptions: { thinking, top_k: 5 }, maxTokens: 4096, temperature: 1 };

test("a new session takes the flags as they are", () => {
  const sticky = stickyGeneration({ stream: true, providerOptions: { thinking }, maxTokens: 4096 }, undefined, "anthropic");
  expect(sticky).toEqual({ settings: { stream: true, providerOptions: { thinking }, maxTokens: 4096 }, stored: { providerOptions: { thinking }, maxTokens: 4096 }, changes: [] });
});

test("a continued session keeps its settings; a flag overrides one, -o key=null drops one, each change said once", () => {
  const session = { generation: held, provider: "anthropic" };
  expect(stickyGeneration({ stream: false, providerOptions: {} }, session, "anthropic")).toEqual({ settings: { ...held, stream: false }, stored: held, changes: [] });
  const changed = stickyGeneration({ stream: true, providerOptions: { top_k: null, thinking }, maxTokens: 8000 }, session, "anthropic");
  expect(changed.stored).toEqual({ providerOptions: { thinking }, maxTokens: 8000, temperature: 1 });
  expect(changed.changes).toEqual(["-o top_k 5 → (unset) for this session from now on", "--max-tokens 4096 → 8000 for this session from now on"]);
});

test("the first settings of a continued session that stored none are changes too, said as from (unset)", () => {
  const sticky = stickyGeneration({ stream: true, providerOptions: { top_k: 5 }, maxTokens: 1000, temperature: 0.5 }, { generation: undefined, provider: "anthropic" }, "anthropic");
  expect(sticky.stored).toEqual({ providerOptions: { top_k: 5 }, maxTokens: 1000, temperature: 0.5 });
  expect(sticky.changes).toEqual([
    "-o top_k (unset) → 5 for this session from now on",
    "--max-tokens (unset) → 1000 for this session from now on",
    "--temperature (unset) → 0.5 for this session from now on",
  ]);
  expect(stickyGeneration({ stream: true, providerOptions: {} }, { generation: undefined, provider: "anthropic" }, "anthropic").changes).toEqual([]);
});

test("another provider's settings are not carried to a new provider's wire, and that is said", () => {
  const sticky = stickyGeneration({ stream: true, providerOptions: { reasoning_effort: "low" } }, { generation: held, provider: "anthropic" }, "openai");
  expect(sticky.stored).toEqual({ providerOptions: { reasoning_effort: "low" } });
  expect(sticky.changes).toEqual(["-o thinking, -o top_k, --max-tokens, --temperature of the session's anthropic turns not carried to openai: pass them again if openai takes them"]);
});

test("nothing stored and no settings is no change; any difference is one", () => {
  expect(generationChanged(undefined, { providerOptions: {} })).toBe(false);
  expect(generationChanged(undefined, { providerOptions: {}, maxTokens: 10 })).toBe(true);
  expect(generationChanged(held, { ...held, providerOptions: { ...held.providerOptions } })).toBe(false);
});
