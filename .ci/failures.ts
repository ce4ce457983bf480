/**
 * Prints each failed test of a `bun test` JUnit report (path as the first argument) with its failure message: the
 * console output shows a failure where the test ran, which a CI log cut to its tail loses.
 */
import { existsSync, readFileSync } from "node:fs";

const path = process.argv[2] ?? ".test-results/junit.xml";
if (!existsSync(path)) {
  console.log(`ci: no test report at ${path} (the suite did not get to run)`);
  process.exit(0);
}
const xml = readFileSync(path, "utf8");
const decode = (text: string) =>
  text.replace(/&(#\d+|lt|gt|quot|apos|amp);/g, (_, name: string) =>
    name.startsWith("#") ? String.fromCodePoint(Number(name.slice(1))) : ({ lt: "<", gt: ">", quot: '"', apos: "'", amp: "&" } as Record<string, string>)[name]!,
  );
const failures = [...xml.matchAll(/<testcase name="([^"]*)" classname="([^"]*)"[^>]*?file="([^"]*)"[^>]*>\s*<failure[^>]*>([\s\S]*?)<\/failure>/g)];
console.log(`\nci: ${failures.length} failed test(s), with their messages:`);
for (const [, name, group, file, body] of failures) {
  console.log(`\n--- ${[file, group, name].filter(Boolean).map((part) => decode(part!)).join(" > ")}\n${decode(body!).trim()}`);
}
