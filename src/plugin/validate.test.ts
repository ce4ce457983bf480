/**
 * The wire request check of every render, strategy and `request:before`
 * result (checkWire) costs the request's new segments, and still refuses a
 * wrong segment wherever it newly appears: among segments it has seen well
 * formed at their places before, in the conversation's next request, or in
 * a list it passed before.
 */
import { expect, test } from "bun:test";
import type { WireRequest, WireSegment } from "./wire.ts";
import { checkWire } from "./validate.ts";

const segment = (nodeId: string, kind: WireSegment["kind"], at: number): WireSegment => ({ nodeId, kind, path: ["messages", at] });
const request = (segments: unknown[]): unknown => ({ protocol: "anthropic-messages", body: { messages: segments.map(() => ({})) }, headers: {}, segments });

test("a well-formed request comes back as the very object; a wrong segment is refused wherever it newly appears", () => {
  const first = [segment("sys", "system", 0), segment("m1", "text", 1), segment("m2", "text", 2)];
  const ok = request(first);
  expect(checkWire(ok)).toEqual({ ok: true, value: ok as WireRequest });
  // The next request of the conversation: the same segments at their places, one wrong new one at the end.
  const grown = [...first, { nodeId: "m3", kind: 3, path: ["messages", 3] }];
  expect(checkWire(request(grown))).toMatchObject({ ok: false, problem: expect.stringContaining("segments.3.kind") });
  // A wrong one in the middle, in place of a segment seen there before.
  const replaced = [first[0], first[1], { nodeId: "m2", kind: "text", path: ["messages", null] }];
  expect(checkWire(request(replaced))).toMatchObject({ ok: false, problem: expect.stringContaining("segments.2.path.1") });
  // Not a segment at all at the start; and a list checked before, pushed to since.
  expect(checkWire(request([null, first[1], first[2]]))).toMatchObject({ ok: false });
  const list = [...first];
  expect(checkWire(request(list)).ok).toBe(true);
  list.push({ nodeId: "", path: [] } as unknown as WireSegment);
  expect(checkWire(request(list))).toMatchObject({ ok: false, problem: expect.stringContaining("segments.3.kind") });
  // The wrong requests changed nothing of what was found well formed.
  expect(checkWire(request([...first, segment("m3", "text", 3)])).ok).toBe(true);
});
