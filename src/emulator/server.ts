/**
 * The request handler: routes a request, applies faults, parses the body,
 * runs the provider's cache model, builds the answer and renders it.
 */
import { makeAnswer, withReasoning } from "./answer.ts";
import type { CacheStore } from "./cache-store.ts";
import { cacheOutcome } from "./cache/select.ts";
import { emulatedNow } from "./clock.ts";
import type { FaultName, FaultPlan } from "./faults.ts";
import { type Inspection, publicHeaders } from "./inspection.ts";
import { modelFacts } from "./facts/model-facts.ts";
import { buildBlocks } from "./prompt.ts";
import { anthropicMessages } from "./protocols/anthropic-messages.ts";
import { gemini } from "./protocols/gemini.ts";
import { openaiChat } from "./protocols/openai-chat.ts";
import { openaiResponses, outputItems, responseId } from "./protocols/openai-responses.ts";
import type { Exchange, ProtocolHandler } from "./protocols/protocol.ts";
import { EmulatorRequestError } from "./request-error.ts";
import { isStored, keepResponse, resolvePrevious } from "./stored-responses.ts";
import { resolveRoute, type Route } from "./router.ts";
import { checkScriptedAbilities } from "./scripted-abilities.ts";
import { withWebSearches } from "./web-search.ts";
import { compactionEdit, compactionItem, compactionSummary } from "./server-compaction.ts";
import { countTokens } from "./tokenizer.ts";
import { jsonBody, SSE_HEADERS, streamBody } from "./stream-writer.ts";
import { checkContextWindow, validateRequest } from "./validate/index.ts";
import { thinkingReplayRequired } from "./validate/openai-chat.ts";
import type { Prompt, Protocol, ReceivedRequest } from "./types.ts";

/** Environment variable seeding overflow routing (default `cachet`). */
export const SEED_ENV = "CACHET_EMULATOR_SEED";

const HANDLERS: Record<Protocol, ProtocolHandler> = {
  "anthropic-messages": anthropicMessages,
  "openai-chat": openaiChat,
  "openai-responses": openaiResponses,
  gemini,
};

const JSON_HEADERS = { "content-type": "application/json" };

/** What the handler shares across requests. */
export interface ServerState {
  store: CacheStore;
  faults: FaultPlan;
  inspection: Inspection;
  env: Record<string, string | undefined>;
}

/** Handles one HTTP request (inspection endpoints included). Never throws. */
export async function handleRequest(request: Request, state: ServerState): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname.startsWith("/_emulator/")) return inspect(request, url, state);
  const route = resolveRoute(url.pathname);
  const now = emulatedNow(request.headers, state.env);
  const received: ReceivedRequest = {
    at: now,
    method: request.method,
    path: url.pathname + url.search,
    provider: route?.provider,
    protocol: route?.protocol,
    model: route?.model,
    headers: publicHeaders(request.headers),
    body: undefined,
    status: 0,
    usage: undefined,
    cache: undefined,
    fault: undefined,
  };
  state.inspection.record(received);
  const { inspection } = state;
  inspection.count("requests");
  if (route) inspection.count(`requests.${route.provider}`);
  const finish = (response: Response): Response => {
    received.status = response.status;
    inspection.count(`status.${response.status}`);
    return response;
  };
  if (!route || request.method !== "POST") {
    // Readable by every SDK: Anthropic's `type` + `error.type`, OpenAI's `error.message/param/code`.
    const message = `Invalid URL (${request.method} ${url.pathname}): the emulator serves no such endpoint`;
    return finish(Response.json({ type: "error", error: { type: "not_found_error", message, param: null, code: null } }, { status: 404 }));
  }
  const handler = HANDLERS[route.protocol];
  try {
    let body: Record<string, unknown>;
    try {
      body = (await request.json()) as Record<string, unknown>;
    } catch {
      throw new EmulatorRequestError(400, "invalid_request_error", "request body is not valid JSON");
    }
    if (typeof body !== "object" || body === null || Array.isArray(body)) throw new EmulatorRequestError(400, "invalid_request_error", "request body must be a JSON object");
    received.body = body;
    const picked = state.faults.pick(request.headers, state.env);
    if (picked) {
      received.fault = picked;
      inspection.count(`faults.${picked}`);
      // No byte at all: status 0 says nothing was answered.
      if (picked === "reset") return new Response(new ReadableStream({ pull: (controller) => controller.error() }));
      const statusFault = httpFault(picked, route, body);
      if (statusFault) return finish(statusFault(handler));
    }
    // A held response, once released, is answered as if no fault applied.
    if (picked === "hold") {
      await state.faults.hold(request.signal);
      // The client went away while held: nothing was answered (status 0).
      if (request.signal.aborted) return new Response(null, { status: 204 });
    }
    const fault = picked === "hold" ? undefined : picked;
    return finish(answer(request, route, handler, body, now, fault, received, state));
  } catch (error) {
    if (error instanceof EmulatorRequestError) {
      return finish(Response.json(handler.errorBody(error.status, error.type, error.message, error.param, error.code, error.violations), { status: error.status }));
    }
    const message = error instanceof Error ? error.message : String(error);
    return finish(Response.json(handler.errorBody(500, "api_error", `emulator internal error: ${message}`), { status: 500 }));
  }
}

function answer(request: Request, route: Route, handler: ProtocolHandler, body: Record<string, unknown>, now: number, fault: FaultName | undefined, received: ReceivedRequest, state: ServerState): Response {
  // A continued Responses request is answered as the whole conversation it continues.
  const responses = route.protocol === "openai-responses" && route.endpoint !== "count_tokens";
  const whole = responses ? resolvePrevious(body, request.headers, state.env, state.store) : body;
  const parsed = handler.parse(whole, route, request.headers);
  received.model = parsed.model;
  const facts = modelFacts(route.provider, parsed.model);
  validateRequest(route, whole, parsed.model, facts);
  const cacheProvider = route.provider === "unknown" ? "openai" : route.provider;
  const scope = `${cacheProvider}|${parsed.model}`;
  const { blocks, total } = buildBlocks(parsed.items, scope);
  const { items: _items, stream: _stream, includeUsage: _includeUsage, ...settings } = parsed;
  // No answer is longer than the model's output limit, whether the request asked for less or for nothing.
  const maxTokens = facts.output === undefined ? settings.maxTokens : Math.min(settings.maxTokens ?? facts.output, facts.output);
  const prompt: Prompt = { ...settings, maxTokens, provider: route.provider, protocol: route.protocol, blocks, total };
  if (route.endpoint === "count_tokens") return Response.json({ input_tokens: total });
  checkContextWindow(route.protocol, facts, total, parsed.maxTokens);
  const seed = `${scope}|${blocks.at(-1)?.prefix ?? ""}`;
  const made = makeAnswer(prompt, seed, request.headers, state.env);
  checkScriptedAbilities(made, route, body, parsed.model, facts);
  // A model in thinking mode always reasons, so a tool-calling turn has reasoning to send back (case 38).
  const reasoned = thinkingReplayRequired(body, route.provider, facts) ? withReasoning(made, seed) : made;
  let reply = withWebSearches(reasoned, body, seed);
  const cacheContext = {
    store: state.store,
    now,
    seed: state.env[SEED_ENV] ?? "cachet",
    answerBlocks: () => {
      const extra = handler.answerItems(reply);
      return buildBlocks([...parsed.items, ...extra], scope).blocks.slice(parsed.items.length);
    },
  };
  let outcome = cacheOutcome(prompt, cacheContext);
  let compaction: Exchange["compaction"];
  const edit = route.protocol === "anthropic-messages" ? compactionEdit(body, request.headers, parsed.model) : undefined;
  if (edit && total > edit.trigger) {
    // The compaction pass read the whole prompt (outcome above); the answer's pass reads the tools, the system and the summary.
    const content = compactionSummary(seed);
    const head = parsed.items.filter((item) => item.role === "tool" || item.role === "system");
    const after = buildBlocks([...head, compactionItem(content, true, true)], scope);
    compaction = { content, outcome, outputTokens: countTokens(content), pause: edit.pause };
    outcome = cacheOutcome({ ...prompt, blocks: after.blocks, total: after.total }, cacheContext);
    if (edit.pause) reply = { text: "", thinking: "", toolCalls: [], outputTokens: 0, reasoningTokens: 0, truncated: false };
  }
  const exchange: Exchange = {
    id: Bun.hash.wyhash(`${seed}|${now}`).toString(36),
    created: Math.floor(now / 1000),
    route,
    request: parsed,
    prompt,
    answer: reply,
    outcome,
    body,
    headers: request.headers,
    env: state.env,
    ...(compaction ? { compaction } : {}),
  };
  const usage = handler.usage(exchange);
  if (responses && isStored(body)) keepResponse(state.store, responseId(exchange), whole, outputItems(exchange));
  received.usage = usage;
  received.cache = outcome;
  const signatures = handler.signatures?.(exchange);
  if (signatures) received.signatures = signatures;
  const { inspection } = state;
  inspection.count("tokens.input", outcome.input);
  inspection.count("tokens.cache_read", outcome.read);
  inspection.count("tokens.cache_write", outcome.write5m + outcome.write1h);
  inspection.count("tokens.output", reply.outputTokens + reply.reasoningTokens);
  if (outcome.read > 0) inspection.count("cache.hits");
  if (parsed.stream && route.protocol === "gemini" && new URL(request.url).searchParams.get("alt") !== "sse") {
    // Without alt=sse Gemini streams one JSON array of the same chunks.
    const chunks = handler.stream(exchange, usage).events.map((event) => event.slice("data: ".length).trim());
    return new Response(jsonBody(`[${chunks.join(",\n")}]`, fault), { headers: JSON_HEADERS });
  }
  if (parsed.stream) return new Response(streamBody(handler.stream(exchange, usage), handler, fault), { headers: SSE_HEADERS });
  return new Response(jsonBody(JSON.stringify(handler.json(exchange, usage)), fault), { headers: JSON_HEADERS });
}

/** The HTTP error response of a status fault, or undefined for stream faults. */
function httpFault(fault: FaultName, route: Route, body: Record<string, unknown>): ((handler: ProtocolHandler) => Response) | undefined {
  const streaming = body.stream === true || route.endpoint === "stream-generate";
  const overload = route.protocol === "anthropic-messages" ? 529 : 503;
  const status = fault === "429" ? 429 : fault === "500" ? 500 : fault === "503" ? 503 : fault === "529" ? 529 : !streaming && (fault === "error-before" || fault === "error-after") ? overload : undefined;
  if (status === undefined) return undefined;
  const type = status === 429 ? "rate_limit_error" : status === 529 ? "overloaded_error" : "api_error";
  const message = status === 429 ? "Number of request tokens has exceeded your rate limit (emulated)" : status === 529 ? "Overloaded" : status === 500 ? "Internal server error (emulated)" : "Service unavailable (emulated)";
  const headers: Record<string, string> = status === 429 ? { "retry-after": "1", "retry-after-ms": "200" } : {};
  return (handler) => Response.json(handler.errorBody(status, type, message), { status, headers });
}

async function inspect(request: Request, url: URL, state: ServerState): Promise<Response> {
  const what = url.pathname.slice("/_emulator/".length);
  if (what === "requests" && request.method === "GET") {
    const limit = Number(url.searchParams.get("limit") ?? "0");
    const all = state.inspection.requests();
    return Response.json(limit > 0 ? all.slice(-limit) : all);
  }
  if (what === "counters" && request.method === "GET") return Response.json(state.inspection.counters());
  if (what === "release" && request.method === "POST") return Response.json({ released: state.faults.release() });
  if (what === "forget-responses" && request.method === "POST") {
    // Stored Responses API responses: every one, or `?id=resp_…` (repeatable).
    const ids = url.searchParams.getAll("id");
    state.store.forgetResponses(ids.length > 0 ? ids : "all");
    return Response.json({ forgotten: ids.length > 0 ? ids : "all" });
  }
  if (what === "reset" && request.method === "POST") {
    state.inspection.reset();
    state.faults.reset();
    state.store.clear();
    return Response.json({ reset: true });
  }
  return Response.json({ error: { message: `unknown emulator endpoint ${request.method} ${url.pathname}; try GET /_emulator/requests, GET /_emulator/counters, POST /_emulator/release, POST /_emulator/reset, POST /_emulator/forget-responses[?id=ID]` } }, { status: 404 });
}
