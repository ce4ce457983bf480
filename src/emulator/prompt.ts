/**
 * Turns the content items a protocol parser read into prompt blocks with
 * cumulative prefix hashes and token positions: the one representation every
 * cache model works on.
 */
import { countTokens } from "./tokenizer.ts";
import type { ContentItem, PromptBlock } from "./types.ts";

/**
 * Cumulative hashes and token positions of `items`, in order.
 * The chain is seeded with the provider and model: caches never cross models.
 * A block's hash covers its role, text and any `settings` hash carried by
 * the block, so a settings change invalidates every later position.
 */
export function buildBlocks(items: readonly ContentItem[], scope: string): { blocks: PromptBlock[]; total: number } {
  const blocks: PromptBlock[] = new Array(items.length);
  let prefix = Bun.hash.wyhash(scope);
  let end = 0;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const content = item.settings === undefined ? `${item.role}\u0000${item.text}` : `${item.role}\u0000${item.settings}\u0000${item.text}`;
    prefix = Bun.hash.wyhash(content, prefix);
    end += item.tokens ?? countTokens(item.text);
    blocks[i] = {
      prefix: prefix.toString(36),
      end,
      marker: item.marker,
      messageEnd: item.messageEnd === true,
      eligible: item.eligible === true,
      cacheable: item.cacheable !== false,
      role: item.role,
    };
  }
  return { blocks, total: end };
}
