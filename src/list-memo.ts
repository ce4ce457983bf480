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

/** What a memo keeps of one conversation's last list. */
interface LastList<T, R> {
  /** The elements whose results are kept, by index; NONE where the result was not kept. */
  items: (T | typeof NONE)[];
  results: R[];
}

const NONE = Symbol("no kept result");

/** How {@link ListMemo.map} computes and keeps one element's result. */
export interface MapOptions<T, R> {
  /**
   * The result of an element also depends on the element before it (a pair
   * check): it is reused only when that one is the same object as last time too.
   */
  withPrevious?: boolean;
  /** False for a result that must not be kept: an incomplete answer may still grow, a failed check is made again. */
  keep?: (item: T, result: R) => boolean;
}

/**
 * Memory of the last list each conversation passed through {@link map}. The
 * elements must not be changed in place once seen (the store's messages are
 * frozen; wire elements are shared between renders and copied to be marked):
 * a result is reused on identity alone.
 */
export class ListMemo<T, R> {
  private readonly lists = new Map<unknown, LastList<T, R>>();

  /**
   * `compute(item, index, list)` for each element of `list`, except an element
   * that is the very object the last list of conversation `key` held at the
   * same index: its result is the one kept then. `compute` must be a pure
   * function of the element (and, with `withPrevious`, of the one before it);
   * when it throws, the results computed before stay kept.
   * @param key tells conversations apart (any value; a wrong one costs time, never a wrong result)
   * @returns the memo's own array, one result per element: read it before the next call, never change it
   */
  map(key: unknown, list: readonly T[], compute: (item: T, index: number, list: readonly T[]) => R, options: MapOptions<T, R> = {}): readonly R[] {
    let last = this.lists.get(key);
    if (last) this.lists.delete(key);
    else last = { items: [], results: [] };
    this.lists.set(key, last);
    if (this.lists.size > MAX_LISTS) this.lists.delete(this.lists.keys().next().value);
    const { items, results } = last;
    const { withPrevious = false, keep } = options;
    // Shorter than last time: what lies beyond is another list's.
    if (items.length > list.length) items.length = results.length = list.length;
    const known = items.length;
    let previousSame = true;
    for (let i = 0; i < list.length; i++) {
      const item = list[i]!;
      const same: boolean = i < known && items[i] === item && (previousSame || !withPrevious);
      previousSame = same;
      if (same) continue;
      // Forgotten first, so a throwing compute leaves no stale pair behind.
      items[i] = NONE;
      const result = compute(item, i, list);
      results[i] = result;
      if (keep === undefined || keep(item, result)) items[i] = item;
      // The next element, checked with this one, is not the pair it was last time.
      previousSame = false;
    }
    return results;
  }
}
