/**
 * Entry point of the cachet binary, kept to what `--version` and the root
 * `--help` need: scripts call cachet thousands of times, so those two answer
 * from literals rendered when the binary is bundled (src/cli/inline.ts) and
 * evaluate no other module (build/entry.test.ts checks the bundle). Every
 * other command line loads src/cli/launch.ts: the resident daemon's client
 * when one listens, else src/cli/dispatch.ts, which loads citty and the
 * command on demand.
 *
 * They print with Bun.write: Bun builds `process.stdout` (a Node stream)
 * lazily, and touching it costs more than the rest of `--version` together
 * (test/bench/startup.ts); console.log would drop a failed write (a full
 * disk), which dispatch.ts reports as every command's.
 */
import { packageVersion, renderedRootHelp } from "./inline.ts" with { type: "macro" };

const argv = process.argv.slice(2);
const only = argv.length === 1 ? argv[0] : undefined;

const answer = only === "--version" || only === "-v" ? packageVersion() : only === "--help" || only === "-h" || only === "help" ? renderedRootHelp() : undefined;
const failed = answer === undefined ? undefined : await Bun.write(Bun.stdout, `${answer}\n`).then(() => undefined, (error: unknown) => error ?? new Error("write failed"));
if (answer === undefined || failed !== undefined) {
  // One import site: the entry chunk stays free of any other module (build/entry.test.ts).
  await (await import("./launch.ts")).launch(argv, failed);
}
