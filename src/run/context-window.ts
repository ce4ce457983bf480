/**
 * The context-window check before a request is sent: a prompt (plus the
 * requested output) larger than the model's window from the catalog is a
 * local error naming the estimate and the limit, before anything is paid
 * (the provider would refuse it: "prompt is too long").
 */
import type { Message, RequestContext } from "../context/types.ts";
import { CachetError } from "../errors.ts";
import type { ChainLink } from "../session/types.ts";

/**
 * Refuses a request that cannot fit `provider/model`'s context window.
 * Cheap for ordinary prompts: the token estimate (the request's hash chain)
 * is awaited only when the prompt has more characters than the window has
 * tokens, since a token is at least one character.
 * @param catalogRef `provider/model` as the catalog names it
 * @param chain the request's hash chain with per-node token estimates
 * @param maxTokens the max_tokens the request sends (`--max-tokens`, else the
 *   provider's default, ProviderSpec.defaultMaxTokens), reserved in the window as the
 *   provider does; undefined when it sends none
 * Also refuses, as a usage error, the generation settings the model refuses
 * (see {@link checkParameters}).
 * @throws CachetError CONTEXT_TOO_LONG (exit 3) with the estimate and the limit; BAD_FLAG (exit 2) from checkParameters.
 */
export async function checkContextWindow(catalogRef: string, context: RequestContext, chain: Promise<ChainLink[]>, maxTokens: number | undefined): Promise<void> {
  const entry = await catalogEntry(catalogRef);
  if (entry === undefined) return;
  checkParameters(catalogRef, entry, context.generation);
  const window = entry.limit?.context;
  if (window === undefined) return;
  const output = maxTokens ?? 0;
  if (promptChars(context) + output <= window) return;
  const estimate = (await chain).reduce((n, link) => n + link.tokens, 0);
  if (estimate + output <= window) return;
  throw new CachetError(
    "CONTEXT_TOO_LONG",
    `the request does not fit ${catalogRef}'s context window: about ${estimate.toLocaleString("en-US")} prompt tokens${output ? ` + ${output.toLocaleString("en-US")} output` : ""} > ${window.toLocaleString("en-US")}; nothing was sent`,
    { hint: "compact the session (`cachet compact`; runs compact on their own unless --no-compact or compaction.enabled = false), send less input, lower --max-tokens, or pick a model with a larger window (`cachet models`)" },
  );
}

function promptChars(context: RequestContext): number {
  let n = context.overlay?.length ?? 0;
  for (const part of context.prefix.system) n += part.text.length;
  for (const message of context.summary) n += messageChars(message);
  for (const message of context.messages) n += messageChars(message);
  for (const tool of context.prefix.tools) n += JSON.stringify(tool).length;
  return n;
}

// Stored messages never change: their sizes are summed once per process.
const charsOf = new WeakMap<Message, number>();

function messageChars(message: Message): number {
  const known = charsOf.get(message);
  if (known !== undefined) return known;
  let n = 0;
  for (const block of message.content) n += block.type === "text" || block.type === "thinking" ? block.text.length : block.type === "tool_result" ? block.content.length : block.type === "tool_use" ? block.arguments.length : block.type === "provider" ? JSON.stringify(block.data).length : 0;
  if (!message.incomplete) charsOf.set(message, n);
  return n;
}

interface CatalogEntry {
  limit?: { context?: number; output?: number };
  temperature?: boolean;
}

async function catalogEntry(catalogRef: string): Promise<CatalogEntry | undefined> {
  try {
    const { loadCatalog } = await import("../meter/index.ts");
    const { findModel } = await import("../meter/catalog.ts");
    return findModel((await loadCatalog()).catalog, catalogRef) as CatalogEntry | undefined;
  } catch {
    return undefined; // an unknown model or a catalog problem is reported by pricing; no limit to check
  }
}

/**
 * Settings the model refuses, as the provider would (src/emulator/validate
 * holds the provider's side): `temperature` and `top_p` other than the
 * default on models that accept only the default (catalog `temperature:
 * false`, OpenAI reasoning models), and `max_tokens` above the model's output limit.
 * @throws CachetError BAD_FLAG (exit 2) naming the model and the setting.
 */
export function checkParameters(catalogRef: string, entry: CatalogEntry, generation: RequestContext["generation"]): void {
  if (entry.temperature === false) {
    const given: [string, unknown][] = [
      ["--temperature", generation.temperature],
      ["-o temperature", generation.providerOptions.temperature],
      ["-o top_p", generation.providerOptions.top_p],
    ];
    for (const [flag, value] of given) {
      if (value !== undefined && value !== 1) {
        throw new CachetError("BAD_FLAG", `${catalogRef} accepts only the default ${flag.replace(/^-o |^--/, "")} (1); ${flag} ${String(value)} would be refused by the provider`, { hint: `drop ${flag} for this model` });
      }
    }
  }
  const output = entry.limit?.output;
  if (output !== undefined && generation.maxTokens !== undefined && generation.maxTokens > output) {
    throw new CachetError("BAD_FLAG", `--max-tokens ${generation.maxTokens} is above ${catalogRef}'s output limit of ${output.toLocaleString("en-US")} tokens`, { hint: `pass --max-tokens ${output} or less` });
  }
}
