/**
 * Sticky generation settings: provider options (`-o key=value`), the output
 * limit and the temperature stick to a session like its model, stable prefix
 * and cache settings. Several options shape what the provider caches
 * (Anthropic: thinking parameters, `tool_choice`, `output_config.effort`;
 * OpenAI: `reasoning.effort`, `text.verbosity`, `parallel_tool_calls`; see
 * /work/shared/providers.md "What invalidates" and "Invalidators"), and a
 * thinking budget must stay under `max_tokens`, so a `cachet -c` that dropped
 * them would restart the cache or be refused.
 */
import type { GenerationSettings } from "../context/types.ts";
import { CachetError } from "../errors.ts";
import { ownedOption } from "../plugin/owned-options.ts";
import type { SessionGeneration } from "../session/types.ts";

/** A turn's generation settings and what the session keeps from them. */
export interface StickyGeneration {
  /** What this turn sends (`stream` is the turn's own: it shapes no cached byte). */
  settings: GenerationSettings;
  /** What the session stores for its next turns. */
  stored: SessionGeneration;
  /** One stderr line per setting a flag changed on a continued session, or per setting left behind by a provider change. */
  changes: string[];
}

/** The stored settings of a session, and the provider they were sent to. */
export interface SessionSide {
  generation: SessionGeneration | undefined;
  /** Provider id of the session's model so far, e.g. `anthropic`. */
  provider: string;
}

/**
 * Resolves each setting: the flag, else the session's. An option whose flag
 * value is `null` (`-o key=null`) is dropped. A session's settings are kept
 * only while the provider stays the same: options of one provider's wire are
 * errors on another's.
 * @param flags this run's flags (`providerOptions` from `-o`; a null value drops the key)
 * @param session the session continued (a fork: its parent), undefined for a new session
 * @param provider provider id of this turn's model
 */
export function stickyGeneration(flags: GenerationSettings, session: SessionSide | undefined, provider: string): StickyGeneration {
  const changes: string[] = [];
  const previous = session?.generation;
  // A continued session on the same provider: a flag is a change from its settings, none stored being none set.
  const carried = session && session.provider === provider ? (previous ?? { providerOptions: {} }) : undefined;
  if (previous && !carried) {
    const left = [...Object.keys(previous.providerOptions).map((k) => `-o ${k}`), ...(previous.maxTokens !== undefined ? ["--max-tokens"] : []), ...(previous.temperature !== undefined ? ["--temperature"] : [])];
    if (left.length > 0) changes.push(`${left.join(", ")} of the session's ${session.provider} turns not carried to ${provider}: pass them again if ${provider} takes them`);
  }
  const providerOptions: Record<string, unknown> = { ...carried?.providerOptions };
  for (const [key, value] of Object.entries(flags.providerOptions)) {
    if (value === null) delete providerOptions[key];
    else providerOptions[key] = value;
    if (carried && !sameValue(carried.providerOptions[key], providerOptions[key])) changes.push(`-o ${key} ${shown(carried.providerOptions[key])} → ${shown(providerOptions[key])} for this session from now on`);
  }
  refuseStoredOwned(providerOptions, flags.providerOptions);
  const maxTokens = flags.maxTokens ?? carried?.maxTokens;
  const temperature = flags.temperature ?? carried?.temperature;
  if (carried && maxTokens !== carried.maxTokens) changes.push(`--max-tokens ${shown(carried.maxTokens)} → ${maxTokens} for this session from now on`);
  if (carried && temperature !== carried.temperature) changes.push(`--temperature ${shown(carried.temperature)} → ${temperature} for this session from now on`);
  const stored: SessionGeneration = { providerOptions, ...(maxTokens !== undefined ? { maxTokens } : {}), ...(temperature !== undefined ? { temperature } : {}) };
  return { settings: { ...stored, stream: flags.stream }, stored, changes };
}

/**
 * Options a session stored under an older cachet that now sets them itself
 * (src/plugin/owned-options.ts): the user never typed them this run, so all of
 * them are named, with the exact way to drop them. (The run's own `-o` owned
 * options were refused when the command line was read.)
 * @throws CachetError BAD_FLAG (exit 2) naming every such option and the `-o key=null` flags that drop them
 */
function refuseStoredOwned(options: Record<string, unknown>, flags: Record<string, unknown>): void {
  const owned = Object.keys(options)
    .sort()
    .filter((key) => !Object.hasOwn(flags, key))
    .flatMap((key) => {
      const part = ownedOption(key, options[key]);
      return part ? [{ key, ...part }] : [];
    });
  if (owned.length === 0) return;
  const why = owned.map((o) => `"${o.part}": ${o.why}`).join("; ");
  throw new CachetError("BAD_FLAG", `the session stores ${owned.map((o) => `-o ${o.key}`).join(" and ")} from an older cachet, which cachet now sets itself (${why})`, {
    hint: `drop ${owned.length === 1 ? "it" : "them"} from the session with ${owned.map((o) => `-o ${o.key}=null`).join(" ")}`,
  });
}

/** Whether `stored` differs from what the session holds (nothing stored counts as no settings). */
export function generationChanged(held: SessionGeneration | undefined, stored: SessionGeneration): boolean {
  return !sameValue(held ?? { providerOptions: {} }, stored);
}

/**
 * Deep strict equality of JSON-like values (as node:util's isDeepStrictEqual for them), natively: loading
 * node:util costs milliseconds before the run's request.
 */
function sameValue(a: unknown, b: unknown): boolean {
  return Bun.deepEquals(a, b, true);
}

function shown(value: unknown): string {
  return value === undefined ? "(unset)" : JSON.stringify(value);
}
