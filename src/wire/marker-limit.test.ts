/**
 * The marker limit (src/wire/marker-limit.ts) counts a long session's
 * markers by its new elements only, and counts exactly what a walk of the
 * whole body counts: over random requests of a conversation whose elements
 * are kept, replaced by marked copies (a cache strategy), or unmarked again,
 * the limit is met exactly at the walked count.
 */
import { expect, test } from "bun:test";
import type { CacheRules } from "../plugin/provider.ts";
import type { WireRequest } from "../plugin/wire.ts";
import { assertMarkerLimit, countMarkers } from "./marker-limit.ts";

const rules = (maxBreakpoints: number) => ({ maxBreakpoints }) as CacheRules;
const marker = { type: "ephemeral" };

test("the limit is met exactly at the count of a walk of the whole body (60 random conversations)", () => {
  let random = 7;
  const next = () => (random = (random * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  let requests = 0;
  for (let conversation = 0; conversation < 60; conversation++) {
    const messages: Record<string, unknown>[] = [];
    const system = [{ type: "text", text: "system", ...(next() < 0.5 ? { cache_control: marker } : {}) }];
    for (let step = 0; step < 40; step++) {
      messages.push({ role: step % 2 ? "assistant" : "user", content: [{ type: "text", text: `m${step}` }] });
      // A strategy's marked copies (never the original changed), or an earlier copy unmarked again.
      for (let k = 0; k < 3; k++) {
        const at = Math.floor(next() * messages.length);
        const old = messages[at]!;
        const content = old.content as Record<string, unknown>[];
        messages[at] = next() < 0.7 ? { ...old, content: content.map((b, i) => (i === content.length - 1 ? { ...b, cache_control: marker } : b)) } : { ...old, content: content.map(({ cache_control: _, ...b }) => b) };
      }
      const body = { system, messages: messages.slice(), ...(next() < 0.2 ? { cache_control: marker } : {}) };
      const wire: WireRequest = { protocol: "anthropic-messages", body, headers: {}, segments: [{ nodeId: `c${conversation}`, kind: "text", path: ["messages", 0, "content", 0] }] };
      const count = countMarkers(body);
      expect(() => assertMarkerLimit(wire, rules(count), "anthropic")).not.toThrow();
      if (count > 0) expect(() => assertMarkerLimit(wire, rules(count - 1), "anthropic")).toThrow(`carries ${count} cache markers`);
      requests++;
    }
  }
  expect(requests).toBe(60 * 40);
});
