/**
 * Random ids for sessions and ledger rows: a prefix and 12 lowercase base32
 * characters (60 bits), short enough to type and safe in file names.
 */

const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";

/**
 * A new random id, e.g. `s_k3v9q2m7x4ab`.
 * @param prefix `s` for sessions, `r` for ledger rows, `m` for messages
 */
export function randomId(prefix: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  let out = `${prefix}_`;
  for (const byte of bytes) out += ALPHABET[byte & 31];
  return out;
}
