/**
 * Anthropic Messages usage mapping. `input_tokens` already excludes cache
 * reads and writes (it is only what follows the last breakpoint), so the
 * counts are disjoint as reported; `output_tokens` already includes thinking.
 * @see https://docs.claude.com/en/docs/build-with-claude/prompt-caching (Tracking cache performance, 1-hour cache duration)
 * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts (Usage)
 */
import type { ServerToolCalls, Usage, UsageExample, UsageReport } from "../../src/plugin/index.ts";

/**
 * Maps an Anthropic `usage` object (the final, stream-merged one):
 * `input_tokens` → input, `cache_read_input_tokens` → cacheRead,
 * `cache_creation.{ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}` →
 * cacheWrite5m / cacheWrite1h, `output_tokens` → output,
 * `output_tokens_details.thinking_tokens` → reasoning;
 * `server_tool_use.{web_search_requests, web_fetch_requests,
 * code_execution_requests}` → per-call tool counts; `service_tier` → the tier served.
 * When only the aggregate `cache_creation_input_tokens` is present, all
 * writes are counted as 5-minute and `estimates` says so. Null or absent
 * fields stay undefined. With server-side compaction, `usage.iterations`
 * entries of type `compaction` become `passes` (role `server_compaction`),
 * mapped the same way: the top-level counts do not include them. Pure.
 */
export function anthropicUsage(raw: unknown): UsageReport {
  const report = passReport(raw);
  // Server-side compaction: the top-level counts leave the compaction passes out; each is a pass of its own.
  const iterations = objectOf(raw)?.iterations;
  if (Array.isArray(iterations)) {
    const passes = iterations.filter((it) => objectOf(it)?.type === "compaction").map((it) => ({ role: SERVER_COMPACTION_ROLE, usage: passReport(it).usage, raw: it }));
    if (passes.length > 0) report.passes = passes;
  }
  return report;
}

/**
 * Ledger role of a server-side compaction pass (`usage.iterations` entries
 * of type `compaction`, billed like any input and output but outside the
 * top-level counts).
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction (Understanding usage)
 */
export const SERVER_COMPACTION_ROLE = "server_compaction";

/** The report of one usage object (the whole response's, or one iteration's). */
function passReport(raw: unknown): UsageReport {
  const u = objectOf(raw);
  const estimates: string[] = [];
  const writtenTotal = tokenCount(u?.cache_creation_input_tokens);
  const split = objectOf(u?.cache_creation);
  const split5m = tokenCount(split?.ephemeral_5m_input_tokens);
  const split1h = tokenCount(split?.ephemeral_1h_input_tokens);
  let cacheWrite5m: number | undefined;
  let cacheWrite1h: number | undefined;
  if (split5m !== undefined || split1h !== undefined) {
    cacheWrite5m = split5m ?? 0;
    cacheWrite1h = split1h ?? 0;
    const sum = cacheWrite5m + cacheWrite1h;
    if (writtenTotal !== undefined && writtenTotal > sum) {
      // Writes the split does not account for are priced at the cheaper (5m) rate, and flagged.
      estimates.push(`cache write split covers ${sum} of ${writtenTotal} written tokens: the rest priced as 5m`);
      cacheWrite5m += writtenTotal - sum;
    }
  } else if (writtenTotal !== undefined) {
    cacheWrite5m = writtenTotal;
    cacheWrite1h = 0;
    if (writtenTotal > 0) estimates.push("cache write TTL split missing: priced as 5m");
  }
  const usage: Usage = {
    input: tokenCount(u?.input_tokens),
    cacheRead: tokenCount(u?.cache_read_input_tokens),
    cacheWrite5m,
    cacheWrite1h,
    output: tokenCount(u?.output_tokens),
    reasoning: tokenCount(objectOf(u?.output_tokens_details)?.thinking_tokens),
  };
  const report: UsageReport = { usage, raw };
  if (estimates.length > 0) report.estimates = estimates;
  const tools = objectOf(u?.server_tool_use);
  const calls: ServerToolCalls = {};
  for (const [field, tool] of SERVER_TOOLS) {
    const n = tokenCount(tools?.[field]);
    if (n !== undefined) calls[tool] = n;
  }
  if (Object.keys(calls).length > 0) report.serverToolCalls = calls;
  if (typeof u?.service_tier === "string") report.serviceTier = u.service_tier;
  return report;
}

/**
 * `usage.server_tool_use` fields and the tool each counts.
 * @see https://docs.claude.com/en/docs/agents-and-tools/tool-use/web-search-tool (usage.server_tool_use.web_search_requests, $10 per 1,000 searches)
 */
const SERVER_TOOLS: ReadonlyArray<[string, keyof ServerToolCalls]> = [
  ["web_search_requests", "web_search"],
  ["web_fetch_requests", "web_fetch"],
  ["code_execution_requests", "code_execution"],
];

function tokenCount(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : undefined;
}

function objectOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/**
 * Usage objects in the documented shape (providers.md §2c) and what they map
 * to; the contract kit checks `anthropicUsage` against them.
 */
export const anthropicUsageExamples: UsageExample[] = [
  {
    source: "https://docs.claude.com/en/docs/build-with-claude/prompt-caching (Tracking cache performance; 1-hour cache duration)",
    raw: { input_tokens: 12, cache_read_input_tokens: 300, cache_creation_input_tokens: 50, cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 30 }, output_tokens: 40, output_tokens_details: { thinking_tokens: 25 } },
    usage: { input: 12, cacheRead: 300, cacheWrite5m: 20, cacheWrite1h: 30, output: 40, reasoning: 25 },
  },
  {
    source: "https://platform.claude.com/docs/en/build-with-claude/compaction (Understanding usage: the top-level counts exclude the compaction iteration)",
    raw: { input_tokens: 45000, output_tokens: 1234, iterations: [{ type: "compaction", input_tokens: 180000, output_tokens: 3500 }, { type: "message", input_tokens: 23000, output_tokens: 1000 }] },
    usage: { input: 45000, output: 1234 },
  },
];
