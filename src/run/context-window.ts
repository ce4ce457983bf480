/**
 * The context-window check before a request is sent: a prompt (plus the
 * requested output) larger than the model's window from the catalog is a
 * local error naming the estimate and the limit, before anything is paid
 * (the provider would refuse it: "prompt is too long").
 */
import type { RequestContext } from "../context/types.ts";
import { CachetError } from "../errors.ts";
import type { ChainLink } from "../session/types.ts";

/**
 * Refuses a request that cannot fit `provider/model`'s context window.
 * Cheap for ordinary prompts: the token estimate (the request's hash chain)
 * is awaited only when the prompt has more characters than the window has
 * tokens, since a token is at least one character.
 * @param catalogRef `provider/model` as the catalog names it
 * @param chain the request's hash chain with per-node token estimates
 * @throws CachetError CONTEXT_TOO_LONG (exit 3) with the estimate and the limit.
 */
export async function checkContextWindow(catalogRef: string, context: RequestContext, chain: Promise<ChainLink[]>, maxTokens: number | undefined): Promise<void> {
  const { loadCatalog } = await import("../meter/index.ts");
  const { findModel } = await import("../meter/catalog.ts");
  let window: number | undefined;
  try {
    window = findModel((await loadCatalog()).catalog, catalogRef)?.limit?.context;
  } catch {
    return; // an unknown model or a catalog problem is reported by pricing; no limit to check
  }
  if (window === undefined) return;
  const output = maxTokens ?? 0;
  if (promptChars(context) + output <= window) return;
  const estimate = (await chain).reduce((n, link) => n + link.tokens, 0);
  if (estimate + output <= window) return;
  throw new CachetError(
    "CONTEXT_TOO_LONG",
    `the request does not fit ${catalogRef}'s context window: about ${estimate.toLocaleString("en-US")} prompt tokens${output ? ` + ${output.toLocaleString("en-US")} output` : ""} > ${window.toLocaleString("en-US")}; nothing was sent`,
    { hint: "send less input (split it, or summarize it first), lower --max-tokens, or pick a model with a larger window (`cachet models`)" },
  );
}

function promptChars(context: RequestContext): number {
  let n = context.overlay?.length ?? 0;
  for (const part of context.prefix.system) n += part.text.length;
  for (const message of [...context.summary, ...context.messages]) {
    for (const block of message.content) n += block.type === "text" || block.type === "thinking" ? block.text.length : block.type === "tool_result" ? block.content.length : block.type === "tool_use" ? block.arguments.length : 0;
  }
  for (const tool of context.prefix.tools) n += JSON.stringify(tool).length;
  return n;
}
