/**
 * Entry point of the cachet binary, kept to what `--version` and the root
 * `--help` need: scripts call cachet thousands of times, so those two answer
 * from literals rendered when the binary is bundled (src/cli/inline.ts) and
 * evaluate no other module (build/entry.test.ts checks the bundle). Every
 * other command line loads src/cli/dispatch.ts, which loads citty and the
 * command on demand.
 *
 * They print with console.log: Bun builds `process.stdout` (a Node stream)
 * lazily, and touching it costs more than the rest of `--version` together
 * (test/bench/startup.ts).
 */
import { packageVersion, renderedRootHelp } from "./inline.ts" with { type: "macro" };

const argv = process.argv.slice(2);
const only = argv.length === 1 ? argv[0] : undefined;

if (only === "--version" || only === "-v") console.log(packageVersion());
else if (only === "--help" || only === "-h" || only === "help") console.log(renderedRootHelp());
else await (await import("./dispatch.ts")).dispatch(argv);
