/**
 * Reads a proxied response the way cachet reads its own: the provider's
 * plugin adapter (public plugin API) `send`s through a fetch that answers
 * with the recorded response instead of the network, so its official SDK
 * parses the stream, merges usage by the provider's rules, notices error
 * events and cut streams, and its `usage` mapping normalizes the counts. The
 * proxy holds no parser of its own for any provider's response.
 */
import type { PluginHost } from "../plugin/host.ts";
import type { ProviderAdapter } from "../plugin/provider.ts";
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
    const id = String(this.next++);
    this.pending.set(id, response);
    const out: ReadResponse = { report: undefined, requestId: undefined, content: false, error: undefined };
    try {
      const adapter = this.adapter(provider);
      const wire: WireRequest = { protocol, body: replayBody(protocol, model, streaming), headers: { [REPLAY_HEADER]: id }, segments: [] };
      for await (const event of adapter.send(wire, { signal: new AbortController().signal })) {
        if (event.type === "finish") {
          out.requestId = event.requestId;
          if (event.rawUsage !== undefined) out.report = adapter.usage(event.rawUsage);
        } else if (event.type !== "chatter") {
          out.content = true;
        }
      }
    } catch (error) {
      out.error = error instanceof Error ? error.message : String(error);
    } finally {
      this.pending.delete(id);
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
