/**
 * The pure parts of compaction: the extractive render (deterministic, byte for
 * byte, across runs and under a fixed render version), the cut (turn
 * boundaries only, a tool call never separated from its result) and the limits.
 */
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import type { Message } from "../context/types.ts";
import { renderExtractive, RENDER_MAX_BYTES, RENDER_VERSION } from "./extractive.ts";
import { afterSummary, planCut } from "./plan.ts";
import { acceptedSummary, summaryKey } from "./summary.ts";
import { embeddedCatalog } from "../meter/catalog.ts";
import { calibration, compactionLimits, nextRequestTokens, reservedOutput } from "./trigger.ts";

const lines = (n: number, width = 60) => Array.from({ length: n }, (_, i) => `line ${i + 1} ${"é".repeat(width)}`).join("\r\n");

const LOG: Message[] = [
  { id: "m1", role: "user", content: [{ type: "text", text: "Read src/app.ts and fix the bug. ".repeat(20) }] },
  { id: "m2", role: "assistant", content: [{ type: "thinking", text: "secret reasoning" }, { type: "tool_use", id: "t1", name: "read_file", arguments: JSON.stringify({ path: "src/app.ts", note: "x".repeat(900) }) }] },
  { id: "m3", role: "user", content: [{ type: "tool_result", toolUseId: "t1", content: lines(400) }] },
  { id: "m4", role: "assistant", content: [{ type: "text", text: lines(30) }] },
];

describe("renderExtractive", () => {
  test("is byte-identical across runs and pinned for this render version", () => {
    const a = renderExtractive(LOG);
    const b = renderExtractive(structuredClone(LOG));
    expect(a).toBe(b);
    // A change of the rules must come with a new RENDER_VERSION (it is part of every summary key).
    expect({ version: RENDER_VERSION, sha: createHash("sha256").update(a).digest("hex").slice(0, 16) }).toEqual({ version: 1, sha: "e86d560d2539ecc1" });
  });

  test("canonical lines, head and tail of long texts under a header, reasoning dropped, CRLF normalized, whole UTF-8 characters", () => {
    const text = renderExtractive(LOG);
    expect(text).toStartWith("[user]\nRead src/app.ts");
    expect(text).toContain("[assistant] (reasoning 16 bytes dropped)\n[tool_call read_file t1] ");
    expect(text).not.toContain("secret reasoning");
    expect(text).toContain('"path":"src/app.ts"');
    expect(text).toMatch(/\[tool_result t1\]\n\[extractive\] bytes=\d+ lines=400 omitted=390 sha=[0-9a-f]{12}\nline 1 /);
    expect(text).not.toContain("\r");
    expect(text).not.toContain("\uFFFD");
    expect(text.includes("line 400")).toBe(true);
    expect(text.includes("line 200 ")).toBe(false);
  });

  test("is idempotent on its own markers and stays under the whole-render cap", () => {
    const once = renderExtractive(LOG);
    const marked: Message = { id: "x", role: "assistant", content: [{ type: "text", text: once.split("\n").slice(3).join("\n") }] };
    expect(renderExtractive([marked])).toContain(once.split("\n").slice(3, 5).join("\n"));
    const many = Array.from({ length: 120 }, (_, i): Message => ({ id: `m${i}`, role: i % 2 ? "assistant" : "user", content: [{ type: "text", text: lines(50) }] }));
    const capped = renderExtractive(many);
    expect(new TextEncoder().encode(capped).length).toBeLessThanOrEqual(RENDER_MAX_BYTES);
    expect(capped).toContain("(stub)");
  });
});

describe("planCut", () => {
  const turn = (i: number, size: number): Message[] => [
    { id: `u${i}`, role: "user", content: [{ type: "text", text: `turn ${i}` }] },
    { id: `a${i}`, role: "assistant", content: [{ type: "tool_use", id: `t${i}`, name: "search", arguments: "{}" }] },
    { id: `r${i}`, role: "user", content: [{ type: "tool_result", toolUseId: `t${i}`, content: "x".repeat(size) }] },
    { id: `b${i}`, role: "assistant", content: [{ type: "text", text: "done" }] },
  ];
  const tokensOf = (m: Message) => JSON.stringify(m.content).length;
  const log = [1, 2, 3, 4, 5].flatMap((i) => turn(i, 1000));

  test("keeps the newest whole turns within the tail budget; cuts only where a turn starts", () => {
    const plan = planCut(log, { id: "u6", role: "user", content: [{ type: "text", text: "next" }] }, 2000, tokensOf)!;
    expect(plan.kept.map((m) => m.id)).toEqual(["u5", "a5", "r5", "b5"]);
    expect(plan.summarized.at(-1)!.id).toBe("b4");
  });

  test("a tool result about to be sent keeps its call in the tail, even over the budget", () => {
    const open = [...log, ...turn(6, 1000).slice(0, 2)];
    const plan = planCut(open, turn(6, 1000)[2], 10, tokensOf)!;
    expect(plan.kept.map((m) => m.id)).toEqual(["u6", "a6"]);
    expect(plan.kept.some((m) => m.content.some((b) => b.type === "tool_result"))).toBe(false);
  });

  test("nothing to summarize when the log is the current turn", () => {
    expect(planCut(turn(1, 10).slice(0, 2), turn(1, 10)[2], 10, tokensOf)).toBeUndefined();
  });

  test("a first turn has nothing before it to summarize: undefined without counting it (counting a 4 MB prompt took minutes)", () => {
    let counted = 0;
    const counting = (m: Message) => (counted++, tokensOf(m));
    expect(planCut([], { id: "u1", role: "user", content: [{ type: "text", text: "x".repeat(100_000) }] }, 10, counting)).toBeUndefined();
    expect(counted).toBe(0);
  });

  test("afterSummary drops what the summary covers", () => {
    expect(afterSummary(log, "b4").map((m) => m.id)).toEqual(["u5", "a5", "r5", "b5"]);
    expect(afterSummary(log, null)).toHaveLength(log.length);
  });
});

describe("limits, calibration and summaries", () => {
  test("trigger min(0.8 × window, window − output − 4,096), target half of it (≤ 40k), tail 0.4 × target (≤ 16k)", () => {
    expect(compactionLimits(64_000, 8_000)).toEqual({ window: 64_000, trigger: 51_200, target: 25_600, tail: 10_240 });
    expect(compactionLimits(200_000, 64_000)).toEqual({ window: 200_000, trigger: 131_904, target: 40_000, tail: 16_000 });
    expect(compactionLimits(200_000, 0, 32_000)).toEqual({ window: 200_000, trigger: 32_000, target: 16_000, tail: 6_400 });
  });

  test("the reserved output is --max-tokens, else the provider's default, capped by the catalog's output limit; 0 when nothing is sent", () => {
    expect(reservedOutput(1_000, 8_192, 262_144)).toBe(1_000);
    expect(reservedOutput(undefined, 8_192, 262_144)).toBe(8_192);
    expect(reservedOutput(undefined, 8_192, 4_096)).toBe(4_096);
    expect(reservedOutput(undefined, undefined, 262_144)).toBe(0);
  });

  test("the trigger never falls below 0.6 × window: moonshotai/kimi-k2.5 (output limit = window) compacts at 0.8 × window, not at 0", () => {
    const limit = embeddedCatalog().moonshotai!.models["kimi-k2.5"]!.limit!;
    const kimi = { context: limit.context!, output: limit.output! };
    expect(kimi.output).toBeGreaterThanOrEqual(kimi.context - 4_096);
    expect(compactionLimits(kimi.context, reservedOutput(undefined, undefined, kimi.output)).trigger).toBe(Math.floor(0.8 * kimi.context));
    // A --max-tokens as large as the output limit reserves it all: the floor holds.
    expect(compactionLimits(kimi.context, reservedOutput(kimi.output, undefined, kimi.output)).trigger).toBe(Math.floor(0.6 * kimi.context));
    expect(compactionLimits(8_192, 8_192)).toEqual({ window: 8_192, trigger: 4_915, target: 2_457, tail: 982 });
  });

  test("over the whole catalog, for every model with a window and any reserve a run can make, 0.5 × window < trigger ≤ window", () => {
    let models = 0;
    let degenerateBefore = 0;
    for (const [providerId, provider] of Object.entries(embeddedCatalog())) {
      for (const [modelId, model] of Object.entries(provider.models)) {
        const window = model.limit?.context;
        if (!window) continue;
        models++;
        const output = model.limit?.output;
        if (output !== undefined && output >= window - 4_096) degenerateBefore++;
        // No --max-tokens with and without a provider default (Anthropic's 8,192), and --max-tokens at the output limit.
        for (const reserved of [reservedOutput(undefined, undefined, output), reservedOutput(undefined, 8_192, output), reservedOutput(output ?? window, undefined, output)]) {
          const { trigger, target } = compactionLimits(window, reserved);
          if (!(trigger > 0.5 * window && trigger <= window && target > 0)) throw new Error(`${providerId}/${modelId}: window ${window}, reserve ${reserved}, trigger ${trigger}`);
        }
      }
    }
    // The catalog does hold the models the old formula sent to 0 (116 of 799 at the time of the report).
    expect(degenerateBefore).toBeGreaterThan(100);
    expect(models).toBeGreaterThan(700);
  });

  test("the next request is the last reported prompt plus the calibrated appended estimate, never below the raw estimate", () => {
    const row = (input: number, est: number) => ({ status: "ok", usage: { input, cacheRead: 0, cacheWrite5m: 0, cacheWrite1h: 0, output: 1, reasoning: undefined }, chain: [{ tokens: est }] }) as never;
    const rows = [row(1100, 1000), row(2200, 2000)];
    expect(calibration(rows)).toBeCloseTo(1.1, 9);
    expect(nextRequestTokens(3000, rows[1], 1.1)).toBe(3300);
    expect(nextRequestTokens(3000, undefined, 1.1)).toBe(3300);
  });

  test("a summary key does not depend on the call, and a tool call or an empty answer is not a summary", () => {
    const previous = { messages: [], coversThrough: null };
    expect(summaryKey({ provider: "p", model: "m", previous, render: "r" })).toBe(summaryKey({ provider: "p", model: "m", previous: { ...previous }, render: "r" }));
    expect(summaryKey({ provider: "p", model: "m", previous, render: "r" })).not.toBe(summaryKey({ provider: "p", model: "m", previous, render: "r2" }));
    expect(acceptedSummary([{ type: "tool_use", id: "t", name: "x", arguments: "{}" }], "tool_calls")).toBeUndefined();
    expect(acceptedSummary([{ type: "text", text: "  " }], "stop")).toBeUndefined();
    expect(acceptedSummary([{ type: "text", text: "Done." }], "stop")).toBe("Done.");
  });
});
