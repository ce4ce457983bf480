/**
 * Cache-stability cases of CASES.md through the compiled binary against the
 * emulator, read back from the wire bodies it received and from the ledger:
 * case 11 (a date: in the overlay it costs nothing, in the system prompt it is
 * a named prefix change), case 13 (tools sorted; a changed tool is a reported
 * prefix change), case 14 (tool-call arguments replayed byte for byte).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { canonicalJson } from "../../src/wire/canonical-json.ts";
import { cachet, cleanHomes, events, freshHome, ofType } from "./harness.ts";
import { LARGE_SYSTEM, against, cacheParts, exportSession, ok, startEmulatorProcess, tempFile, withoutMarkers, withoutOverlay } from "./session-kit.ts";

afterAll(cleanHomes);

type Raw = Record<string, any>;

const ANTHROPIC = "anthropic/claude-sonnet-4-6";
const DAY = 86_400_000;

const TOOLS = [
  { name: "run_shell", description: "Run a shell command in the project directory", parameters: { type: "object", properties: { command: { type: "string" }, timeout: { type: "number" } }, required: ["command"] } },
  { name: "get_weather", description: "Current weather for a city", parameters: { type: "object", properties: { city: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] }, days: { type: "integer" } }, required: ["city"] } },
  { name: "search_docs", description: "Search the documentation", parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] } },
];

/** The same tools, listed in another order and with every object's keys in another order. */
function shuffled(tools: Raw[]): Raw[] {
  const reverseKeys = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(reverseKeys);
    if (value === null || typeof value !== "object") return value;
    return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reverseKeys(v)]));
  };
  return [...tools].reverse().map((t) => reverseKeys(t) as Raw);
}

describe("case 11: today's date", () => {
  test(
    "in --overlay every turn: 100% efficiency; tools and system bytes equal with the clock advanced by 1 s and by 1 day",
    async () => {
      const home = freshHome();
      const tools = tempFile("tools.json", JSON.stringify(TOOLS));
      const base = Date.now();
      // Emulated clock per turn: start, +1 s, +2 s, +1 day (the 5-minute entry has expired), +1 day +1 s.
      const offsets = [0, 1_000, 2_000, DAY + 2_000, DAY + 3_000];
      const bodies: Raw[] = [];
      const overlays: string[] = [];
      for (const [turn, offset] of offsets.entries()) {
        const emulator = await startEmulatorProcess(home, { CACHET_EMULATOR_CLOCK_OFFSET_MS: String(offset) });
        try {
          const target = against(emulator, ANTHROPIC);
          const overlay = `Today's date: ${new Date(base + offset).toUTCString()}`;
          overlays.push(overlay);
          const first = turn === 0 ? ["-m", ANTHROPIC, "--system", LARGE_SYSTEM, "--tools", tools] : ["-c"];
          await ok([...first, ...target.args, "--overlay", overlay, "-q", `Step ${turn + 1}: what is due today?`], { home, env: target.env });
          bodies.push(...(await emulator.bodies()));
        } finally {
          emulator.stop();
        }
      }
      expect(bodies).toHaveLength(offsets.length);
      expect(new Set(overlays).size).toBe(offsets.length);
      // bytes(tools) and bytes(system) as received, cache markers included, are the same on every request.
      for (const body of bodies) {
        expect(JSON.stringify(body.tools)).toBe(JSON.stringify(bodies[0]!.tools));
        expect(JSON.stringify(body.system)).toBe(JSON.stringify(bodies[0]!.system));
        expect(JSON.stringify(body.system)).not.toContain("Today's date");
      }
      // The date sits only at the tail of its own request and never enters the log.
      for (const [n, body] of bodies.entries()) {
        const last = body.messages.at(-1);
        expect(last.content.at(-1).text).toBe(overlays[n]);
        expect(JSON.stringify(body).split("Today's date").length - 1).toBe(1);
        if (n > 0) expect(canonicalJson(withoutMarkers(body.messages.slice(0, bodies[n - 1]!.messages.length)))).toBe(canonicalJson(withoutMarkers(withoutOverlay(bodies[n - 1]!.messages, overlays[n - 1]))));
      }

      const { requests } = await exportSession(home);
      const reads = requests.map((r) => r.usage.cacheRead);
      const maxima = requests.map((r) => r.cacheableMax);
      // +1 s, +2 s and +1 day +1 s read everything cacheable; the request a day later found its entry expired.
      for (const n of [1, 2, 4]) {
        expect(maxima[n]).toBeGreaterThan(2_000);
        expect(reads[n]).toBe(maxima[n]);
      }
      expect(reads[3]).toBe(0);
      expect(requests[3]!.usage.cacheWrite5m).toBeGreaterThan(2_000);
      // `why` on the day-later request: the wire did not diverge, so it is not a prefix change.
      const why = JSON.parse((await ok(["why", requests[3]!.id, "--json"], { home })).stdout) as Raw;
      expect(why.divergence).toBeNull();
      expect(why.causes).not.toContain("system changed");
    },
    60_000,
  );

  test("in --system every turn: a reported prefix change that `cachet why` names \"system changed\"; the cache read collapses", async () => {
    const home = freshHome();
    const dates = ["Tue Jun 16 2026", "Wed Jun 17 2026", "Thu Jun 18 2026"];
    const stderr: string[] = [];
    for (const [turn, date] of dates.entries()) {
      const r = await ok([...(turn === 0 ? [] : ["-c"]), "--emulate", "--system", `${LARGE_SYSTEM}\nToday's date: ${date}`, `Step ${turn + 1}: what is due today?`], { home });
      stderr.push(r.stderr);
    }
    expect(stderr[0]).not.toContain("stable prefix changed");
    expect(stderr[1]).toContain("stable prefix changed (system changed): version 2");
    expect(stderr[2]).toContain("stable prefix changed (system changed): version 3");

    const { requests } = await exportSession(home);
    expect(requests.map((r) => r.prefixVersion)).toEqual([1, 2, 3]);
    for (const r of requests.slice(1)) {
      expect(r.usage.cacheRead).toBe(0);
      expect(r.cacheableMax).toBe(0);
      expect(r.usage.cacheWrite5m).toBeGreaterThan(2_000);
    }

    const text = (await ok(["why"], { home })).stdout;
    expect(text).toMatch(/^cause\s+system changed$/m);
    const json = JSON.parse((await ok(["why", "--json"], { home })).stdout) as Raw;
    expect(json.divergence).toMatchObject({ index: 0, kind: "system" });
    expect(json.causes[0]).toBe("system changed");
    expect(json.actualCacheRead).toBe(0);
  });
});

describe("case 13: tool definitions", () => {
  test(
    "the same tools in another order render byte-identical (sorted) and keep the hit; a changed description is a reported prefix change, \"tools changed\"",
    async () => {
      const home = freshHome();
      const emulator = await startEmulatorProcess(home);
      try {
        const target = against(emulator, ANTHROPIC);
        const reordered = shuffled(TOOLS);
        expect(reordered.map((t) => t.name)).toEqual(["search_docs", "get_weather", "run_shell"]);
        const moved = TOOLS.map((t) => (t.name === "run_shell" ? { ...t, description: "Run shell in /home/u/repoB" } : t));

        const first = await ok(["-m", ANTHROPIC, "--system", LARGE_SYSTEM, "--tools", tempFile("a.json", JSON.stringify(TOOLS)), ...target.args, "List the tools."], { home, env: target.env });
        const second = await ok(["-c", "--tools", tempFile("b.json", JSON.stringify(reordered)), ...target.args, "And again."], { home, env: target.env });
        const third = await ok(["-c", "--tools", tempFile("c.json", JSON.stringify(moved)), ...target.args, "Once more."], { home, env: target.env });
        expect(first.stderr + second.stderr).not.toContain("stable prefix changed");
        expect(third.stderr).toContain("stable prefix changed (tools changed)");

        const bodies = await emulator.bodies();
        expect(bodies).toHaveLength(3);
        expect(bodies[0]!.tools.map((t: Raw) => t.name)).toEqual(["get_weather", "run_shell", "search_docs"]);
        expect(JSON.stringify(bodies[1]!.tools)).toBe(JSON.stringify(bodies[0]!.tools));
        expect(JSON.stringify(bodies[1]!.system)).toBe(JSON.stringify(bodies[0]!.system));
        expect(bodies[2]!.tools.find((t: Raw) => t.name === "run_shell").description).toBe("Run shell in /home/u/repoB");

        const { requests } = await exportSession(home);
        expect(requests[1]!.cacheableMax).toBeGreaterThan(2_000);
        expect(requests[1]!.usage.cacheRead).toBe(requests[1]!.cacheableMax);
        // The changed tool comes before every cache entry: nothing is readable.
        expect(requests[2]!.usage.cacheRead).toBe(0);
        expect(requests[2]!.cacheableMax).toBe(0);

        expect((await ok(["why"], { home })).stdout).toMatch(/^cause\s+tools changed$/m);
        const json = JSON.parse((await ok(["why", "--json"], { home })).stdout) as Raw;
        expect(json.divergence).toMatchObject({ kind: "tool", nodeId: "tool:run_shell" });
        const second_ = JSON.parse((await ok(["why", requests[1]!.id, "--json"], { home })).stdout) as Raw;
        expect(second_.divergence).toBeNull();
      } finally {
        emulator.stop();
      }
    },
    60_000,
  );
});

describe("case 14: tool-call arguments replayed byte for byte", () => {
  // `days` after `unit`: a re-serialisation in sorted key order would be caught.
  const ARGUMENTS = '{"city":"Tokyo","unit":"celsius","days":3}';
  const script = tempFile(
    "script.json",
    JSON.stringify([{ tool_calls: [{ name: "get_weather", arguments: ARGUMENTS }] }, { text: "It is 18C in Tokyo." }, { text: "You are welcome." }]),
  );

  for (const [model, protocol] of [
    [ANTHROPIC, "anthropic-messages"],
    ["openai/gpt-5", "openai-chat"],
  ] as const) {
    test(
      model,
      async () => {
        const home = freshHome();
        const emulator = await startEmulatorProcess(home, { CACHET_EMULATOR_SCRIPT: script });
        try {
          const target = against(emulator, model);
          const weather = tempFile("tools.json", JSON.stringify([TOOLS[1]]));
          const call = await ok(["-m", model, "--system", LARGE_SYSTEM, "--tools", weather, ...target.args, "--json", "What is the weather in Tokyo?"], { home, env: target.env });
          const [toolCall] = ofType(events(call.stdout), "tool_call");
          expect(toolCall).toMatchObject({ name: "get_weather" });
          expect(typeof toolCall!.arguments === "string" ? toolCall!.arguments : JSON.stringify(toolCall!.arguments)).toBe(ARGUMENTS);
          const id = toolCall!.id as string;

          const result = await cachet(["--tool-result", id, "-c", ...target.args, "-q"], { home, env: target.env, stdin: "18C" });
          expect(result.stderr).toBe("");
          expect(result.code).toBe(0);
          expect(result.stdout.trim()).toBe("It is 18C in Tokyo.");
          await ok(["-c", ...target.args, "-q", "Thanks."], { home, env: target.env });

          const bodies = await emulator.bodies();
          expect(bodies).toHaveLength(3);
          for (const body of bodies.slice(1)) {
            if (protocol === "anthropic-messages") {
              const use = body.messages[1].content.find((b: Raw) => b.type === "tool_use");
              expect(use.id).toBe(id);
              expect(Object.keys(use.input)).toEqual(["city", "unit", "days"]);
              expect(JSON.stringify(use.input)).toBe(ARGUMENTS);
              const answer = body.messages[2].content.find((b: Raw) => b.type === "tool_result");
              expect(answer.tool_use_id).toBe(id);
            } else {
              const [fn] = body.messages[2].tool_calls;
              expect(fn.id).toBe(id);
              expect(fn.function.arguments).toBe(ARGUMENTS);
              expect(body.messages[3]).toMatchObject({ role: "tool", tool_call_id: id });
            }
          }
          // Each request starts with the previous one's bytes (markers aside).
          for (let n = 1; n < bodies.length; n++) {
            const previous = cacheParts(protocol, bodies[n - 1]!);
            const current = cacheParts(protocol, bodies[n]!);
            expect(current.head).toBe(previous.head);
            expect(canonicalJson(withoutMarkers(current.list.slice(0, previous.list.length)))).toBe(canonicalJson(withoutMarkers(previous.list)));
          }
          // ...and reads the whole previous prefix.
          const { requests } = await exportSession(home);
          for (const r of requests.slice(1)) {
            expect(r.cacheableMax).toBeGreaterThan(2_000);
            expect(r.usage.cacheRead).toBe(r.cacheableMax);
          }
        } finally {
          emulator.stop();
        }
      },
      60_000,
    );
  }
});
