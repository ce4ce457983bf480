/**
 * Which name a mistyped word is close to: a lone prompt word to a command name (the typo guard of
 * src/cli/dispatch.ts, run on every one-word prompt before the request: most words are ruled out by length and
 * letters alone, without the edit-distance table, in plain loops: an array builtin's first call costs about 0.2 ms of
 * compiling in a fresh process), and, on error paths, a config key, a model id or a provider to what was meant.
 */

/** The most edits that still read as a typo of a name `length` characters long: 1 up to 5, 2 beyond. */
function typoReach(length: number): number {
  return length > 5 ? 2 : 1;
}

/**
 * The first of `names` within reach of `word`: at most 1 edit for a name of up
 * to 5 letters, 2 for a longer one ({@link editDistance}). Both are lowercase
 * ASCII letters (the caller checks `word`).
 */
export function nearName(word: string, names: readonly string[]): string | undefined {
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    const most = typoReach(name.length);
    // Each edit changes the length by at most one, and the letter counts by at most one on each side (a swap by none).
    if (Math.abs(name.length - word.length) <= most && lettersApart(name, word) <= most && editDistance(name, word) <= most) return name;
  }
  return undefined;
}

/**
 * The one of `names` fewest edits from `typed` ({@link editDistance}, any
 * characters), the first on a tie, if it is within a typo's reach: 1 edit for
 * `typed` of up to 5 characters, 2 for a longer one. No prefilter: for a path
 * taken once, after something went unrecognised (an unknown model id).
 */
export function nearestName(typed: string, names: Iterable<string>): string | undefined {
  const most = typoReach(typed.length);
  let best: string | undefined;
  let bestDistance = most + 1;
  for (const name of names) {
    if (Math.abs(name.length - typed.length) >= bestDistance) continue;
    const distance = editDistance(name, typed);
    if (distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * Edits between `a` and `b` (insert, delete, replace a letter, or swap two
 * neighbours: `hepl` is one from `help`), the optimal string alignment distance.
 */
export function editDistance(a: string, b: string): number {
  const width = b.length + 1;
  const d = new Array<number>((a.length + 1) * width);
  for (let i = 0; i <= a.length; i++) {
    for (let j = 0; j <= b.length; j++) {
      const at = i * width + j;
      if (i === 0 || j === 0) {
        d[at] = i + j;
        continue;
      }
      let best = Math.min(d[at - width]! + 1, d[at - 1]! + 1, d[at - width - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[at - 2 * width - 2]! + 1);
      d[at] = best;
    }
  }
  return d[a.length * width + b.length]!;
}

/** A lower bound of {@link editDistance} for lowercase ASCII words: the letters one has beyond the other (with repeats), on the larger side. */
function lettersApart(a: string, b: string): number {
  const counts = new Int32Array(26);
  for (let i = 0; i < a.length; i++) counts[a.charCodeAt(i) - 97]!++;
  for (let i = 0; i < b.length; i++) counts[b.charCodeAt(i) - 97]!--;
  let more = 0;
  let fewer = 0;
  for (let i = 0; i < 26; i++) {
    if (counts[i]! > 0) more += counts[i]!;
    else fewer -= counts[i]!;
  }
  return Math.max(more, fewer);
}
