/**
 * The per-client view of recorded traffic (`cachet stats --recorded --by
 * client`): which client (user-agent) reads least of its prompt from the
 * cache. One stats group per client, worst hit rate first.
 */
import type { LedgerRow } from "../session/types.ts";
import { ledgerTotal, type StatsGroup, type StatsOptions } from "./stats.ts";

/**
 * Groups `rows` by the client of their session and computes each group's
 * statistics (the same figures as every other grouping).
 * @param clientOf the client (user-agent) of a session id; unknown sessions group under "unknown"
 */
export function statsByClient(rows: readonly LedgerRow[], clientOf: (sessionId: string) => string | null | undefined, options: Omit<StatsOptions, "by"> = {}): StatsGroup[] {
  const groups = new Map<string, LedgerRow[]>();
  for (const row of rows) {
    const key = clientOf(row.sessionId) ?? "unknown";
    const list = groups.get(key);
    if (list) list.push(row);
    else groups.set(key, [row]);
  }
  return [...groups]
    .map(([key, list]) => ({ ...ledgerTotal(list, options), key }))
    .sort((a, b) => (a.hitRate ?? 0) - (b.hitRate ?? 0) || b.costUsd - a.costUsd);
}
