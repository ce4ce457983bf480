/**
 * The hint after an answer ending in tool calls gives flags that work, through
 * the binary and the emulator: with parallel calls it names every id (a file
 * each, or one JSON object on stdin), on stderr in text mode and in the `done`
 * line's `hint` with --json; following it to the letter answers the calls
 * (exit 0), and so does following the hint of the refusal of a partial answer.
 */
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cachet, cleanHomes, events, freshHome, ofType } from "./harness.ts";

afterAll(cleanHomes);

const WEATHER = [{ name: "get_weather", description: "Weather of a city.", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];
const call = (city: string) => ({ name: "get_weather", arguments: JSON.stringify({ city }) });

/** A home with tools.json and a script answering with a tool call per city, then with `final`. */
function setUp(cities: string[], final: string): { home: string; tools: string; env: Record<string, string> } {
  const home = freshHome();
  const tools = join(home, "tools.json");
  writeFileSync(tools, JSON.stringify(WEATHER));
  const script = join(home, "script.json");
  writeFileSync(script, JSON.stringify([{ tool_calls: cities.map(call) }, { text: final }]));
  return { home, tools, env: { CACHET_EMULATOR_SCRIPT: script } };
}

/** The id of the only session in `home`. */
async function onlySession(home: string): Promise<string> {
  const lines = (await cachet(["sessions", "--json"], { home })).stdout.trim().split("\n");
  expect(lines).toHaveLength(1);
  return (JSON.parse(lines[0]!) as { id: string }).id;
}

/** The command words of one alternative of a hint (`cachet …`), FILE standing for `file`. */
function words(command: string, file: string): string[] {
  const [cachetWord, ...rest] = command.trim().split(" ");
  expect(cachetWord).toBe("cachet");
  return rest.map((w) => w.replace(/=@FILE$/, `=@${file}`));
}

test("two parallel calls: stderr names each id, then one hint with both ids; its file form and its JSON form each answer the turn", async () => {
  const { home, tools, env } = setUp(["Tokyo", "Osaka"], "18 C and 20 C");
  const first = await cachet(["--emulate", "--tools", tools, "weather?"], { home, env });
  expect(first.code).toBe(0);
  const lines = first.stderr.trim().split("\n");
  expect(lines).toHaveLength(3);
  const ids = lines.slice(0, 2).map((l) => /^tool call get_weather \{"city":"(?:Tokyo|Osaka)"\} \(id (\S+)\)$/.exec(l)![1]!);
  const prefix = "answer all 2 in one turn: ";
  const session = await onlySession(home);
  expect(lines[2]).toBe(
    `${prefix}cachet --session ${session} --tool-result ${ids[0]}=@FILE --tool-result ${ids[1]}=@FILE (a file per result), or cachet --session ${session} --tool-result - with {"${ids[0]}": RESULT, "${ids[1]}": RESULT} on stdin`,
  );
  // Another session runs in between: the hint still answers the one it was printed for.
  expect((await cachet(["--emulate", "--no-compact", "--session", "other", "unrelated"], { home, env: {} })).code).toBe(0);
  const files = lines[2]!.slice(prefix.length).split(" (a file per result), or ")[0]!;
  const result = join(home, "result.txt");
  writeFileSync(result, "18 C");
  const answered = await cachet(["--emulate", ...words(files, result)], { home, env });
  expect({ code: answered.code, stdout: answered.stdout, stderr: answered.stderr }).toEqual({ code: 0, stdout: "18 C and 20 C\n", stderr: "" });

  // The JSON form, on a fresh session asking the same.
  const again = setUp(["Tokyo", "Osaka"], "18 C and 20 C");
  const asked = await cachet(["--emulate", "--tools", again.tools, "weather?"], { home: again.home, env: again.env });
  const hint = asked.stderr.trim().split("\n")[2]!;
  const [command, json] = hint.slice(prefix.length).split(" (a file per result), or ")[1]!.split(" with ");
  const stdin = json!.replace(/ on stdin$/, "").replaceAll("RESULT", '"18 C"');
  expect(Object.keys(JSON.parse(stdin))).toHaveLength(2);
  const viaStdin = await cachet(["--emulate", ...words(command!, result)], { home: again.home, env: again.env, stdin });
  expect({ code: viaStdin.code, stdout: viaStdin.stdout, stderr: viaStdin.stderr }).toEqual({ code: 0, stdout: "18 C and 20 C\n", stderr: "" });
});

test("--json: the done line's hint names every pending id, and following it answers the turn; --quiet text mode prints no hint", async () => {
  const { home, tools, env } = setUp(["Tokyo", "Osaka", "Kyoto"], "three temperatures");
  const first = await cachet(["--emulate", "--tools", tools, "--json", "weather?"], { home, env });
  expect(first.code).toBe(0);
  expect(first.stderr).toBe("");
  const list = events(first.stdout);
  const ids = ofType(list, "tool_call").map((e) => e.id as string);
  expect(ids).toHaveLength(3);
  const done = ofType(list, "done")[0]!;
  expect(done.finish_reason).toBe("tool_calls");
  const hint = done.hint as string;
  const session = ofType(list, "session")[0]!.id as string;
  expect(hint).toBe(`answer all 3 in one turn: cachet --session ${session} ${ids.map((id) => `--tool-result ${id}=@FILE`).join(" ")} (a file per result), or cachet --session ${session} --tool-result - with {${ids.map((id) => `"${id}": RESULT`).join(", ")}} on stdin`);
  const result = join(home, "result.txt");
  writeFileSync(result, "18 C");
  const files = hint.slice("answer all 3 in one turn: ".length).split(" (a file per result)")[0]!;
  const answered = await cachet(["--emulate", "--json", ...words(files, result)], { home, env });
  expect(answered.code).toBe(0);
  const finished = ofType(events(answered.stdout), "done")[0]!;
  expect(finished.finish_reason).toBe("stop");
  expect(finished.hint).toBeUndefined();

  const quiet = setUp(["Tokyo", "Osaka"], "two");
  const silent = await cachet(["--emulate", "--quiet", "--tools", quiet.tools, "weather?"], { home: quiet.home, env: quiet.env });
  expect({ code: silent.code, stderr: silent.stderr }).toEqual({ code: 0, stderr: "" });
});

test("one call: the hint is --tool-result ID with the result on stdin, and that answers it", async () => {
  const { home, tools, env } = setUp(["Tokyo"], "18 C");
  const first = await cachet(["--emulate", "--tools", tools, "weather?"], { home, env });
  const lines = first.stderr.trim().split("\n");
  const id = /\(id (\S+)\)$/.exec(lines[0]!)![1]!;
  const session = await onlySession(home);
  expect(lines).toEqual([`tool call get_weather {"city":"Tokyo"} (id ${id})`, `answer it: cachet --session ${session} --tool-result ${id} with the result on stdin`]);
  const answered = await cachet(["--emulate", "--session", session, "--tool-result", id], { home, env, stdin: "18 C" });
  expect({ code: answered.code, stdout: answered.stdout, stderr: answered.stderr }).toEqual({ code: 0, stdout: "18 C\n", stderr: "" });
});

test("answering one of two parallel calls is refused (exit 2) with a hint naming both ids, and following that hint answers the turn", async () => {
  const { home, tools, env } = setUp(["Tokyo", "Osaka"], "18 C and 20 C");
  const first = await cachet(["--emulate", "--tools", tools, "--json", "weather?"], { home, env });
  const ids = ofType(events(first.stdout), "tool_call").map((e) => e.id as string);
  const refused = await cachet(["--emulate", "--tool-result", ids[0]!], { home, env, stdin: "18 C" });
  expect(refused.code).toBe(2);
  const [message, hintLine] = refused.stderr.split("\n");
  expect(message).toBe(`cachet: 1 of the 2 pending tool calls has no result: ${ids[1]}; the provider refuses a new turn that leaves it unanswered`);
  const session = ofType(events(first.stdout), "session")[0]!.id as string;
  expect(hintLine).toBe(
    `  hint: answer all 2 in one turn: cachet --session ${session} --tool-result ${ids[0]}=@FILE --tool-result ${ids[1]}=@FILE (a file per result), or cachet --session ${session} --tool-result - with {"${ids[0]}": RESULT, "${ids[1]}": RESULT} on stdin; or pass --drop-pending to answer the rest with "no result: the user moved on"`,
  );
  const result = join(home, "result.txt");
  writeFileSync(result, "18 C");
  const files = hintLine!.slice("  hint: answer all 2 in one turn: ".length).split(" (a file per result)")[0]!;
  const answered = await cachet(["--emulate", ...words(files, result)], { home, env });
  expect({ code: answered.code, stdout: answered.stdout }).toEqual({ code: 0, stdout: "18 C and 20 C\n" });
});
