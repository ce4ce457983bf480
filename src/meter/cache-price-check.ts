/**
 * Checks the catalog's Anthropic cache prices against Anthropic's documented
 * prompt-caching multipliers of the base input price (5-minute write 1.25×,
 * 1-hour write 2×, read 0.1×) and corrects those that contradict them.
 * The catalog's sources are copied data (models.dev, genai-prices), and one
 * number in them can be another column's (models.dev gives Claude 3 Sonnet
 * a 5-minute write price of 0.30, its read price): a documented rule beats
 * such a number. Where Anthropic publishes a model's own cache prices that
 * differ from the multipliers (a rounded row, a cheaper read), those are the
 * rule for that model.
 * @see https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#pricing
 */
import { priceFromNumber, priceToNumber } from "./money.ts";
import { percentOf, scale, type Ratio } from "./price-rules.ts";

/** The cache prices of a cost table the check covers (USD per million tokens). */
export type CachePriceName = "cache_write" | "cache_write_1h" | "cache_read";

const CACHING_DOC = "https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#pricing";

/** Anthropic's multipliers of the base input price, per cache price. */
export const ANTHROPIC_CACHE_MULTIPLIERS: Readonly<Record<CachePriceName, Ratio>> = {
  cache_write: { numerator: 5n, denominator: 4n, source: `${CACHING_DOC} (5-minute cache writes: 1.25x base input)` },
  cache_write_1h: { numerator: 2n, denominator: 1n, source: `${CACHING_DOC} (1-hour cache writes: 2x base input)` },
  cache_read: { numerator: 1n, denominator: 10n, source: `${CACHING_DOC} (cache reads: 0.1x base input)` },
};

/** A model's own cache prices as Anthropic publishes them, where they are not the multipliers' (USD per million tokens). */
interface PublishedRow {
  /** The model's id without a date or `-latest` suffix (`claude-3-haiku` for `claude-3-haiku-20240307`). */
  model: string;
  input: number;
  cache_write: number;
  cache_write_1h: number;
  cache_read: number;
  source: string;
}

/**
 * Published rows that differ from the multipliers. A row applies to a cost
 * table with the row's input price; any other table of the model (another
 * input price) is held to the multipliers.
 */
const PUBLISHED_ROWS: readonly PublishedRow[] = [
  {
    model: "claude-3-haiku",
    input: 0.25,
    cache_write: 0.3,
    cache_write_1h: 0.5,
    cache_read: 0.03,
    source: "https://platform.claude.com/docs/en/about-claude/pricing#model-pricing (Claude Haiku 3: $0.25 input, $0.30 5m write, $0.50 1h write, $0.03 cache hits; table as of 2026-05-11)",
  },
  {
    model: "claude-fable-5-1",
    input: 10,
    cache_write: 12.5,
    cache_write_1h: 20,
    cache_read: 0.25,
    source: "https://platform.claude.com/docs/en/models/fable-5-1/overview (input and output prices unchanged from Claude Fable 5, cache reads cut to a quarter: $0.25)",
  },
  {
    model: "claude-opus-5-5",
    input: 4,
    cache_write: 5,
    cache_write_1h: 8,
    cache_read: 0.2,
    source: "https://platform.claude.com/docs/en/models/opus-5-5/overview (Pricing: $4 input, $5 5m cache write, $8 1h cache write, $0.20 cache read)",
  },
];

/** One cache price of the catalog that is not the multiplier's, or not what Anthropic publishes for the model. */
export interface CachePriceFinding {
  /** `anthropic/<model id>`. */
  model: string;
  /** Where the price sits in the model's entry: `cost`, `cost.tiers[0]`, `experimental.modes.fast.cost`, … */
  table: string;
  price: CachePriceName;
  /** The source's price, USD per million tokens. */
  found: number;
  /** What the multiplier gives from the table's input price. */
  multiplier: number;
  /**
   * "corrected": not what Anthropic documents for the model; set to `expected` and recorded on the entry (`price_corrections`);
   * "published": not the multiplier's, but Anthropic publishes the model's own price and the source has it: kept.
   */
  action: "corrected" | "published";
  /** The price in force after the check. */
  expected: number;
  /** Why, with the documented source. */
  reason: string;
}

/** A correction as recorded on the model's catalog entry (`price_corrections`). */
export interface PriceCorrection {
  /** Dotted path of the price in the entry, e.g. `cost.cache_write`. */
  price: string;
  from: number;
  to: number;
  reason: string;
}

type Table = Record<string, unknown>;
type Entry = Record<string, unknown> & { cost?: Table; price_corrections?: PriceCorrection[] };

/**
 * Checks every cost table of every model of the `anthropic` provider (the
 * base table, its long-context tiers, its service tiers, models.dev's
 * experimental modes) and corrects, in place, each cache price that differs
 * from what Anthropic documents: the model's published row when there is one
 * for the table's input price, else the multiplier of the input price. Each
 * correction is recorded on the entry as `price_corrections`. Prices a table
 * lacks are left absent (the meter derives a missing 1-hour write price).
 * @param catalog api.json-shaped (provider → { models })
 * @returns every price that is not the multiplier's or not the published one, corrected or kept, in catalog order
 */
export function checkAnthropicCachePrices(catalog: Record<string, Record<string, unknown>>): CachePriceFinding[] {
  const findings: CachePriceFinding[] = [];
  const models = (catalog.anthropic?.models ?? {}) as Record<string, Entry>;
  for (const [id, entry] of Object.entries(models)) {
    const row = PUBLISHED_ROWS.find((r) => r.model === id.replace(/-(\d{8}|latest)$/, ""));
    for (const [path, table] of costTables(entry)) {
      const input = typeof table.input === "number" ? table.input : undefined;
      if (input === undefined) continue;
      const published = row && row.input === input ? row : undefined;
      for (const name of Object.keys(ANTHROPIC_CACHE_MULTIPLIERS) as CachePriceName[]) {
        const found = table[name];
        if (typeof found !== "number") continue;
        const ratio = ANTHROPIC_CACHE_MULTIPLIERS[name];
        const multiplier = priceToNumber(scale(priceFromNumber(input), ratio));
        const expected = published ? published[name] : multiplier;
        const keep = priceFromNumber(found) === priceFromNumber(expected);
        if (keep && expected === multiplier) continue;
        const rule = published ? `Anthropic publishes ${expected} for this model, not ${percentOf(ratio)} of input: ${published.source}` : `${percentOf(ratio)} of input ${input}: ${ratio.source}`;
        const reason = keep ? rule : `the source's ${name} ${found} contradicts the documented price; ${rule}`;
        findings.push({ model: `anthropic/${id}`, table: path, price: name, found, multiplier, action: keep ? "published" : "corrected", expected, reason });
        if (keep) continue;
        table[name] = expected;
        (entry.price_corrections ??= []).push({ price: `${path}.${name}`, from: found, to: expected, reason });
      }
    }
  }
  return findings;
}

/** The entry's cost tables with their dotted paths. */
function costTables(entry: Entry): Array<[string, Table]> {
  const tables: Array<[string, Table]> = [];
  const add = (path: string, value: unknown): void => {
    if (!isTable(value)) return;
    tables.push([path, value]);
    if (Array.isArray(value.tiers)) value.tiers.forEach((tier, i) => isTable(tier) && tables.push([`${path}.tiers[${i}]`, tier]));
  };
  add("cost", entry.cost);
  for (const [name, table] of Object.entries(isTable(entry.cost?.service_tiers) ? entry.cost.service_tiers : {})) add(`cost.service_tiers.${name}`, table);
  const modes = isTable(entry.experimental) && isTable(entry.experimental.modes) ? entry.experimental.modes : {};
  for (const [name, mode] of Object.entries(modes)) if (isTable(mode)) add(`experimental.modes.${name}.cost`, mode.cost);
  return tables;
}

function isTable(value: unknown): value is Table {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
