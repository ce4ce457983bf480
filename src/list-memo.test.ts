/**
 * The list memo (src/list-memo.ts) hands back exactly what computing every
 * element afresh gives, and computes only the elements that changed.
 */
import { describe, expect, test } from "bun:test";
import { ListMemo } from "./list-memo.ts";

type Item = { id: string; incomplete?: boolean };
const item = (id: string, incomplete = false): Item => ({ id, ...(incomplete ? { incomplete } : {}) });

describe("ListMemo", () => {
  test("computes only the elements that are not the objects of the conversation's last list at the same places", () => {
    const memo = new ListMemo<Item, string>();
    const computed: string[] = [];
    const compute = (x: Item, i: number) => {
      computed.push(x.id);
      return `${x.id}@${i}`;
    };
    const [a, b, c, d] = [item("a"), item("b"), item("c"), item("d")];
    expect([...memo.map("s", [a, b], compute)]).toEqual(["a@0", "b@1"]);
    expect([...memo.map("s", [a, b, c], compute)]).toEqual(["a@0", "b@1", "c@2"]);
    expect(computed).toEqual(["a", "b", "c"]);
    // A replaced element is computed again; the ones after it, at their places as before, are not.
    const b2 = { ...b };
    expect([...memo.map("s", [a, b2, c, d], compute)]).toEqual(["a@0", "b@1", "c@2", "d@3"]);
    expect(computed.slice(3)).toEqual(["b", "d"]);
    // Shorter, then longer again: what lay beyond the shorter list is computed again.
    expect([...memo.map("s", [a], compute)]).toEqual(["a@0"]);
    expect([...memo.map("s", [a, b2], compute)]).toEqual(["a@0", "b@1"]);
    expect(computed.slice(5)).toEqual(["b"]);
    // The same objects at other places are computed again (a result may depend on the index).
    expect([...memo.map("s", [b2, a], compute)]).toEqual(["b@0", "a@1"]);
    expect(computed.slice(6)).toEqual(["b", "a"]);
  });

  test("keeps each conversation's list apart", () => {
    const memo = new ListMemo<Item, string>();
    const computed: string[] = [];
    const compute = (x: Item) => (computed.push(x.id), x.id);
    const [a1, a2, b1, b2] = [item("a1"), item("a2"), item("b1"), item("b2")];
    memo.map(a1, [a1], compute);
    memo.map(b1, [b1], compute);
    memo.map(a1, [a1, a2], compute);
    memo.map(b1, [b1, b2], compute);
    expect(computed).toEqual(["a1", "b1", "a2", "b2"]);
  });

  test("withPrevious: an element is computed again when the one before it changed", () => {
    const memo = new ListMemo<Item, string>();
    const computed: string[] = [];
    const pair = (x: Item, i: number, list: readonly Item[]) => (computed.push(x.id), `${list[i - 1]?.id ?? "-"}>${x.id}`);
    const [a, b, c] = [item("a"), item("b"), item("c")];
    memo.map("s", [a, b, c], pair, { withPrevious: true });
    expect([...memo.map("s", [a, { ...b }, c], pair, { withPrevious: true })]).toEqual(["->a", "a>b", "b>c"]);
    expect(computed).toEqual(["a", "b", "c", "b", "c"]);
  });

  test("keep: a result not kept is computed again, and with withPrevious so is the element after it", () => {
    const memo = new ListMemo<Item, string>();
    const computed: string[] = [];
    const compute = (x: Item) => (computed.push(x.id), x.id);
    const options = { withPrevious: true, keep: (x: Item) => !x.incomplete };
    const [a, cut, c] = [item("a"), item("cut", true), item("c")];
    memo.map("s", [a, cut, c], compute, options);
    memo.map("s", [a, cut, c], compute, options);
    expect(computed).toEqual(["a", "cut", "c", "cut", "c"]);
    // keep sees the result: a failed check is made again.
    const checks = new ListMemo<Item, boolean>();
    let calls = 0;
    const check = (x: Item) => (calls++, x.id !== "bad");
    const bad = item("bad");
    expect([...checks.map("s", [a, bad], check, { keep: (_, ok) => ok })]).toEqual([true, false]);
    expect([...checks.map("s", [a, bad], check, { keep: (_, ok) => ok })]).toEqual([true, false]);
    expect(calls).toBe(3);
  });

  test("a throwing compute keeps what was computed before it and computes the failed element again next time", () => {
    const memo = new ListMemo<Item, string>();
    const computed: string[] = [];
    let fail = true;
    const compute = (x: Item) => {
      computed.push(x.id);
      if (x.id === "b" && fail) throw new Error("bad b");
      return x.id;
    };
    const [a, b, c] = [item("a"), item("b"), item("c")];
    expect(() => memo.map("s", [a, b, c], compute)).toThrow("bad b");
    expect(() => memo.map("s", [a, b, c], compute)).toThrow("bad b");
    fail = false;
    expect([...memo.map("s", [a, b, c], compute)]).toEqual(["a", "b", "c"]);
    expect(computed).toEqual(["a", "b", "b", "b", "c"]);
  });

  test("an undefined element is computed, not mistaken for a place the last list did not have", () => {
    const memo = new ListMemo<unknown, string>();
    expect([...memo.map("s", [undefined], (x) => String(x))]).toEqual(["undefined"]);
    expect([...memo.map("s", [undefined, undefined], (x, i) => `${String(x)}${i}`)]).toEqual(["undefined", "undefined1"]);
  });
});
