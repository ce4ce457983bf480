/**
 * Random ids for sessions, messages and ledger rows: a one-letter kind, an
 * underscore and 12 lowercase base32 characters (60 bits).
 */
const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";

/** A new id, e.g. `newId("m")` → `m_k3j2h5g6f7d8`. */
export function newId(kind: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  let out = `${kind}_`;
  for (const b of bytes) out += ALPHABET[b & 31];
  return out;
}
