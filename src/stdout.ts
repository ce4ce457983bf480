/**
 * `process.stdout`, built on first use. Bun builds it lazily and building it
 * costs several ms (40–70 ms measured under load on the 2-core bench machine,
 * more than everything else between a run's start and its request), so a
 * run touches it only when it has output to write.
 */

let guarded = false;

/**
 * `process.stdout`, with a listener that makes a reader closing the pipe early
 * (`| head`) no failure: the writers stop (src/run/output.ts) and the command
 * goes on, so a run still stores its turn and ledger row.
 */
export function stdout(): NodeJS.WriteStream {
  const out = process.stdout;
  if (!guarded) {
    guarded = true;
    out.on("error", () => {});
  }
  return out;
}
