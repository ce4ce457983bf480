/**
 * Reads a proxied response with the provider's plugin adapter (public plugin
 * API), so the provider's rules come from one place:
 * - a stream: the adapter `send`s through a fetch that answers with the
 *   recorded response instead of the network, so its official SDK parses the
 *   events, merges usage by the provider's rules (Anthropic's cumulative
 *   deltas, Kimi's usage inside the choice), notices error events and cut
 *   streams;
 * - a JSON body: the raw usage object sits at one documented place per
 *   protocol and is read directly (an SDK round trip costs ~1 ms a response,
 *   the proxy's whole budget).
 * Either way the adapter's `usage` mapping normalizes the counts. A stream
 * that ended unfinished keeps the usage it reported so far (the adapter's
 * `usage` events) as a lower bound, as a run keeps it (CASES.md case 44).
 */
import { cutStreamReport, isStreamedOutput } from "../meter/cut-stream.ts";
import type { PluginHost } from "../plugin/host.ts";
import type { ProviderAdapter } from "../plugin/provider.ts";
import type { UsageEvent } from "../plugin/stream.ts";
import type { UsageReport } from "../plugin/usage.ts";
import type { Protocol, WireRequest } from "../plugin/wire.ts";

/** What was read from one response. */
export interface ReadResponse {
  /** Normalized usage; undefined when the response carried none (or could not be read to its end). */
  report: UsageReport | undefined;
  /** The provider's request or response id. */
  requestId: string | undefined;
  /** True when some answer content (text, reasoning, a tool call) was in it. */
  content: boolean;
  /** Why the response is not a complete answer (error event, cut stream); undefined when it is. */
  error: string | undefined;
  /**
   * True when `report` is the usage a stream reported before it ended unfinished (a client that went away, a cut),
   * its output raised to what streamed (src/meter/cut-stream.ts): a lower bound, priced as one, as a run records it.
   */
  lowerBound: boolean;
}

/** Header carrying the replay id from the adapter's SDK to the replay fetch; never leaves the process. */
const REPLAY_HEADER = "x-cachet-replay";

/** Reads responses with the registered providers' adapters, one adapter per provider, created on first use. */
export class UsageReader {
  private readonly adapters = new Map<string, ProviderAdapter>();
  private readonly pending = new Map<string, Response>();
  private next = 0;

  constructor(private readonly host: PluginHost) {}

  /**
   * Reads `response` (status 2xx, body decoded) as `provider` answered it.
   * Never throws: a failure to read is returned as `error`.
   * @param model the model id the request named (the SDK needs one to build its request)
   * @param streaming whether the request asked for a stream
   */
  async read(provider: string, protocol: Protocol, model: string, streaming: boolean, response: Response): Promise<ReadResponse> {
    if (!streaming && /json/i.test(response.headers.get("content-type") ?? "")) return this.readJson(provider, protocol, await response.text());
    const id = String(this.next++);
    this.pending.set(id, response);
    const out: ReadResponse = { report: undefined, requestId: undefined, content: false, error: undefined, lowerBound: false };
    let partial: UsageEvent | undefined;
    let streamedOutput = 0;
    let finished = false;
    try {
      const adapter = this.adapter(provider);
      const wire: WireRequest = { protocol, body: replayBody(protocol, model, streaming), headers: { [REPLAY_HEADER]: id }, segments: [] };
      for await (const event of adapter.send(wire, { signal: new AbortController().signal })) {
        if (event.type === "finish") {
          finished = true;
          out.requestId = event.requestId;
          if (event.rawUsage !== undefined) out.report = adapter.usage(event.rawUsage);
        } else if (event.type === "usage") {
          partial = event;
        } else if (event.type !== "chatter") {
          out.content = true;
          if (isStreamedOutput(event)) streamedOutput += 1;
        }
      }
    } catch (error) {
      out.error = error instanceof Error ? error.message : String(error);
    } finally {
      this.pending.delete(id);
    }
    if (!finished && partial !== undefined) {
      // The adapter ends an unfinished stream by throwing: the usage it reported before the end is read here.
      try {
        out.report = cutStreamReport(this.adapter(provider).usage(partial.rawUsage), streamedOutput);
        out.requestId ??= partial.requestId;
        out.lowerBound = true;
      } catch (error) {
        out.error ??= `unreadable usage: ${error instanceof Error ? error.message : String(error)}`;
      }
    }
    return out;
  }

  /** Reads a non-streamed JSON answer: usage, id and content at their places in the protocol's body. Never throws. */
  readJson(provider: string, protocol: Protocol, text: string): ReadResponse {
    const out: ReadResponse = { report: undefined, requestId: undefined, content: false, error: undefined, lowerBound: false };
    try {
      const body = JSON.parse(text) as Record<string, unknown>;
      const found = JSON_PLACES[protocol](body);
      out.requestId = typeof found.id === "string" ? found.id : undefined;
      out.content = found.content;
      if (found.error) out.error = found.error;
      if (found.usage !== undefined && found.usage !== null) out.report = this.adapter(provider).usage(found.usage);
    } catch (error) {
      out.error = `unreadable response body: ${error instanceof Error ? error.message : String(error)}`;
    }
    return out;
  }

  private adapter(provider: string): ProviderAdapter {
    let adapter = this.adapters.get(provider);
    if (!adapter) {
      adapter = this.host.createAdapter(provider, {
        providerId: provider,
        // Never sent anywhere: the replay fetch below answers every request.
        apiKey: "cachet-proxy-replay",
        baseUrl: "http://replay.invalid",
        fetch: this.replay,
        options: {},
      });
      this.adapters.set(provider, adapter);
    }
    return adapter;
  }

  private readonly replay = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    const id = headers.get(REPLAY_HEADER);
    const response = id === null ? undefined : this.pending.get(id);
    if (!response) throw new Error("cachet proxy: no recorded response to replay");
    this.pending.delete(id!);
    return response;
  }) as typeof fetch;
}

type Places = (body: Record<string, unknown>) => { usage: unknown; id: unknown; content: boolean; error?: string };

/**
 * Where each protocol's JSON answer keeps its usage, id and content.
 * @see https://docs.claude.com/en/api/messages (usage, id, content)
 * @see https://platform.openai.com/docs/api-reference/chat/object (usage; Kimi puts it in choices[0].usage)
 * @see https://platform.openai.com/docs/api-reference/responses/object (usage, status, error)
 * @see https://ai.google.dev/api/generate-content#generatecontentresponse (usageMetadata, responseId)
 */
const JSON_PLACES: Record<Protocol, Places> = {
  "anthropic-messages": (b) => ({ usage: b.usage, id: b.id, content: nonEmpty(b.content) }),
  "openai-chat": (b) => {
    const choice = (Array.isArray(b.choices) ? b.choices[0] : undefined) as { usage?: unknown; message?: { content?: unknown; tool_calls?: unknown } } | undefined;
    return { usage: b.usage ?? choice?.usage, id: b.id, content: Boolean(choice?.message?.content) || nonEmpty(choice?.message?.tool_calls) };
  },
  "openai-responses": (b) => {
    const error = b.status === "failed" ? `response failed: ${JSON.stringify(b.error ?? null)}` : undefined;
    return { usage: b.usage, id: b.id, content: nonEmpty(b.output), ...(error ? { error } : {}) };
  },
  gemini: (b) => {
    const candidate = (Array.isArray(b.candidates) ? b.candidates[0] : undefined) as { content?: { parts?: unknown } } | undefined;
    return { usage: b.usageMetadata, id: b.responseId, content: nonEmpty(candidate?.content?.parts) };
  },
};

function nonEmpty(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0;
}

/** The smallest body the adapter's SDK accepts; it is never sent, only its `model` and `stream` choose the endpoint. */
function replayBody(protocol: Protocol, model: string, streaming: boolean): Record<string, unknown> {
  switch (protocol) {
    case "anthropic-messages":
      return { model, max_tokens: 1, messages: [], stream: streaming };
    case "gemini":
      // The SDK refuses an empty `contents` before it ever calls fetch.
      return { model, contents: [{ role: "user", parts: [{ text: "-" }] }], stream: streaming };
    default:
      return { model, messages: [], input: [], stream: streaming };
  }
}
