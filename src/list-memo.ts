/**
 * Per-element results over lists that repeat themselves: a long session's
 * next request holds mostly the very objects of the last one at the same
 * places (stored messages, the render memo's wire elements and segments),
 * so a check or a sum over it is redone for the elements that changed only,
 * and the rest costs one pointer compare each (DESIGN.md, "Data flow of one
 * turn": a turn's cost grows with its new nodes, not with the history).
 */

/** Conversations a memo keeps the last list of (a process may serve several sessions in turn: the probe, the proxy). */
const MAX_LISTS = 16;

const NONE = Symbol("no kept result");

/** What a memo keeps of one conversation's last list, and what {@link ListMemo.map} returns. */
export interface ListResults<R> {
  /** One result per element of the list, in order. */
  readonly results: readonly R[];
  /** The sum of the elements' weights (0 without a `weight` option). */
  readonly total: number;
  /**
   * The results before this index are those this record held after the
   * previous call that returned it (equal by `===`: a string recomputed to the same text is unchanged).
   */
  readonly changedFrom: number;
}

interface LastList<T, R> extends ListResults<R> {
  /** The elements whose results are kept, by index; NONE where the result was not kept. */
  items: (T | typeof NONE)[];
  results: R[];
  weights: number[];
  total: number;
  changedFrom: number;
  /** The lowest index changed since the last call returned (a call that throws leaves its changes here). */
  dirtyFrom: number;
}

/** How a {@link ListMemo} computes and keeps one element's result. */
export interface ListMemoOptions<T, R> {
  /**
   * The result of an element also depends on the element before it (a pair
   * check): it is reused only when that one is the same object as last time too.
   */
  withPrevious?: boolean;
  /** False for a result that must not be kept: an incomplete answer may still grow, a failed check is made again. */
  keep?: (item: T, result: R) => boolean;
  /** A number per element, summed into `total` as elements change (a size, a count of markers, of failures). */
  weight?: (result: R, item: T) => number;
  /**
   * A list shorter than this that continues no kept list is computed but not
   * kept (default 16): it costs little to compute again, and keeping it would
   * push a long conversation's list out (a request's tools and system parts are rendered afresh every time).
   */
  shortest?: number;
}

/**
 * Memory of the last list each conversation passed through one pure
 * per-element computation. The elements must not be changed in place once
 * seen (the store's messages are frozen; wire elements are shared between
 * renders and copied to be marked): a result is reused on identity alone.
 * A list's conversation is the kept list holding the same objects at a few
 * places in its middle (no key to pass: a chat request's first messages are
 * rendered afresh every time, its middle is the history).
 */
export class ListMemo<T, R> {
  /** Most recently used last. */
  private readonly lists: LastList<T, R>[] = [];

  /**
   * @param compute an element's result: a pure function of the element (and, with `withPrevious`, of
   *   the one before it, `list[index - 1]`); when it throws, the results computed before stay kept
   */
  constructor(
    private readonly compute: (item: T, index: number, list: readonly T[]) => R,
    private readonly options: ListMemoOptions<T, R> = {},
  ) {}

  /**
   * The results of the elements of `list`: an element that is the very
   * object the last list of its conversation held at the same index gets
   * the result kept for it, the others are computed.
   * @returns the memo's own record: read it before the next call, never change it
   */
  map(list: readonly T[]): ListResults<R> {
    const last = this.lastList(list);
    const { items, results, weights } = last;
    const { withPrevious = false, keep, weight } = this.options;
    const n = list.length;
    if (items.length > n) {
      // Shorter than last time: what lay beyond is another list's.
      for (let j = n; j < weights.length; j++) last.total -= weights[j]!;
      items.length = results.length = weights.length = n;
      last.dirtyFrom = Math.min(last.dirtyFrom, n);
    }
    let i = 0;
    // With `withPrevious`: the element after a computed one is computed too.
    let again = false;
    while (i < n) {
      if (!again) {
        i = sameUntil(items, list, i);
        if (i === n) break;
      }
      const item = list[i]!;
      const known = i < items.length;
      // Forgotten first, so a throwing compute leaves no stale pair behind.
      if (known) items[i] = NONE;
      const result = this.compute(item, i, list);
      const w = weight ? weight(result, item) : 0;
      const kept = keep === undefined || keep(item, result) ? item : NONE;
      if (known) {
        if (results[i] !== result) last.dirtyFrom = Math.min(last.dirtyFrom, i);
        last.total += w - weights[i]!;
        weights[i] = w;
        results[i] = result;
        items[i] = kept;
      } else {
        last.dirtyFrom = Math.min(last.dirtyFrom, i);
        last.total += w;
        weights.push(w);
        results.push(result);
        items.push(kept);
      }
      again = withPrevious;
      i++;
    }
    last.changedFrom = Math.min(last.dirtyFrom, n);
    last.dirtyFrom = Infinity;
    return last;
  }

  /** The kept list `list` most likely continues (a wrong guess costs time, never a wrong result), or a new one. */
  private lastList(list: readonly T[]): LastList<T, R> {
    const { lists } = this;
    let at = lists.length - 1;
    while (at >= 0 && !continues(lists[at]!.items, list)) at--;
    if (at < 0 && list.length < (this.options.shortest ?? SHORTEST)) return newList<T, R>();
    const last = at >= 0 ? lists.splice(at, 1)[0]! : newList<T, R>();
    lists.push(last);
    if (lists.length > MAX_LISTS) lists.shift();
    return last;
  }
}

/** Default of ListMemoOptions.shortest. */
const SHORTEST = 16;

function newList<T, R>(): LastList<T, R> {
  return { items: [], results: [], weights: [], total: 0, changedFrom: 0, dirtyFrom: 0 };
}

/** True when `list` holds the objects of `items` at a quarter, half and three quarters of their common length. */
function continues(items: readonly unknown[], list: readonly unknown[]): boolean {
  const n = Math.min(items.length, list.length);
  if (n === 0) return items.length === 0 && list.length === 0;
  return items[n >> 1] === list[n >> 1] || items[n >> 2] === list[n >> 2] || items[(3 * n) >> 2] === list[(3 * n) >> 2];
}

/** The first index from `from` where `list` holds another object than `items` (or `items` ends), at most the list's length. */
function sameUntil(items: readonly unknown[], list: readonly unknown[], from: number): number {
  const end = Math.min(items.length, list.length);
  let i = from;
  while (i < end && items[i] === list[i]) i++;
  return i;
}
