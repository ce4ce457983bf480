/**
 * A ledger row as an OpenTelemetry span description, following the GenAI
 * semantic conventions: one CLIENT span per provider call, one trace per
 * session. Pure data in and out; the wire encoding is otlp-encode.ts.
 *
 * Ids are derived from the session and request ids, so exporting a row twice
 * (another machine, a lost watermark) yields the same span a collector can
 * deduplicate.
 *
 * @see https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/ (attribute names)
 */
import { createHash } from "node:crypto";
import type { Message } from "../context/types.ts";
import { cacheableOf } from "../session/ledger-figures.ts";
import type { LedgerRow } from "../session/types.ts";

/** Attribute values the OTLP encoders accept. */
export type SpanAttributeValue = string | number | boolean | string[];

/** One span, ready for the OTLP encoder. Times are Unix epoch ms. */
export interface LedgerSpan {
  /** 32 lowercase hex digits: the session's trace. */
  traceId: string;
  /** 16 lowercase hex digits: the request's span. */
  spanId: string;
  /** `chat {model}`, as the conventions name an inference span. */
  name: string;
  startMs: number;
  endMs: number;
  /** True when the call failed or was cut (status ERROR, with `error.type`). */
  failed: boolean;
  errorMessage?: string;
  attributes: Record<string, SpanAttributeValue>;
}

/** Prompt and answer of a call, exported only with `--with-content`. */
export interface CallContent {
  /** The user message the call answered. */
  input?: Message;
  /** The assistant message it produced. */
  output?: Message;
}

/**
 * Builds the span of one ledger row.
 * @param content prompt and answer, only when the user asked for content
 */
export function ledgerSpan(row: LedgerRow, content?: CallContent): LedgerSpan {
  const u = row.usage;
  const attributes: Record<string, SpanAttributeValue> = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": providerName(row.provider),
    "gen_ai.request.model": row.model,
    // The ledger records the model the request named; providers answer with it (aliases are resolved in the id already).
    "gen_ai.response.model": row.model,
    "cachet.session": row.sessionId,
    "cachet.role": row.role,
    "cachet.request": row.id,
    "cachet.status": row.status,
  };
  const cacheWrite = sumKnown(u.cacheWrite5m, u.cacheWrite1h);
  // The conventions count cached tokens inside input_tokens; cachet's `input` is the uncached part only.
  const prompt = sumKnown(u.input, u.cacheRead, cacheWrite);
  if (prompt !== undefined) attributes["gen_ai.usage.input_tokens"] = prompt;
  if (u.output !== undefined) attributes["gen_ai.usage.output_tokens"] = u.output;
  if (u.cacheRead !== undefined) attributes["gen_ai.usage.cache_read.input_tokens"] = u.cacheRead;
  if (cacheWrite !== undefined) attributes["gen_ai.usage.cache_creation.input_tokens"] = cacheWrite;
  if (u.reasoning !== undefined) attributes["gen_ai.usage.reasoning.output_tokens"] = u.reasoning;
  if (row.finishReason) attributes["gen_ai.response.finish_reasons"] = [row.finishReason];
  if (row.providerRequestId) attributes["gen_ai.response.id"] = row.providerRequestId;
  if (row.costUsd !== null) attributes["cachet.cost_usd"] = row.costUsd;
  const efficiency = cacheEfficiency(row);
  if (efficiency !== undefined) attributes["cachet.cache_efficiency"] = efficiency;
  if (content?.input) attributes["gen_ai.input.messages"] = JSON.stringify([semconvMessage(content.input)]);
  if (content?.output) attributes["gen_ai.output.messages"] = JSON.stringify([{ ...semconvMessage(content.output), ...(row.finishReason ? { finish_reason: row.finishReason } : {}) }]);
  const failed = row.status !== "ok";
  return {
    traceId: stableHex(`trace:${row.sessionId}`, 32),
    spanId: stableHex(`span:${row.id}`, 16),
    name: `chat ${row.model}`,
    startMs: row.startedAt,
    endMs: row.finishedAt ?? row.startedAt,
    failed,
    ...(failed ? { errorMessage: row.error ?? row.status } : {}),
    attributes: failed ? { ...attributes, "error.type": row.status === "incomplete" ? "incomplete" : "error" } : attributes,
  };
}

/**
 * Cache efficiency of one call: cache reads / its cacheable tokens (DESIGN.md,
 * Words; src/session/ledger-figures.ts `cacheableOf`, as `cachet stats`
 * counts them), 0..1; undefined when nothing could be cached or no read was reported.
 */
export function cacheEfficiency(row: LedgerRow): number | undefined {
  const cacheable = cacheableOf(row);
  if (cacheable === null || cacheable <= 0 || row.usage.cacheRead === undefined) return undefined;
  return row.usage.cacheRead / cacheable;
}

/** cachet's provider ids where the conventions' well-known names differ. */
const PROVIDER_NAMES: Record<string, string> = { google: "gcp.gemini", xai: "x_ai", mistral: "mistral_ai" };

function providerName(provider: string): string {
  return PROVIDER_NAMES[provider] ?? provider;
}

function sumKnown(...values: (number | undefined)[]): number | undefined {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length === 0 ? undefined : known.reduce((a, b) => a + b, 0);
}

function stableHex(seed: string, digits: number): string {
  return createHash("sha256").update(`cachet:${seed}`).digest("hex").slice(0, digits);
}

/** A message in the conventions' `{role, parts}` shape. */
function semconvMessage(message: Message): { role: string; parts: unknown[] } {
  const parts = message.content.map((block) => {
    switch (block.type) {
      case "text":
        return { type: "text", content: block.text };
      case "tool_use":
        return { type: "tool_call", id: block.id, name: block.name, arguments: block.arguments };
      case "tool_result":
        return { type: "tool_call_response", id: block.toolUseId, response: block.content };
      default:
        return { type: block.type };
    }
  });
  return { role: message.role, parts };
}
