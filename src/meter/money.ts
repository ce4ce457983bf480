/**
 * Exact decimal money for the meter. Prices (USD per million tokens) are
 * integers in pico-USD per million tokens (1e-12); a price times a token
 * count is then an integer in atto-USD (1e-18 USD), with no float drift.
 * Amounts are summed as bigint and turned into a number or a decimal string
 * only at the edge.
 */

/** Decimal places of a price held as a bigint (pico-USD per million tokens). */
const PRICE_SCALE = 12;
/** Decimal places of an amount held as a bigint (atto-USD). */
const AMOUNT_SCALE = 18;

/** A price in pico-USD per million tokens. */
export type PicoPerMillion = bigint;
/** An amount of money in atto-USD (1e-18 USD). */
export type Atto = bigint;

/**
 * A price given as a JS number (USD per million tokens, as in models.dev) in
 * exact pico-USD per million: the number's shortest decimal form is read
 * digit by digit, so 0.003625 is exactly 3625000000 and never 0.0036249999….
 * Digits below 1e-12 USD per million are rounded half up.
 * @throws RangeError for a negative, NaN or infinite price.
 */
export function priceFromNumber(usdPerMillion: number): PicoPerMillion {
  if (!Number.isFinite(usdPerMillion) || usdPerMillion < 0) throw new RangeError(`invalid price ${usdPerMillion}`);
  const match = /^(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/i.exec(String(usdPerMillion));
  if (!match) throw new RangeError(`invalid price ${usdPerMillion}`);
  const fraction = match[2] ?? "";
  const digits = BigInt(match[1]! + fraction);
  const shift = Number(match[3] ?? 0) - fraction.length + PRICE_SCALE;
  if (shift >= 0) return digits * 10n ** BigInt(shift);
  const divisor = 10n ** BigInt(-shift);
  return (digits + divisor / 2n) / divisor;
}

/** tokens × price, exact, in atto-USD. */
export function costOf(tokens: number, price: PicoPerMillion): Atto {
  return BigInt(tokens) * price;
}

/** An atto-USD amount as a plain decimal string in USD, trailing zeros trimmed ("0.005615", "0"). */
export function formatUsd(amount: Atto): string {
  const negative = amount < 0n;
  const digits = (negative ? -amount : amount).toString().padStart(AMOUNT_SCALE + 1, "0");
  const whole = digits.slice(0, -AMOUNT_SCALE);
  const fraction = digits.slice(-AMOUNT_SCALE).replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${fraction ? `.${fraction}` : ""}`;
}

/**
 * A number of USD as a plain decimal string, the digits `String` gives without
 * its exponent: 3.75e-7 → "0.000000375" (String gives "3.75e-7" below 1e-6),
 * 0.048291 → "0.048291". No digit is added or rounded away.
 * @throws RangeError for NaN or an infinity
 */
export function plainUsd(amount: number): string {
  if (!Number.isFinite(amount)) throw new RangeError(`invalid amount ${amount}`);
  const text = String(amount);
  const match = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!match) return text;
  const [, sign, lead, fraction = "", exponent] = match;
  const digits = lead! + fraction;
  const point = 1 + Number(exponent);
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${"0".repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/**
 * USD as cachet prints money everywhere (`cost`, `cost --tree`, `stats`, the
 * run's cost line, `--verbose` notes): the dollar sign, the sign before it and
 * every digit, never an exponent: `$0.000000375`, `-$0.0056`, `$0`.
 * @param amount an exact decimal string (as {@link formatUsd} writes) or a number of USD
 */
export function dollars(amount: string | number): string {
  const exact = typeof amount === "number" ? plainUsd(amount) : amount;
  return exact.startsWith("-") ? `-$${exact.slice(1)}` : `$${exact}`;
}

/** An atto-USD amount as a number of USD (the nearest double to the exact decimal). */
export function toUsd(amount: Atto): number {
  return Number(formatUsd(amount));
}

/** A pico-USD-per-million price back as a number of USD per million tokens. */
export function priceToNumber(price: PicoPerMillion): number {
  return toUsd(price * 10n ** BigInt(AMOUNT_SCALE - PRICE_SCALE));
}
