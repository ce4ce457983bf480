import { expect, test } from "bun:test";
import { formatWhy, type WhyReport } from "./why.ts";

test("why shows the message where the requests diverge as sessions show previews it: a line break as \\n", () => {
  const report: WhyReport = {
    request: { id: "r_2", session: "s_1", model: "anthropic/claude-sonnet-4-6", index: 1, startedAt: 0 },
    previous: { id: "r_1", session: "s_1", model: "anthropic/claude-sonnet-4-6", startedAt: 0 },
    links: 4,
    divergence: { index: 2, nodeId: "m_u2#0", kind: "text", previousNodeId: "m_u1#0" },
    divergentMessage: "edited line\\nsecond line",
    sharedLinks: 2,
    expectedCacheRead: 2_000,
    actualCacheRead: 2_000,
    causes: ["history rewritten at node 2 (m_u2#0)"],
  };
  expect(formatWhy(report).split("\n").slice(3, 6)).toEqual([
    "diverges  at node 2: m_u2#0 (text), was m_u1#0",
    "message   edited line\\nsecond line",
    "cached    expected 2,000 tokens, actual 2,000",
  ]);
});
