/**
 * 64-bit content hashes and cumulative prefix hashes (Bun's wyhash).
 * A prefix hash at position i covers every cacheable element up to and
 * including i, in the provider's cache order: two requests share a cached
 * prefix up to i exactly when their prefix hashes at i are equal.
 */
import { canonicalJson } from "./canonical-json.ts";
import { hasLongString, jsonPieces } from "./json-pieces.ts";

/** A 64-bit hash as 16 lowercase hex digits. */
export type Hash64 = string;

/** Hash of a string's UTF-8 bytes, seeded (seed 0 for a plain content hash). */
export function hashText(text: string, seed: bigint = 0n): Hash64 {
  return toHex(Bun.hash.wyhash(text, seed));
}

/** Hash of raw bytes (a request or response body as it crossed the wire). */
export function hashBytes(bytes: Uint8Array): Hash64 {
  return toHex(Bun.hash.wyhash(bytes, 0n));
}

/**
 * Content hash of a JSON value: the hash of its canonical JSON. A value
 * holding a huge string (see {@link hasLongString}) is hashed from the
 * canonical JSON's pieces (slices of about a MiB), each piece's hash seeding
 * the next, so the JSON is never one string: same value, same hash, as for any other.
 */
export function hashJson(value: unknown): Hash64 {
  if (!hasLongString(value)) return hashText(canonicalJson(value));
  let seed = 0n;
  for (const piece of jsonPieces(value, { canonical: true })) seed = BigInt(Bun.hash.wyhash(piece, seed));
  return toHex(seed);
}

/**
 * Extends a prefix hash with one more element's content hash.
 * @param previous the prefix hash before this element (undefined for the first)
 * @param content the element's content hash
 */
export function chainHash(previous: Hash64 | undefined, content: Hash64): Hash64 {
  return hashText(content, previous === undefined ? 0n : BigInt(`0x${previous}`));
}

/** The cumulative prefix hashes of a list of content hashes, one per element. */
export function prefixHashes(contents: readonly Hash64[]): Hash64[] {
  const out: Hash64[] = [];
  let previous: Hash64 | undefined;
  for (const content of contents) {
    previous = chainHash(previous, content);
    out.push(previous);
  }
  return out;
}

function toHex(value: bigint | number): Hash64 {
  return BigInt.asUintN(64, BigInt(value)).toString(16).padStart(16, "0");
}
