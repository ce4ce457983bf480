/**
 * Gemini `models/{model}:generateContent` and `:streamGenerateContent`
 * (`?alt=sse`; without it a JSON array of the same chunks).
 * `usageMetadata.promptTokenCount` includes `cachedContentTokenCount`;
 * `thoughtsTokenCount` is outside `candidatesTokenCount`; `totalTokenCount`
 * = prompt + candidates + thoughts. Explicit `cachedContent` is not emulated
 * (400). Image-output models return images as `inlineData` parts
 * (facts/image-output.ts). Gemini 3 models sign their answer: the first
 * function call of a step, or, in an answer without calls, the last text
 * part; streamed, that text signature comes alone on a last part with empty
 * text (the chunk with the finishReason).
 * @see https://ai.google.dev/gemini-api/docs/caching
 * @see https://ai.google.dev/gemini-api/docs/thought-signatures
 */
import { asSchema } from "../structured.ts";
import { canonicalJson } from "../../wire/canonical-json.ts";
import { invalidRequest } from "../request-error.ts";
import { EMULATED_IMAGE, imageOutputTokens } from "../facts/image-output.ts";
import { checkGeminiFields, requiresThoughtSignatures } from "../validate/gemini.ts";
import type { ContentItem } from "../types.ts";
import { type Exchange, MEDIA_TOKENS, type ParsedRequest, type ProtocolHandler, sse, textPieces } from "./protocol.ts";

/** The Gemini generateContent protocol handler. */
export const gemini: ProtocolHandler = {
  parse(body, route) {
    checkGeminiFields(body);
    const model = (route.model ?? "").replace(/^models\//, "");
    if (body.cachedContent !== undefined) throw invalidRequest("cachedContent (explicit caching) is not supported by the cachet emulator; implicit caching is emulated");
    if (!Array.isArray(body.contents)) throw invalidRequest("contents is required");
    const items: ContentItem[] = [];
    for (const tool of (body.tools as unknown[] | undefined) ?? []) items.push({ role: "tool", text: canonicalJson(tool), messageEnd: true });
    const config = (body.generationConfig ?? {}) as Record<string, unknown>;
    const schema = config.responseJsonSchema ?? config.responseSchema;
    if (schema !== undefined) items.push({ role: "format", text: canonicalJson(schema), messageEnd: true });
    const system = body.systemInstruction as { parts?: Record<string, unknown>[] } | string | undefined;
    const systemParts = typeof system === "string" ? [{ text: system }] : (system?.parts ?? []);
    systemParts.forEach((part, i) => items.push({ role: i === 0 ? "system>" : "system", text: String(part.text ?? canonicalJson(part)), messageEnd: i === systemParts.length - 1 }));
    let assistantTurns = 0;
    for (const content of body.contents as { role?: string; parts?: Record<string, unknown>[] }[]) {
      const role = content.role === "model" ? "assistant" : String(content.role ?? "user");
      if (role === "assistant") assistantTurns++;
      const start = items.length;
      for (const part of content.parts ?? []) items.push(partItem(role, part));
      if (items.length === start) items.push({ role, text: "", cacheable: false });
      items[start]!.role = `${role}>`;
      items[items.length - 1]!.messageEnd = true;
    }
    const maxTokens = config.maxOutputTokens;
    return {
      items,
      model,
      stream: route.endpoint === "stream-generate",
      includeUsage: true,
      affinityKey: undefined,
      autoCache: undefined,
      cacheMode: undefined,
      retention: undefined,
      assistantTurns,
      maxTokens: typeof maxTokens === "number" ? maxTokens : undefined,
      outputSchema: asSchema(config.responseJsonSchema ?? config.responseSchema),
    } satisfies ParsedRequest;
  },

  answerItems(answer) {
    const items: ContentItem[] = [];
    if (answer.text) items.push({ role: "assistant", text: answer.text });
    for (let i = 0; i < (answer.images ?? 0); i++) items.push(partItem("assistant", { inlineData: { mimeType: EMULATED_IMAGE.mimeType, data: EMULATED_IMAGE.data } }));
    for (const call of answer.toolCalls) items.push({ role: "assistant", text: `${call.name} ${canonicalJson(JSON.parse(call.arguments))}` });
    if (items.length > 0) {
      items[0]!.role = "assistant>";
      items[items.length - 1]!.messageEnd = true;
    }
    return items;
  },

  usage(exchange) {
    const { outcome, answer } = exchange;
    const prompt = outcome.input + outcome.read + outcome.write5m + outcome.write1h;
    // Image output is billed as output tokens, reported per modality (facts/image-output.ts).
    const image = (answer.images ?? 0) * imageOutputTokens(exchange.request.model, imageSize(exchange));
    const candidates = answer.outputTokens + image;
    return {
      promptTokenCount: prompt,
      candidatesTokenCount: candidates,
      totalTokenCount: prompt + candidates + answer.reasoningTokens,
      ...(outcome.read > 0 ? { cachedContentTokenCount: outcome.read } : {}),
      ...(answer.reasoningTokens > 0 ? { thoughtsTokenCount: answer.reasoningTokens } : {}),
      promptTokensDetails: [{ modality: "TEXT", tokenCount: prompt }],
      ...(outcome.read > 0 ? { cacheTokensDetails: [{ modality: "TEXT", tokenCount: outcome.read }] } : {}),
      ...(image > 0
        ? {
            candidatesTokensDetails: [
              { modality: "TEXT", tokenCount: answer.outputTokens },
              { modality: "IMAGE", tokenCount: image },
            ],
          }
        : {}),
    };
  },

  signatures(exchange) {
    return requiresThoughtSignatures(exchange.request.model) && (exchange.answer.toolCalls.length > 0 || signsText(exchange)) ? [signature(exchange)] : [];
  },

  json(exchange, usage) {
    return { candidates: [{ content: { parts: allParts(exchange), role: "model" }, finishReason: finishReason(exchange), index: 0 }], usageMetadata: usage, modelVersion: exchange.request.model, responseId: `emu${exchange.id}` };
  },

  stream(exchange, usage) {
    const { answer } = exchange;
    const u = usage as Record<string, unknown>;
    const head = { modelVersion: exchange.request.model, responseId: `emu${exchange.id}` };
    const partial = { promptTokenCount: u.promptTokenCount, totalTokenCount: u.promptTokenCount, ...(u.cachedContentTokenCount === undefined ? {} : { cachedContentTokenCount: u.cachedContentTokenCount }) };
    const chunk = (parts: unknown[], last: boolean) => sse({ candidates: [{ content: { parts, role: "model" }, ...(last ? { finishReason: finishReason(exchange) } : {}), index: 0 }], usageMetadata: last ? usage : partial, ...head });
    const pieces: Record<string, unknown>[][] = [];
    if (answer.thinking && includeThoughts(exchange)) for (const piece of textPieces(answer.thinking)) pieces.push([{ text: piece, thought: true }]);
    if (answer.text) for (const piece of textPieces(answer.text)) pieces.push([{ text: piece }]);
    for (const image of allParts(exchange).filter((part) => "inlineData" in part)) pieces.push([image]);
    const calls = allParts(exchange).filter((part) => "functionCall" in part);
    if (calls.length > 0) pieces.push(calls);
    if (signsText(exchange)) pieces.push([{ text: "", thoughtSignature: signature(exchange) }]);
    if (pieces.length === 0) pieces.push([{ text: "" }]);
    const events = pieces.map((parts, i) => chunk(parts, i === pieces.length - 1));
    return { events, contentStart: 0, contentEnd: events.length - 1 };
  },

  ping: ": keep-alive\n\n",
  chatter: [": keep-alive\n\n", ": backend error, retrying\n\n"],
  streamError(message) {
    return sse({ error: { code: 503, message, status: "UNAVAILABLE" } });
  },
  errorBody(status, _type, message, _param, _code, violations = []) {
    const names: Record<number, string> = { 400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 529: "UNAVAILABLE" };
    const error = { code: status, message, status: names[status] ?? "UNKNOWN" };
    if (violations.length === 0) return { error };
    return { error: { ...error, details: [{ "@type": "type.googleapis.com/google.rpc.BadRequest", fieldViolations: violations }] } };
  },
};

function partItem(role: string, part: Record<string, unknown>): ContentItem {
  if (typeof part.text === "string") return { role, text: part.text, cacheable: part.thought !== true };
  if (part.functionCall) {
    const call = part.functionCall as { name?: string; args?: unknown };
    return { role, text: `${call.name ?? ""} ${canonicalJson(call.args ?? {})}` };
  }
  if (part.functionResponse) return { role, text: canonicalJson(part.functionResponse) };
  if (part.inlineData || part.fileData) return { role, text: canonicalJson(part), tokens: MEDIA_TOKENS };
  return { role, text: canonicalJson(part) };
}

function imageSize(exchange: Exchange): unknown {
  return (exchange.body.generationConfig as { imageConfig?: { imageSize?: unknown } } | undefined)?.imageConfig?.imageSize;
}

function includeThoughts(exchange: Exchange): boolean {
  const config = exchange.body.generationConfig as { thinkingConfig?: { includeThoughts?: boolean } } | undefined;
  return config?.thinkingConfig?.includeThoughts === true;
}

function allParts(exchange: Exchange): Record<string, unknown>[] {
  const { answer } = exchange;
  const parts: Record<string, unknown>[] = [];
  if (answer.thinking && includeThoughts(exchange)) parts.push({ text: answer.thinking, thought: true });
  if (answer.text || (answer.toolCalls.length === 0 && !answer.images)) parts.push(signsText(exchange) ? { text: answer.text, thoughtSignature: signature(exchange) } : { text: answer.text });
  for (let i = 0; i < (answer.images ?? 0); i++) parts.push({ inlineData: { mimeType: EMULATED_IMAGE.mimeType, data: EMULATED_IMAGE.data } });
  // Gemini 3 signs the first function call of a step; the client must send the signature back.
  const signed = requiresThoughtSignatures(exchange.request.model);
  answer.toolCalls.forEach((call, i) => {
    const part: Record<string, unknown> = { functionCall: { name: call.name, args: JSON.parse(call.arguments) } };
    if (signed && i === 0) part.thoughtSignature = signature(exchange);
    parts.push(part);
  });
  return parts;
}

/** The one thought signature an exchange's answer carries (Gemini 3), unique per exchange. */
function signature(exchange: Exchange): string {
  return `emu-thought-signature-${exchange.id}`;
}

/**
 * True when the answer's text carries the signature: a Gemini 3 answer with
 * text and no function call (with calls, the first call carries it). Sending
 * it back is not enforced (only function calls' are), but keeps the
 * model's reasoning across turns.
 * @see https://ai.google.dev/gemini-api/docs/thought-signatures
 */
function signsText(exchange: Exchange): boolean {
  const { answer } = exchange;
  return requiresThoughtSignatures(exchange.request.model) && answer.toolCalls.length === 0 && answer.text !== "";
}

function finishReason(exchange: Exchange): string {
  if (exchange.answer.refused) return "SAFETY";
  return exchange.answer.truncated ? "MAX_TOKENS" : "STOP";
}
