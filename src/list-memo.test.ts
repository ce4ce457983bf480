/**
 * The list memo (src/list-memo.ts) hands back exactly what computing every
 * element afresh gives, and computes only the elements that changed.
 */
import { describe, expect, test } from "bun:test";
import { ListMemo } from "./list-memo.ts";

type Item = { id: string; incomplete?: boolean };
// The tests' lists are short: every one is kept (the default keeps lists of 16 elements and more).
const SHORT = { shortest: 0 };
const item = (id: string, incomplete = false): Item => ({ id, ...(incomplete ? { incomplete } : {}) });

describe("ListMemo", () => {
  test("computes only the elements that are not the objects of the conversation's last list at the same places", () => {
    const computed: string[] = [];
    const memo = new ListMemo<Item, string>((x, i) => {
      computed.push(x.id);
      return `${x.id}@${i}`;
    }, SHORT);
    const results = (list: Item[]) => [...memo.map(list).results];
    const [a, b, c, d] = [item("a"), item("b"), item("c"), item("d")];
    expect(results([a, b])).toEqual(["a@0", "b@1"]);
    expect(results([a, b, c])).toEqual(["a@0", "b@1", "c@2"]);
    expect(computed).toEqual(["a", "b", "c"]);
    // A replaced element is computed again; the ones after it, at their places as before, are not.
    const b2 = { ...b };
    expect(results([a, b2, c, d])).toEqual(["a@0", "b@1", "c@2", "d@3"]);
    expect(computed.slice(3)).toEqual(["b", "d"]);
    // Shorter, then longer again: what lay beyond the shorter list is computed again.
    expect(results([a])).toEqual(["a@0"]);
    expect(results([a, b2])).toEqual(["a@0", "b@1"]);
    expect(computed.slice(5)).toEqual(["b"]);
    // The same objects at other places are computed again (a result may depend on the index).
    expect(results([b2, a])).toEqual(["b@0", "a@1"]);
    expect(computed.slice(6)).toEqual(["b", "a"]);
  });

  test("keeps each conversation's list apart", () => {
    const computed: string[] = [];
    const memo = new ListMemo<Item, string>((x) => (computed.push(x.id), x.id), SHORT);
    const [a1, a2, b1, b2] = [item("a1"), item("a2"), item("b1"), item("b2")];
    memo.map([a1]);
    memo.map([b1]);
    memo.map([a1, a2]);
    memo.map([b1, b2]);
    expect(computed).toEqual(["a1", "b1", "a2", "b2"]);
  });

  test("withPrevious: an element is computed again when the one before it changed", () => {
    const computed: string[] = [];
    const memo = new ListMemo<Item, string>((x, i, list) => (computed.push(x.id), `${list[i - 1]?.id ?? "-"}>${x.id}`), { withPrevious: true, ...SHORT });
    const [a, b, c] = [item("a"), item("b"), item("c")];
    memo.map([a, b, c]);
    expect([...memo.map([a, { ...b }, c]).results]).toEqual(["->a", "a>b", "b>c"]);
    expect(computed).toEqual(["a", "b", "c", "b", "c"]);
  });

  test("keep: a result not kept is computed again, and with withPrevious so is the element after it", () => {
    const computed: string[] = [];
    const memo = new ListMemo<Item, string>((x) => (computed.push(x.id), x.id), { withPrevious: true, keep: (x) => !x.incomplete, ...SHORT });
    const [a, cut, c] = [item("a"), item("cut", true), item("c")];
    memo.map([a, cut, c]);
    memo.map([a, cut, c]);
    expect(computed).toEqual(["a", "cut", "c", "cut", "c"]);
    // keep sees the result: a failed check is made again.
    let calls = 0;
    const checks = new ListMemo<Item, boolean>((x) => (calls++, x.id !== "bad"), { keep: (_, ok) => ok, ...SHORT });
    const bad = item("bad");
    expect([...checks.map([a, bad]).results]).toEqual([true, false]);
    expect([...checks.map([a, bad]).results]).toEqual([true, false]);
    expect(calls).toBe(3);
  });

  test("total: the sum of the weights follows replaced, added and dropped elements, over two conversations in turn", () => {
    let random = 11;
    const next = () => (random = (random * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const sizes = new ListMemo<Item, number>((x) => x.id.length, { weight: (size) => size });
    const lists: Item[][] = [[item("first of one")], [item("first of two")]];
    let computed = 0;
    const counting = new ListMemo<Item, number>((x) => (computed++, x.id.length), { weight: (size) => size });
    let steps = 0;
    for (let step = 0; step < 2000; step++) {
      const which = step % 2;
      let list = lists[which]!;
      const r = next();
      if (r < 0.6) list = [...list, item("x".repeat(Math.floor(next() * 5)))];
      else if (r < 0.7 && list.length > 1) list = list.slice(0, 1 + Math.floor(next() * (list.length - 1)));
      else if (list.length > 1) {
        const at = 1 + Math.floor(next() * (list.length - 1));
        list = list.map((x, i) => (i === at ? item(x.id + "y") : x));
      }
      lists[which] = list;
      expect({ step, total: sizes.map(list).total }).toEqual({ step, total: list.reduce((n, x) => n + x.id.length, 0) });
      counting.map(list);
      steps++;
    }
    // Each conversation's list was found again: about one element computed a step, not whole lists.
    expect(steps).toBe(2000);
    expect(computed).toBeLessThan(3 * 2000);
  });

  test("a throwing compute keeps what was computed before it and computes the failed element again next time", () => {
    const computed: string[] = [];
    let fail = true;
    const memo = new ListMemo<Item, string>(
      (x) => {
        computed.push(x.id);
        if (x.id === "b" && fail) throw new Error("bad b");
        return x.id;
      },
      { weight: (id) => id.length, ...SHORT },
    );
    const [a, b, c] = [item("a"), item("b"), item("c")];
    expect(() => memo.map([a, b, c])).toThrow("bad b");
    expect(() => memo.map([a, b, c])).toThrow("bad b");
    fail = false;
    const done = memo.map([a, b, c]);
    expect([...done.results]).toEqual(["a", "b", "c"]);
    expect(done.total).toBe(3);
    expect(computed).toEqual(["a", "b", "b", "b", "c"]);
    // A throw in place of a known element: it is computed again, and the total counts it once.
    const b2 = item("bb");
    fail = true;
    const failing = new ListMemo<Item, string>((x) => {
      if (x === b2 && fail) throw new Error("bad bb");
      return x.id;
    }, { weight: (id) => id.length, ...SHORT });
    failing.map([a, b, c]);
    expect(() => failing.map([a, b2, c])).toThrow("bad bb");
    fail = false;
    expect(failing.map([a, b2, c]).total).toBe(4);
  });

  test("changedFrom: results before it are those of the previous call that returned; a result recomputed to an equal value is no change", () => {
    let fail = false;
    const memo = new ListMemo<Item, string>((x) => {
      if (fail && x.id === "boom") throw new Error("boom");
      return x.id.toUpperCase();
    }, SHORT);
    const [a, b, c, d] = [item("a"), item("b"), item("c"), item("d")];
    expect(memo.map([a, b, c]).changedFrom).toBe(0);
    expect(memo.map([a, b, c]).changedFrom).toBe(3);
    expect(memo.map([a, b, c, d]).changedFrom).toBe(3);
    // A new object with the same text at the start (a system message rendered afresh), another one later.
    expect(memo.map([item("a"), b, item("x"), d]).changedFrom).toBe(2);
    expect(memo.map([a, b]).changedFrom).toBe(2);
    // A call that throws after changing the second result: the next call that returns reports the change.
    const [y, boom] = [item("y"), item("boom")];
    fail = true;
    expect(() => memo.map([a, y, boom])).toThrow("boom");
    fail = false;
    // y is not computed again (its result was kept), yet the change it made is reported.
    expect(memo.map([a, y, boom]).changedFrom).toBe(1);
  });

  test("short lists unlike any kept one are computed but not kept: they do not push a long conversation's list out", () => {
    let computed = 0;
    const memo = new ListMemo<Item, string>((x) => (computed++, x.id));
    const long = Array.from({ length: 100 }, (_, i) => item(`m${i}`));
    memo.map(long);
    for (let i = 0; i < 40; i++) memo.map([item(`fresh ${i}`)]);
    const grown = [...long, item("new")];
    memo.map(grown);
    expect(computed).toBe(100 + 40 + 1);
    // A short list is computed afresh each time.
    const short = [item("a"), item("b")];
    memo.map(short);
    memo.map(short);
    expect(computed).toBe(141 + 4);
  });

  test("an undefined element is computed, not mistaken for a place the last list did not have", () => {
    const memo = new ListMemo<unknown, string>((x, i) => `${String(x)}${i}`, SHORT);
    expect([...memo.map([undefined]).results]).toEqual(["undefined0"]);
    expect([...memo.map([undefined, undefined]).results]).toEqual(["undefined0", "undefined1"]);
  });
});
