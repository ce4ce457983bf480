/**
 * Sticky cache settings: the cache mode and breakpoint TTL shape what the
 * provider caches and for how long, so, like the model and the stable
 * prefix, they stick to a session. `cachet --cache-ttl 1h` then `cachet -c`
 * keeps writing 1-hour entries instead of silently falling back to 5 minutes.
 */
import type { Config } from "../config.ts";
import type { CacheSettings } from "../context/types.ts";

/** The session's cache settings as its last request used them (a ledger row's fields). */
export interface UsedCacheSettings {
  cacheMode: CacheSettings["mode"];
  cacheTtl: CacheSettings["ttl"];
}

/** The settings of a turn, and what a flag changed against the session's. */
export interface StickyCache {
  settings: Omit<CacheSettings, "affinityKey">;
  /** One line per setting a flag changed on a continued session, e.g. `cache TTL 1h → 5m`. */
  changes: string[];
}

/**
 * Resolves each setting: the flag, else the session's last request, else the
 * config (`[cache]`), else `auto` / `5m`.
 * @param last the session's last request (a fork: its parent's), null for a new session
 */
export function stickyCache(flags: Partial<Omit<CacheSettings, "affinityKey">>, last: UsedCacheSettings | null, config: Config): StickyCache {
  const settings = {
    mode: flags.mode ?? last?.cacheMode ?? config.cache?.mode ?? "auto",
    ttl: flags.ttl ?? last?.cacheTtl ?? config.cache?.ttl ?? "5m",
  } satisfies Omit<CacheSettings, "affinityKey">;
  const changes: string[] = [];
  if (last && settings.mode !== last.cacheMode) changes.push(`cache mode ${last.cacheMode} → ${settings.mode}`);
  if (last && settings.ttl !== last.cacheTtl) changes.push(`cache TTL ${last.cacheTtl} → ${settings.ttl}`);
  return { settings, changes };
}
