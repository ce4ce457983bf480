/**
 * The one parser of durations a user writes: `stats --since 1h30m` and a
 * probe scenario's `advance_clock` read them alike.
 */

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/**
 * Milliseconds of a duration such as `6m`, `90s`, `1h30m`, `250ms`, `2w` or
 * `1.5h`: one or more number–unit pairs (ms, s, m, h, d, w), summed.
 * @returns undefined when the text is not such a duration.
 */
export function parseDuration(text: string): number | undefined {
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d|w))+$/.test(text)) return undefined;
  let total = 0;
  for (const [, n, , u] of text.matchAll(/(\d+(\.\d+)?)(ms|s|m|h|d|w)/g)) total += Number(n) * UNIT_MS[u as keyof typeof UNIT_MS];
  return Math.round(total);
}
