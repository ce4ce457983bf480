/**
 * The context-window check before a request is sent: a prompt (plus the
 * requested output) larger than the model's window from the catalog is a
 * local error naming the estimate and the limit, before anything is paid
 * (the provider would refuse it: "prompt is too long").
 */
import type { Message, RequestContext } from "../context/types.ts";
import { CachetError } from "../errors.ts";
import { ListMemo } from "../list-memo.ts";
import type { ModelLimits } from "../meter/model-limits.ts";
import type { ChainLink } from "../session/types.ts";

/** The session a request is for, named in the hint of a request too long for the window ({@link checkContextWindow}). */
export interface WindowSession {
  /** The session's id. */
  id: string;
  /** The parent's id when the request is a fork's first (the fork is not kept when it fails: only the parent can be compacted); else null. */
  forkOf: string | null;
}

/**
 * Refuses a request that cannot fit `provider/model`'s context window.
 * Cheap for ordinary prompts: the limits come from a small table, not the
 * whole catalog (src/meter/model-limits.ts), and the token estimate (the
 * request's hash chain) is asked for only when the prompt's text has more UTF-8
 * bytes than the window has tokens, since a token is at least one byte (not
 * one UTF-16 character: a CJK character or an emoji can be several tokens).
 * @param entryOf reads the catalog's entry of a model (Runtime.catalogEntry)
 * @param catalogRef `provider/model` as the catalog names it
 * @param chain starts (or joins) counting the request's hash chain with per-node token estimates
 * @param maxTokens the max_tokens the request sends (`--max-tokens`, else the
 *   provider's default, ProviderSpec.defaultMaxTokens), reserved in the window as the
 *   provider does; undefined when it sends none
 * @param sessionOf the session the request is for, read only when the request is refused (its hint names it)
 * Also refuses, as a usage error, the generation settings the model refuses
 * (see {@link checkParameters}).
 * @throws CachetError CONTEXT_TOO_LONG (exit 3) with the estimate and the limit; BAD_FLAG (exit 2) from checkParameters.
 */
export async function checkContextWindow(entryOf: CatalogEntryOf, catalogRef: string, context: RequestContext, chain: () => Promise<ChainLink[]>, maxTokens: number | undefined, sessionOf: () => WindowSession): Promise<void> {
  const entry = await knownEntry(entryOf, catalogRef);
  if (entry === undefined) return;
  checkParameters(catalogRef, entry, context.generation);
  const window = entry.limit?.context;
  if (window === undefined) return;
  const output = maxTokens ?? 0;
  if (promptBytes(context) + output <= window) return;
  const estimate = (await chain()).reduce((n, link) => n + link.tokens, 0);
  if (estimate + output <= window) return;
  throw new CachetError(
    "CONTEXT_TOO_LONG",
    `the request does not fit ${catalogRef}'s context window: about ${estimate.toLocaleString("en-US")} prompt tokens${output ? ` + ${output.toLocaleString("en-US")} output` : ""} > ${window.toLocaleString("en-US")}; nothing was sent`,
    { hint: tooLongHint(context.messages.length > 1 ? sessionOf() : undefined, estimate < window ? output : 0) },
  );
}

/**
 * What can make a request fit, and only that: compaction when earlier
 * messages could go into a summary (a session's first prompt has none), a
 * lower --max-tokens when the prompt alone fits and the output reserved is
 * what overflows. The compaction named is the session's own (`cachet compact` alone would compact the latest
 * session); for a fork's first request, which inherits its parent's messages and is not kept when refused, the
 * parent's, after which the fork is made again.
 * @param earlier the session, when earlier messages could be compacted; undefined on a first prompt
 * @param reservedTokens output tokens reserved in the window that lowering --max-tokens would give back; 0 when that cannot help
 */
function tooLongHint(earlier: WindowSession | undefined, reservedTokens: number): string {
  const compact =
    earlier === undefined
      ? []
      : earlier.forkOf === null
        ? [`compact the session (\`cachet compact --session ${earlier.id}\`; runs compact on their own unless --no-compact or compaction.enabled = false)`]
        : [`compact what the fork inherits (its first run compacts it on its own unless --no-compact or compaction.enabled = false; or \`cachet compact --session ${earlier.forkOf}\` compacts the parent, then fork it again)`];
  const ways = [...compact, "send less input", ...(reservedTokens > 0 ? [`lower --max-tokens (${reservedTokens.toLocaleString("en-US")} output tokens are reserved in the window)`] : [])];
  return `${ways.join(", ")}, or pick a model with a larger window (\`cachet models\`)`;
}

/** UTF-8 bytes of the request's text: an upper bound of its tokens. */
function promptBytes(context: RequestContext): number {
  let n = bytes(context.overlay ?? "");
  for (const part of context.prefix.system) n += bytes(part.text);
  n += logBytes(context.summary) + logBytes(context.messages);
  for (const tool of context.prefix.tools) n += bytes(JSON.stringify(tool));
  return n;
}

function logBytes(messages: readonly Message[]): number {
  return sizes.map(messages).total;
}

function messageBytes(message: Message): number {
  let n = 0;
  for (const block of message.content) n += block.type === "text" || block.type === "thinking" ? bytes(block.text) : block.type === "tool_result" ? bytes(block.content) : block.type === "tool_use" ? bytes(block.arguments) : block.type === "provider" ? bytes(JSON.stringify(block.data)) : 0;
  return n;
}

// Stored messages never change: each is measured once, and a long session's total follows its new messages (src/list-memo.ts).
const sizes = new ListMemo<Message, number>(messageBytes, { keep: (message) => !message.incomplete, weight: (size) => size });

function bytes(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/**
 * The catalog's entry of a model, `provider/model` as the catalog names it (Runtime.catalogEntry: read once per
 * runtime and model, as its other limits are); undefined when the catalog does not list it.
 * @throws (as the promise's rejection) CachetError UNKNOWN_MODEL, CATALOG_INVALID
 */
export type CatalogEntryOf = (catalogRef: string) => Promise<ModelLimits | undefined>;

async function knownEntry(entryOf: CatalogEntryOf, catalogRef: string): Promise<ModelLimits | undefined> {
  try {
    return await entryOf(catalogRef);
  } catch {
    return undefined; // an unknown model or a catalog problem is reported by pricing; no limit to check
  }
}

/**
 * Refuses the generation settings `provider/model` refuses ({@link checkParameters}); nothing to check for a
 * model the catalog does not know.
 * @param entryOf reads the catalog's entry of a model (Runtime.catalogEntry)
 * @param catalogRef `provider/model` as the catalog names it
 * @throws CachetError BAD_FLAG (exit 2) naming the model and the setting.
 */
export async function checkGeneration(entryOf: CatalogEntryOf, catalogRef: string, generation: RequestContext["generation"]): Promise<void> {
  const entry = await knownEntry(entryOf, catalogRef);
  if (entry !== undefined) checkParameters(catalogRef, entry, generation);
}

/**
 * Settings the model refuses, as the provider would (src/emulator/validate
 * holds the provider's side): `temperature` and `top_p` other than the
 * default on models that accept only the default (catalog `temperature:
 * false`, OpenAI reasoning models), and `max_tokens` above the model's output limit.
 * @throws CachetError BAD_FLAG (exit 2) naming the model and the setting.
 */
export function checkParameters(catalogRef: string, entry: ModelLimits, generation: RequestContext["generation"]): void {
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
