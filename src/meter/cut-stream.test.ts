import { describe, expect, test } from "bun:test";
import { cutStreamReport, isStreamedOutput } from "./cut-stream.ts";

describe("a cut stream's usage", () => {
  const report = { usage: { input: 8, cacheRead: 0, cacheWrite5m: 0, cacheWrite1h: 0, output: 1 }, raw: { input_tokens: 8, output_tokens: 1 } };

  test("output raised to the output events that streamed, and named", () => {
    const raised = cutStreamReport(report, 5);
    expect(raised.usage.output).toBe(5);
    expect(raised.raw).toBe(report.raw);
    expect(raised.estimates).toEqual(["output counted as 5 from the content events streamed before the cut (the provider had reported 1)"]);
    expect(report.usage.output).toBe(1);
  });

  test("a reported output at least as large is kept as it is", () => {
    expect(cutStreamReport(report, 1)).toBe(report);
    expect(cutStreamReport({ ...report, usage: { ...report.usage, output: 9 } }, 5).usage.output).toBe(9);
  });

  test("without an input count the usage stays as reported (unpriced either way)", () => {
    const noInput = { usage: { output: 1 }, raw: {} };
    expect(cutStreamReport(noInput, 5)).toBe(noInput);
  });

  test("output events: non-empty text and thinking, tool calls, images; not usage, pings, empty deltas or provider blocks", () => {
    expect(isStreamedOutput({ type: "text", delta: "a" })).toBe(true);
    expect(isStreamedOutput({ type: "text", delta: "" })).toBe(false);
    expect(isStreamedOutput({ type: "thinking", delta: "" })).toBe(false);
    expect(isStreamedOutput({ type: "tool_call", id: "t", name: "f", arguments: "{}" })).toBe(true);
    expect(isStreamedOutput({ type: "image", mediaType: "image/png", data: "AA==" })).toBe(true);
    expect(isStreamedOutput({ type: "usage", rawUsage: {} })).toBe(false);
    expect(isStreamedOutput({ type: "chatter", detail: "ping" })).toBe(false);
    expect(isStreamedOutput({ type: "provider_block", protocol: "anthropic-messages", block: {} })).toBe(false);
  });
});
