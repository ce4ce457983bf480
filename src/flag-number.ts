/**
 * Numbers as a user writes them in a flag or an environment variable (`--port`, `--retries`, `--max-tokens`,
 * `--idle-timeout`, `CACHET_STDIN_WAIT_MS`, …): plain decimal digits only. JavaScript's Number() also reads
 * `1e3`, `0x50`, `0b1`, `Infinity` and surrounding spaces, so `--port 0x50` listened on 80: every such flag is read
 * here instead, and anything else is the caller's one-line usage error.
 */

/**
 * A whole number written in decimal digits (`0`, `8080`, `007`); undefined for anything else (a sign, a fraction,
 * an exponent, hex, spaces, empty) and for one beyond Number.MAX_SAFE_INTEGER.
 */
export function decimalInteger(text: string): number | undefined {
  if (!/^\d+$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * A non-negative number written in decimal digits with an optional fraction (`2`, `0.5`, `.5`, `1.`); undefined for
 * anything else (a sign, an exponent, hex, `Infinity`, spaces, empty).
 */
export function decimalNumber(text: string): number | undefined {
  return /^(\d+(\.\d*)?|\.\d+)$/.test(text) ? Number(text) : undefined;
}
