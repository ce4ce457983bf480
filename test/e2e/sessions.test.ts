/**
 * Whole sessions through the compiled binary against an emulator process
 * (issue 6 acceptance): for each provider, a 20-turn `-c` session in which
 * every turn after the first reads exactly the cacheable maximum recorded in
 * the ledger, and every request's cache-relevant bytes extend the previous
 * request's (read back from the wire bodies the emulator received); the
 * affinity key stays constant (CASES.md case 18) and Anthropic breakpoints
 * stay on their blocks (case 17).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { canonicalJson } from "../../src/wire/canonical-json.ts";
import { cachet, cleanHomes, events, freshHome } from "./harness.ts";
import { LARGE_SYSTEM, against, cacheParts, exportSession, ok, startEmulatorProcess, withoutMarkers } from "./session-kit.ts";

afterAll(cleanHomes);

type Raw = Record<string, any>;

const TURNS = 20;

const PROVIDERS: { model: string; protocol: string; affinity?: (body: Raw) => unknown }[] = [
  { model: "anthropic/claude-sonnet-4-6", protocol: "anthropic-messages", affinity: (b) => b.metadata?.user_id },
  { model: "openai/gpt-5", protocol: "openai-chat", affinity: (b) => b.prompt_cache_key },
  { model: "openai-responses/gpt-5", protocol: "openai-responses", affinity: (b) => b.prompt_cache_key },
  { model: "google/gemini-2.5-flash", protocol: "gemini" },
  { model: "deepseek/deepseek-chat", protocol: "openai-chat" },
];

/** Paths (`messages.3.content.0`) of every block that carries a cache marker. */
function markedPaths(value: unknown, path: string[] = []): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => markedPaths(v, [...path, String(i)]));
  if (value === null || typeof value !== "object") return [];
  const own = "cache_control" in value ? [path.join(".")] : [];
  return [...own, ...Object.entries(value).flatMap(([k, v]) => (k === "cache_control" ? [] : markedPaths(v, [...path, k])))];
}

describe(`${TURNS}-turn -c sessions stay on the cache (issue 6)`, () => {
  for (const p of PROVIDERS) {
    test(
      p.model,
      async () => {
        const home = freshHome();
        const bodies: Raw[] = [];
        // OpenAI routes more than ~15 requests a minute for one prefix and key to other machines (the
        // emulator reproduces it): the session is paced in emulated time, 10 turns per emulated minute,
        // by restarting the emulator (same cache state file) two emulated minutes later.
        for (let batch = 0; batch < TURNS / 10; batch++) {
          const emulator = await startEmulatorProcess(home, { CACHET_EMULATOR_CLOCK_OFFSET_MS: String(batch * 120_000) });
          try {
            const target = against(emulator, p.model);
            for (let i = batch * 10; i < (batch + 1) * 10; i++) {
              const first = i === 0 ? ["-m", p.model, "--system", LARGE_SYSTEM] : ["-c"];
              await ok([...first, ...target.args, "-q", `Question ${i + 1}: what does rule ${i * 3 + 1} say about item ${i * 7}?`], { home, env: target.env });
            }
            bodies.push(...(await emulator.bodies()));
          } finally {
            emulator.stop();
          }
        }

        // The ledger: every turn after the first reads exactly its cacheable maximum, which is > 0 and grows.
        const { session, requests } = await exportSession(home);
        expect(requests).toHaveLength(TURNS);
        expect(requests[0]!.cacheableMax).toBeNull();
        const later = requests.slice(1);
        const maxima = later.map((r) => r.cacheableMax as number);
        expect(later.map((r) => r.usage.cacheRead)).toEqual(maxima);
        expect(maxima[0]).toBeGreaterThan(2_000);
        for (let i = 1; i < maxima.length; i++) expect(maxima[i]!).toBeGreaterThanOrEqual(maxima[i - 1]!);
        expect(maxima.at(-1)!).toBeGreaterThan(maxima[0]! + 256);

        // `cachet stats --by request` reports the same: efficiency 1 on every later request and in total.
        const stats = JSON.parse((await ok(["stats", "--by", "request", "--json"], { home })).stdout) as Raw;
        const byId = new Map<string, Raw>((stats.groups as Raw[]).map((g) => [g.key, g]));
        for (const r of later) {
          expect(byId.get(r.id)!.cacheEfficiency).toBe(1);
          expect(byId.get(r.id)!.cacheableTokens).toBe(r.cacheableMax);
        }
        expect(stats.total.cacheEfficiency).toBe(1);
        expect(stats.total.tokens.cacheRead).toBe(maxima.reduce((a, b) => a + b, 0));

        // The wire: each request's cache-relevant bytes extend the previous request's.
        expect(bodies).toHaveLength(TURNS);
        for (let n = 1; n < TURNS; n++) {
          const previous = cacheParts(p.protocol, bodies[n - 1]!);
          const current = cacheParts(p.protocol, bodies[n]!);
          expect(current.head).toBe(previous.head);
          expect(current.list.length).toBe(previous.list.length + 2);
          const head = canonicalJson(withoutMarkers(current.list.slice(0, previous.list.length)));
          expect(head).toBe(canonicalJson(withoutMarkers(previous.list)));
        }

        // The affinity key (case 18): present on every request and the same, the session's.
        if (p.affinity) {
          expect(session.affinityKey).toBe(session.id);
          expect(new Set(bodies.map(p.affinity))).toEqual(new Set([session.affinityKey]));
        } else {
          expect(bodies.every((b) => b.prompt_cache_key === undefined && markedPaths(b).length === 0)).toBe(true);
        }

        // Anthropic breakpoints (case 17): a breakpoint on a message block of request N is still there in N+1,
        // the new tail has its own, and there are never more than 4.
        if (p.protocol === "anthropic-messages") {
          for (let n = 0; n < TURNS; n++) {
            const marks = markedPaths(bodies[n]);
            expect(marks.length).toBeLessThanOrEqual(4);
            const lastMessage = bodies[n]!.messages.length - 1;
            expect(marks).toContain(`messages.${lastMessage}.content.${bodies[n]!.messages[lastMessage].content.length - 1}`);
            if (n > 0) {
              const previousTail = markedPaths(bodies[n - 1]).filter((m) => m.startsWith("messages.")).at(-1)!;
              expect(marks).toContain(previousTail);
            }
          }
        }
      },
      120_000,
    );
  }
});

describe("fork of an exact session (same model and prefix)", () => {
  for (const p of PROVIDERS.filter((x) => x.affinity && x.protocol !== "openai-responses")) {
    test(
      `${p.model}: inherits the affinity key, writes a probe row and reads the parent's cache`,
      async () => {
        const home = freshHome();
        const emulator = await startEmulatorProcess(home);
        try {
          const target = against(emulator, p.model);
          for (let i = 0; i < 3; i++) {
            await ok([...(i === 0 ? ["-m", p.model, "--system", LARGE_SYSTEM] : ["-c"]), ...target.args, "-q", `Parent turn ${i + 1}.`], { home, env: target.env });
          }
          const parent = await exportSession(home);
          const forked = await ok(["--fork", ...target.args, "--json", "Fork turn 1."], { home, env: target.env });
          const [event] = events(forked.stdout);
          expect(event).toMatchObject({ type: "session", forked_from: parent.session.id, model: p.model });
          const child = await exportSession(home, event!.id as string);
          expect(child.session.id).not.toBe(parent.session.id);
          expect(child.session.parentId).toBe(parent.session.id);
          expect(child.session.affinityKey).toBe(parent.session.affinityKey);

          // The probe row: expected = cacheable maximum against the parent's last request, and it was read.
          expect(child.requests).toHaveLength(1);
          const [probe] = child.requests;
          expect(probe!.cacheableMax).toBeGreaterThan(2_000);
          expect(probe!.expectedCacheRead).toBe(probe!.cacheableMax);
          expect(probe!.usage.cacheRead).toBe(probe!.cacheableMax);
          expect(probe!.affinityKey).toBe(parent.session.affinityKey);

          // On the wire: the parent's affinity key, and the parent's last request's bytes first.
          const bodies = await emulator.bodies();
          expect(bodies).toHaveLength(4);
          expect(p.affinity!(bodies[3]!)).toBe(parent.session.affinityKey);
          const before = cacheParts(p.protocol, bodies[2]!);
          const after = cacheParts(p.protocol, bodies[3]!);
          expect(after.head).toBe(before.head);
          expect(canonicalJson(withoutMarkers(after.list.slice(0, before.list.length)))).toBe(canonicalJson(withoutMarkers(before.list)));
        } finally {
          emulator.stop();
        }
      },
      60_000,
    );
  }
});

/**
 * A run's stderr with the line a turn prints while it waits for another process's turn on its session removed
 * (README: said once, naming the holder): whether a run waited depends on how the processes overlapped.
 */
function besidesWaiting(stderr: string): string {
  return stderr.replace(/^cachet: session s_\w+ is running a turn \(process \d+ on .+\): waiting for it to finish before sending this one\n/, "");
}

describe("two processes continuing one session at once", () => {
  test("both turns are stored, in order, nothing lost or incomplete", async () => {
    const home = freshHome();
    await ok(["--emulate", "--system", LARGE_SYSTEM, "-q", "Start."], { home });
    const [a, b] = await Promise.all([cachet(["--emulate", "-c", "turn A"], { home }), cachet(["--emulate", "-c", "turn B"], { home })]);
    expect([a.code, b.code, besidesWaiting(a.stderr), besidesWaiting(b.stderr)]).toEqual([0, 0, "", ""]);
    expect(a.stdout.trim().length).toBeGreaterThan(0);
    expect(b.stdout.trim().length).toBeGreaterThan(0);

    const { messages, requests } = await exportSession(home);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant"]);
    expect(messages.filter((m) => m.incomplete)).toEqual([]);
    const texts = messages.filter((m) => m.role === "user").map((m) => m.content[0].text);
    expect(texts[0]).toBe("Start.");
    expect(texts.slice(1).sort()).toEqual(["turn A", "turn B"]);
    expect(requests.map((r) => r.status)).toEqual(["ok", "ok", "ok"]);
    // The later turn saw the earlier one's answer: its request extends the earlier request.
    expect(requests[2]!.chain.slice(0, requests[1]!.chain.length).map((l: Raw) => l.content)).toEqual(requests[1]!.chain.map((l: Raw) => l.content));
    expect(requests[2]!.usage.cacheRead).toBe(requests[2]!.cacheableMax);
  });
});

describe("eight processes starting one new named session at once", () => {
  test("5 rounds: every run exits 0 and the session holds its 8 turns, each answer right after its own prompt", async () => {
    for (let round = 0; round < 5; round++) {
      const home = freshHome();
      const prompts = Array.from({ length: 8 }, (_, i) => `named ${round}.${i}`);
      const runs = await Promise.all(prompts.map((p) => cachet(["--emulate", "--session", "review", p], { home, timeoutMs: 60_000 })));
      expect(runs.map((r) => [r.code, besidesWaiting(r.stderr)])).toEqual(prompts.map(() => [0, ""]));
      const { session, messages, requests } = await exportSession(home, "review");
      expect(session.name).toBe("review");
      expect(messages.map((m) => m.role)).toEqual(prompts.flatMap(() => ["user", "assistant"]));
      expect(messages.filter((m) => m.incomplete)).toEqual([]);
      expect(messages.filter((m) => m.role === "user").map((m) => m.content[0].text).sort()).toEqual(prompts);
      expect(requests.map((r) => r.status)).toEqual(prompts.map(() => "ok"));
      // Request k was sent with prompt k last and stored answer k right after it: turns taken one at a time.
      expect(requests.map((r) => [r.chain.at(-1)!.nodeId.split("#")[0], r.messageId])).toEqual(prompts.map((_, k) => [messages[2 * k]!.id, messages[2 * k + 1]!.id]));
    }
  }, 300_000);
});

test("`cachet sessions` aligns its columns by display width: CJK and emoji names (two cells a character) keep MODEL in one column", async () => {
  const home = freshHome();
  const names = ["日本語の名前", "👨‍👩‍👧 family", "❤️", "plain-name"];
  for (const name of names) await ok(["--emulate", "--session", name, "hi"], { home });
  const lines = (await ok(["sessions"], { home })).stdout.trimEnd().split("\n");
  expect(lines).toHaveLength(names.length + 1);
  const modelColumn = (line: string, word: string) => Bun.stringWidth(line.slice(0, line.indexOf(word)));
  const header = modelColumn(lines[0]!, "MODEL");
  expect(lines.slice(1).map((line) => modelColumn(line, "anthropic/"))).toEqual(Array(names.length).fill(header));
  // The widest name sets the column: 12 cells for 日本語の名前, 2 spaces after it.
  expect(header).toBe("s_xxxxxxxxxxxx  ".length + 12 + 2);
});

test("a name holding a zero width space, stored before such names were refused, is listed with it escaped (a\\u{200b}b), never as a look-alike of \"ab\"", async () => {
  const home = freshHome();
  await ok(["--emulate", "--session", "plain", "hi"], { home });
  const db = new Database(join(home, "cachet.db"));
  expect(db.query("UPDATE sessions SET name = ? WHERE name = 'plain'").run("a\u200bb").changes).toBe(1);
  db.close();
  const [, row] = (await ok(["sessions"], { home })).stdout.trimEnd().split("\n");
  expect(row!.split(/\s+/)[1]).toBe("a\\u{200b}b");
  const id = row!.split(/\s+/)[0]!;
  expect((await ok(["sessions", "show", id], { home })).stdout.split("\n")[0]).toBe(`session   ${id} (a\\u{200b}b)`);
});

test("sessions show of a fork numbers its messages through the whole shown conversation, the parent's part tagged with its session", async () => {
  const home = freshHome();
  await ok(["--emulate", "--session", "p", "one"], { home });
  const parent = (await exportSession(home, "p")).messages;
  await ok(["--emulate", "--fork=p", "two"], { home });
  const lines = (await ok(["sessions", "show"], { home })).stdout.split("\n");
  const at = lines.indexOf("Messages (4):");
  const shown = lines.slice(at + 1, at + 5).map((l) => l.trim().split(/\s+/).slice(0, 4));
  const parentId = lines.find((l) => l.startsWith("fork of"))!.split(/\s+/)[2]!;
  expect(shown.map((w) => w[0])).toEqual(["1", "2", "3", "4"]);
  expect(shown.map((w) => w[1])).toEqual(["user", "assistant", "user", "assistant"]);
  expect(shown.slice(0, 2).map((w) => [w[2], w[3]])).toEqual(parent.map((m) => [m.id, `[${parentId}]`]));
  expect(shown.slice(2).map((w) => w[3]!.startsWith("["))).toEqual([false, false]);
});
