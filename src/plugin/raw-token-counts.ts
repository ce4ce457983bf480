/**
 * The token counts of a raw usage object as a provider sent it, checked
 * before any mapping reads it. A provider mapping reads a count that is not
 * a whole number ≥ 0 as unreported, and JSON keeps no Infinity (a count
 * such as 1e400 parses to Infinity and prints back as null): unchecked, a
 * broken usage would become "the provider did not say" and be stored as
 * null. `cachet price --usage` refuses such a usage; a live response with one
 * is an invalid usage from the provider (src/plugin/guard.ts, usageOrUnknown).
 */

/** Keys that hold a token count in the providers' usage shapes: `input_tokens`, `cached_tokens`, `promptTokenCount`, `tokenCount`, … */
const TOKEN_COUNT_KEY = /tokens$|token_?count$/i;

/** Where a raw usage holds a count that is not a token count, and what is wrong with it. */
export interface InvalidTokenCount {
  /** Dotted path of the field, e.g. `usage.prompt_tokens`, `promptTokensDetails[0].tokenCount`. */
  path: string;
  /** What the field holds and why it is no count, e.g. `-3, negative`, `2.5, not a whole number`. */
  problem: string;
}

/**
 * The first field named like a token count whose value is not a whole number
 * from 0 to 2^53 − 1 (a number, string or boolean; null is a count left
 * unreported), in document order; undefined when every count is one.
 */
export function invalidTokenCount(value: unknown, path = ""): InvalidTokenCount | undefined {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = invalidTokenCount(item, `${path}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const at = path === "" ? key : `${path}.${key}`;
    if (typeof item === "object") {
      const found = invalidTokenCount(item, at);
      if (found) return found;
      continue;
    }
    if (!TOKEN_COUNT_KEY.test(key) || (typeof item === "number" && Number.isSafeInteger(item) && item >= 0)) continue;
    return { path: at, problem: describe(item) };
  }
  return undefined;
}

/**
 * `raw` with every number JSON cannot hold (±Infinity from an overflowing
 * literal such as 1e400, NaN) replaced by a string saying what it was, so
 * that storing or printing the raw usage never turns it into null; `raw`
 * itself when it holds none.
 */
export function storableRaw(raw: unknown): unknown {
  if (typeof raw === "number") return Number.isFinite(raw) ? raw : beyondRange(raw);
  if (typeof raw !== "object" || raw === null) return raw;
  if (Array.isArray(raw)) {
    const items = raw.map(storableRaw);
    return items.every((item, i) => item === raw[i]) ? raw : items;
  }
  const entries = Object.entries(raw).map(([key, item]) => [key, storableRaw(item)] as const);
  return entries.every(([key, item]) => item === (raw as Record<string, unknown>)[key]) ? raw : Object.fromEntries(entries);
}

function describe(item: unknown): string {
  if (typeof item !== "number") return `${JSON.stringify(item)}, a ${typeof item}`;
  if (!Number.isFinite(item)) return Number.isNaN(item) ? "not a number" : `${beyondRange(item)}, a number too large to be a count`;
  if (item < 0) return `${item}, negative`;
  if (!Number.isInteger(item)) return `${item}, not a whole number`;
  // Past 2^53 the parsed value is no longer the number the provider wrote: quoting it would name another.
  return `above ${Number.MAX_SAFE_INTEGER}, too large to count exactly`;
}

/** How a number past the double range reads: the sign and the range's bound, never "Infinity" or JSON's null. */
function beyondRange(value: number): string {
  return Number.isNaN(value) ? "NaN" : value > 0 ? "beyond 1.8e308" : "beyond -1.8e308";
}
