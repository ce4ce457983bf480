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
const attribute = (attributes: string, name: string) => decode(new RegExp(`\\b${name}="([^"]*)"`).exec(attributes)?.[1] ?? "");
const failed: string[] = [];
// A test case is self-closing when it passed; a failure or an error inside may itself be self-closing (a timeout).
for (const [, attributes, body] of xml.matchAll(/<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
  const failure = /<(failure|error)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/.exec(body ?? "");
  if (!failure) continue;
  const where = [attribute(attributes!, "file"), attribute(attributes!, "classname"), attribute(attributes!, "name")].filter(Boolean).join(" > ");
  const text = failure[3] ? decode(failure[3]).trim() : `${attribute(failure[2]!, "type")}: ${attribute(failure[2]!, "message")}`;
  failed.push(`\n--- ${where}\n${text}`);
}
console.log(`\nci: ${failed.length} failed test(s), with their messages:${failed.join("\n")}`);
