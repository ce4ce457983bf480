/**
 * The user's config: `config.toml` in the config directory (see paths.ts),
 * parsed by Bun's TOML parser and validated with valibot. Unknown keys are
 * errors, never silently ignored: a typo in a price or a key name must not
 * turn into a wrong bill.
 */
import * as v from "valibot";
import { nearestName } from "./cli/near-name.ts";
import { CachetError } from "./errors.ts";
import { readTextFile } from "./input/read-input.ts";
import { once } from "./deferred-schema.ts";
import { configFile, statePaths } from "./paths.ts";

/** The longest delay a timer can hold, seconds: 2^31 − 1 ms (setTimeout's limit, about 24.8 days). */
export const MAX_TIMER_S = Math.floor((2 ** 31 - 1) / 1000);

/**
 * Whether `value` is a provider base URL (`base_url` in config.toml,
 * `--base-url`): an http:// or https:// URL. `localhost:8080` parses as a URL
 * of scheme `localhost:`, so the scheme is checked too.
 */
export function isHttpUrl(value: string): boolean {
  return URL.canParse(value) && /^https?:$/.test(new URL(value).protocol);
}

/** What is wrong with a base URL {@link isHttpUrl} refuses. */
export const NOT_HTTP_URL = "expected an http:// or https:// URL";

/** The config's schema, built on its first use (src/deferred-schema.ts): a run without a config file parses none. */
const configSchema = once(() => {
  const Ttl = v.picklist(["5m", "1h"]);

  /**
   * Price override for one model, USD per million tokens, in models.dev's
   * field names. `cache_write_1h` has no models.dev field: see src/meter.
   */
  const PriceOverrideSchema = v.strictObject({
    input: v.optional(v.pipe(v.number(), v.minValue(0))),
    output: v.optional(v.pipe(v.number(), v.minValue(0))),
    reasoning: v.optional(v.pipe(v.number(), v.minValue(0))),
    cache_read: v.optional(v.pipe(v.number(), v.minValue(0))),
    cache_write: v.optional(v.pipe(v.number(), v.minValue(0))),
    cache_write_1h: v.optional(v.pipe(v.number(), v.minValue(0))),
  });

  const BaseUrlSchema = v.pipe(v.string(), v.check(isHttpUrl, NOT_HTTP_URL));

  const ProviderConfigSchema = v.strictObject({
    /** API key; prefer the provider's environment variable. */
    api_key: v.optional(v.string()),
    /** Base URL passed to the provider's SDK. */
    base_url: v.optional(BaseUrlSchema),
    /** Provider options, as with `-o key=value`. */
    options: v.optional(v.record(v.string(), v.unknown())),
    /**
     * Send only the new input when the provider keeps the conversation and the
     * request just appends to it (OpenAI Responses `previous_response_id`,
     * src/run/continuation.ts); default false: every request is sent whole.
     */
    incremental: v.optional(v.boolean()),
  });

  const Usd = v.pipe(v.number(), v.minValue(0));

  /** `[budget]`: spending limits in USD (src/budget). Day and month are calendar periods in `time_zone`. */
  const BudgetConfigSchema = v.strictObject({
    /** Most a single session may spend, all its runs together. */
    session_usd: v.optional(Usd),
    /** Most all runs of one calendar day may spend together, across processes. */
    daily_usd: v.optional(Usd),
    /** Most all runs of one calendar month may spend together. */
    monthly_usd: v.optional(Usd),
    /** IANA time zone of the day and month (default: the system's). */
    time_zone: v.optional(v.pipe(v.string(), v.check(isTimeZone, "must be an IANA time zone such as Europe/Paris or UTC"))),
  });

  /** `[export]`: OpenTelemetry export of the ledger (src/telemetry). */
  const ExportConfigSchema = v.strictObject({
    /** OTLP/HTTP collector: each recorded turn is exported in the background. */
    otlp_url: v.optional(v.pipe(v.string(), v.url())),
    /** Body encoding (default protobuf). */
    otlp_format: v.optional(v.picklist(["protobuf", "json"])),
    /** Include prompt and answer text in the spans (default false). */
    with_content: v.optional(v.boolean()),
  });

  const Tokens = v.pipe(v.number(), v.integer(), v.minValue(1));

  /** `[compaction]`: when and how a long session is compacted (src/compaction, README "Compaction"). */
  const CompactionConfigSchema = v.strictObject({
    /** Compact when due (default true); `--no-compact` turns it off for one run. */
    enabled: v.optional(v.boolean()),
    /** Compact when the next request's estimate exceeds this many tokens (default: min(0.8 × window, window − max output − 4,096)). */
    trigger_tokens: v.optional(Tokens),
    /** Budget of the kept tail, tokens (default: 0.4 × target, at most 16,000). */
    tail_tokens: v.optional(Tokens),
    /** The model's context window, tokens, when the catalog does not know it. */
    window_tokens: v.optional(Tokens),
  });

  /** A plugin installed by `cachet plugins add` (src/plugin/install.ts). */
  const InstalledPluginSchema = v.strictObject({
    /** The plugin's package name (or its `name` when it has no package.json). */
    name: v.string(),
    version: v.string(),
    /** What was passed to `plugins add`: a path, `npm-name[@range]`, or a tarball URL; `plugins update` re-resolves it. */
    source: v.string(),
    /** SRI hash (sha512) of the registry tarball, or of the bundle for a local source. */
    integrity: v.string(),
    /** The plugin API range the plugin declares. */
    api: v.string(),
    /** The bundled ESM file that is loaded. */
    file: v.string(),
  });

  /** The config file's shape. Every section is optional. */
  const ConfigSchema = v.strictObject({
    /** Default model, `provider/model`. */
    model: v.optional(v.pipe(v.string(), v.regex(/^[^/\s]+\/\S+$/, "must be provider/model"))),
    /** Plugin file paths or npm package names installed in the plugin directory. */
    plugins: v.optional(v.array(v.string())),
    /** Plugins installed by `cachet plugins add`; written by cachet, one `[[installed_plugins]]` table each. */
    installed_plugins: v.optional(v.array(InstalledPluginSchema)),
    /** Longest a plugin hook call may take, seconds (default 30, src/plugin/guard.ts). */
    hook_timeout: v.optional(v.pipe(v.number(), v.minValue(0.001), v.maxValue(MAX_TIMER_S))),
    providers: v.optional(v.record(v.string(), ProviderConfigSchema)),
    /** Price overrides keyed by `provider/model`. */
    prices: v.optional(v.record(v.string(), PriceOverrideSchema)),
    cache: v.optional(
      v.strictObject({
        mode: v.optional(v.picklist(["auto", "off"])),
        ttl: v.optional(Ttl),
      }),
    ),
    budget: v.optional(BudgetConfigSchema),
    export: v.optional(ExportConfigSchema),
    compaction: v.optional(CompactionConfigSchema),
  });
  return ConfigSchema;
});

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** A validated config. */
export type Config = v.InferOutput<ReturnType<typeof configSchema>>;

/**
 * Reads and validates the config file. A missing file is an empty config.
 * @throws CachetError CONFIG_UNREADABLE when the file exists but cannot be read or parsed,
 *   CONFIG_INVALID naming the key and the file when a value is wrong.
 */
export async function loadConfig(path: string = configFile(statePaths())): Promise<Config> {
  if (pinned?.path === path) return pinned.config;
  const text = await configText(path);
  return text === undefined ? {} : parseConfigText(text, path);
}

/**
 * {@link loadConfig} for a resident process (src/daemon/server.ts), which reads the config for every turn it runs:
 * what this process parsed last from `path` is returned again while the file is the same one, unchanged. Unchanged
 * means the same device, inode, size, modification and change times (one stat, ~10 µs, where reading the file costs
 * ~0.4 ms and parsing it more), and a change time older than {@link SETTLED_NS} when that was seen: a file can change
 * again within one tick of the clock that stamps it, keeping its size and times, but any change made after the stat
 * stamps a later change time than one that old (Git's "racy clean" rule). Until it has settled the file is read every
 * turn, and parsed again only when its text differs. A missing file is an empty config, and an error is thrown, as
 * loadConfig does; a text that failed is not kept.
 * @throws CachetError CONFIG_UNREADABLE, CONFIG_INVALID as {@link loadConfig}
 */
export async function loadConfigKept(path: string): Promise<Config> {
  const seenAt = BigInt(Date.now()) * 1_000_000n;
  let stat: import("node:fs").BigIntStats | undefined | null;
  try {
    stat = process.getBuiltinModule("node:fs").statSync(path, { bigint: true, throwIfNoEntry: false });
  } catch {
    // Not a missing file (a state directory that is a file): the read below says what is wrong.
    stat = null;
  }
  if (stat === undefined) return {};
  const identity = stat?.isFile() ? `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}` : undefined;
  const kept = keptConfigs.get(path);
  keptConfigs.delete(path);
  let config: Config;
  let text: string | undefined;
  if (identity !== undefined && kept?.identity === identity && kept.settled) {
    ({ config, text } = kept);
  } else {
    text = await configText(path);
    if (text === undefined) return {};
    config = kept?.text === text ? kept.config : parseConfigText(text, path);
  }
  const settled = identity !== undefined && stat!.ctimeNs + SETTLED_NS < seenAt;
  keptConfigs.set(path, { identity, settled, text, config });
  if (keptConfigs.size > KEPT_CONFIGS) keptConfigs.delete(keptConfigs.keys().next().value!);
  return config;
}

/**
 * How old a config file's change time must be for its stat to vouch for its text, ns: longer than the coarsest
 * timestamp granularity of common file systems (FAT: 2 s) and the tick of the kernel clock that stamps them.
 */
const SETTLED_NS = 3_000_000_000n;

/**
 * The configs {@link loadConfigKept} parsed last, by path, the least recently read first: with the file's identity
 * when it was read (undefined: not a regular file), and whether its change time was settled then.
 */
const keptConfigs = new Map<string, { identity: string | undefined; settled: boolean; text: string; config: Config }>();

/** Most config files a resident process keeps parsed (one per config directory its clients use). */
const KEPT_CONFIGS = 4;

/** The config file's text; undefined when nothing is at `path` (no config). */
async function configText(path: string): Promise<string | undefined> {
  // Only a missing file means "no config": a directory or an unreadable file is an error, never dropped settings.
  if (!(await somethingAt(path))) return undefined;
  return readTextFile(path, {
    label: `config ${path}`,
    code: "CONFIG_UNREADABLE",
    // A directory, a device or a file without read permission: one hint fits them all.
    hint: "make it a file cachet can read (or move it away to run without a config), or set CACHET_HOME to use another state directory",
  });
}

/** Parses and validates the config file's `text` (read from `path`, which errors name). */
function parseConfigText(text: string, path: string): Config {
  let data: unknown;
  try {
    data = Bun.TOML.parse(text);
  } catch (cause) {
    throw new CachetError("CONFIG_UNREADABLE", `malformed TOML in ${path}:${tomlErrorLine(text)}: ${(cause as Error).message}`, {
      hint: "fix the syntax (see README.md, Configuration)",
      cause,
    });
  }
  return parseConfig(data, path);
}

/**
 * The line (1-based) of the first TOML error in `text`, which Bun's parser does not give: the line after the longest
 * run of leading lines that parses. An error stays in every text that holds its line, and a construct left open (a
 * multi-line array or string that never closes) is named by the line that opens it. Run only on a config that failed,
 * at most once per line of it.
 */
export function tomlErrorLine(text: string): number {
  const lines = text.split("\n");
  let parsed = 0;
  for (let n = 1; n <= lines.length; n++) {
    try {
      Bun.TOML.parse(lines.slice(0, n).join("\n"));
      parsed = n;
    } catch {
      // This prefix ends inside the error, or inside a construct a later line closes.
    }
  }
  return Math.min(parsed + 1, lines.length);
}

let pinned: { path: string; config: Config } | undefined;

/**
 * Makes {@link loadConfig} of `pin.path` answer `pin.config` without reading
 * the file, until called with undefined. The resident daemon
 * (src/daemon/server.ts) decides whether it may run a turn from the config it
 * read for it (a third-party plugin's turn runs in its client): the turn runs
 * with that same config, never one edited in between.
 */
export function pinConfig(pin: { path: string; config: Config } | undefined): void {
  pinned = pin;
}

/**
 * Whether anything is at `path`, as node:fs's existsSync answers, without
 * loading node:fs (Bun's JS builtin, ~2 ms before a run's request): Bun.file's
 * exists() is true of a regular file and answers at once; anything else that
 * is there (a directory, a device, a FIFO) has a size, where a missing path
 * has none. Only a directory whose file system gives it a size of 0 (an empty
 * one on btrfs) passes for missing.
 */
async function somethingAt(path: string): Promise<boolean> {
  const file = Bun.file(path);
  return (await file.exists()) || file.size !== 0;
}

/**
 * Validates already-parsed config data.
 * @throws CachetError CONFIG_INVALID naming the first wrong key and `source`.
 */
export function parseConfig(data: unknown, source: string): Config {
  const result = v.safeParse(configSchema(), data);
  if (result.success) return result.output;
  const issue = result.issues[0]!;
  const key = v.getDotPath(issue) ?? "(top level)";
  const keys = issue.path?.map((item) => String(item.key)) ?? [];
  // A key the table does not take (a strict object's "Expected never"): named as unknown, with the known key it is
  // a typo of, if one is near.
  if (issue.type === "strict_object" && keys.length > 0) {
    const typed = keys.at(-1)!;
    const near = nearestName(typed, keysAt(configSchema(), keys.slice(0, -1)));
    const parent = keys.length > 1 ? `${keys.slice(0, -1).join(".")}.` : "";
    throw new CachetError("CONFIG_INVALID", `unknown config key "${key}" in ${source}`, {
      hint: near ? `did you mean "${parent}${near}"? (README.md, Configuration, lists the keys cachet accepts)` : "see README.md, Configuration, for the keys cachet accepts",
    });
  }
  throw new CachetError("CONFIG_INVALID", `invalid config key "${key}" in ${source}: ${issue.message}`, {
    hint: "see README.md, Configuration, for the keys cachet accepts",
  });
}

/** The keys a table of `schema` takes at `path` (table names from the top), unwrapping optional and nullable layers; [] when it is not a fixed table. */
function keysAt(schema: v.GenericSchema, path: readonly string[]): string[] {
  let at: unknown = schema;
  const unwrap = () => {
    while (at && typeof at === "object" && "wrapped" in at) at = (at as { wrapped: unknown }).wrapped;
  };
  for (const name of path) {
    unwrap();
    const node = at as { entries?: Record<string, unknown>; value?: unknown; item?: unknown };
    // A table of tables by name ([providers.ID], [prices."p/m"]) or a list of tables: the same table under every name.
    at = node.entries ? node.entries[name] : (node.value ?? node.item);
  }
  unwrap();
  const entries = (at as { entries?: Record<string, unknown> } | undefined)?.entries;
  return entries ? Object.keys(entries) : [];
}

