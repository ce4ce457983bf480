/**
 * The main job through the compiled binary against the emulator: piped stdin
 * plus a PROMPT, for every protocol and every OpenAI-compatible usage shape;
 * streamed text, normalized usage, priced cost, valid --json events; and the
 * stdin rules (CASES.md case 23, a pipe that never closes, invalid UTF-8).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { BINARY, cachet, cleanHomes, events, freshHome, ofType } from "./harness.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

afterAll(cleanHomes);

type Raw = Record<string, any>;

/** Each provider with a model and the uncached input its raw usage implies (providers.md §1). */
const PROVIDERS: { model: string; uncached: (raw: Raw) => number; priced: boolean }[] = [
  { model: "anthropic/claude-sonnet-4-6", uncached: (r) => r.input_tokens, priced: true },
  { model: "openai/gpt-5", uncached: (r) => r.prompt_tokens - (r.prompt_tokens_details?.cached_tokens ?? 0) - (r.prompt_tokens_details?.cache_write_tokens ?? 0), priced: true },
  { model: "openai-responses/gpt-5", uncached: (r) => r.input_tokens - (r.input_tokens_details?.cached_tokens ?? 0) - (r.input_tokens_details?.cache_write_tokens ?? 0), priced: true },
  { model: "google/gemini-2.5-flash", uncached: (r) => r.promptTokenCount - (r.cachedContentTokenCount ?? 0), priced: true },
  { model: "deepseek/deepseek-chat", uncached: (r) => r.prompt_cache_miss_tokens, priced: true },
  { model: "moonshotai/kimi-k2.6", uncached: (r) => r.prompt_tokens - (r.cached_tokens ?? r.prompt_tokens_details?.cached_tokens ?? 0), priced: true },
  { model: "alibaba/qwen-plus", uncached: (r) => r.prompt_tokens - (r.prompt_tokens_details?.cached_tokens ?? 0) - (r.prompt_tokens_details?.cache_creation_input_tokens ?? 0), priced: true },
  { model: "openrouter/anthropic/claude-sonnet-4.5", uncached: (r) => r.prompt_tokens - (r.prompt_tokens_details?.cached_tokens ?? 0) - (r.prompt_tokens_details?.cache_write_tokens ?? 0), priced: true },
  // xAI's prices come from @pydantic/genai-prices (models.dev's snapshot has no xAI).
  { model: "xai/grok-4", uncached: (r) => r.prompt_tokens - (r.prompt_tokens_details?.cached_tokens ?? 0), priced: true },
];

describe("piped stdin + PROMPT through each provider (--emulate --json)", () => {
  for (const p of PROVIDERS) {
    test(p.model, async () => {
      const r = await cachet(["--emulate", "--json", "-m", p.model, "how do I install it"], { stdin: "RELEASE NOTES v1\n" });
      expect(r.stderr).not.toContain("internal error");
      expect(r.code).toBe(0);
      const list = events(r.stdout);
      expect(list[0]!.type).toBe("session");
      expect(list[0]!.model).toBe(p.model);
      expect(list.at(-1)).toMatchObject({ type: "done", incomplete: false, finish_reason: "stop" });
      const deltas = ofType(list, "text").map((e) => e.delta as string);
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.join("").trim().length).toBeGreaterThan(0);

      const [usage] = ofType(list, "usage");
      const raw = usage!.raw as Raw;
      expect(usage!.input).toBe(p.uncached(raw));
      for (const key of ["input", "cacheRead", "cacheWrite5m", "cacheWrite1h", "output"]) {
        expect(Number.isInteger(usage![key])).toBe(true);
        expect(usage![key] as number).toBeGreaterThanOrEqual(0);
      }
      expect(usage!.output as number).toBeGreaterThan(0);

      const [cost] = ofType(list, "cost");
      if (p.priced) {
        expect(typeof cost!.cost_usd).toBe("number");
        expect(cost!.cost_usd as number).toBeGreaterThan(0);
      } else {
        expect(cost!.cost_usd).toBeNull();
        expect(String(cost!.reason)).toContain("xai/grok-4");
      }
    });
  }
});

describe("stdin and PROMPT (CASES.md case 23)", () => {
  test("both are sent, stdin first, then the prompt; the text streams to stdout", async () => {
    const home = freshHome();
    const emulator = Bun.spawn([BINARY, "emulate", "--port", "0"], { env: { ...process.env, CACHET_HOME: home }, stdout: "pipe", stderr: "ignore" });
    try {
      const reader = emulator.stdout.getReader();
      let first = "";
      while (!first.includes("\n")) first += new TextDecoder().decode((await reader.read()).value);
      const url = first.split("\n")[0]!.trim();
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const r = await cachet(["-m", "anthropic/claude-sonnet-4-6", "--base-url", `${url}/anthropic`, "how do I install it"], {
        home,
        stdin: new Uint8Array([0x52, 0x45, 0x4c, 0x45, 0x41, 0x53, 0x45, 0x20, 0x4e, 0x4f, 0x54, 0x45, 0x53, 0x20, 0x76, 0x31, 0x0a]),
        env: { ANTHROPIC_API_KEY: "test-key" },
      });
      expect(r.code).toBe(0);
      expect(r.stdout.length).toBeGreaterThan(1);
      const received = (await (await fetch(`${url}/_emulator/requests`)).json()) as { requests?: { body: Raw }[] } | { body: Raw }[];
      const list = Array.isArray(received) ? received : (received.requests ?? []);
      const body = list.at(-1)!.body;
      const user = body.messages.at(-1);
      const text = user.content.map((b: Raw) => b.text).join("");
      expect(text).toBe("RELEASE NOTES v1\n\nhow do I install it");
      expect(JSON.stringify(list.at(-1))).not.toContain("test-key");
    } finally {
      emulator.kill();
    }
  });

  test("a pipe that stays open with no data does not hang: the prompt alone is sent, with a notice", async () => {
    const home = freshHome();
    const started = Date.now();
    const proc = Bun.spawn([BINARY, "--emulate", "--json", "hello"], {
      env: { PATH: process.env.PATH ?? "", CACHET_DAEMON_AUTOSTART: "0", CACHET_HOME: home, NO_COLOR: "1" },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    const elapsed = Date.now() - started;
    proc.stdin.end();
    expect(code).toBe(0);
    // The first-byte wait is 2 s; stdin is never closed, so only that bound can have ended the wait.
    expect(elapsed).toBeLessThan(15_000);
    expect(stderr).toContain("stdin stayed open with no data");
    expect(ofType(events(stdout), "done")).toHaveLength(1);
  });

  test("`-` reads stdin to the end and sends it alone", async () => {
    const r = await cachet(["--emulate", "--json", "-"], { stdin: "only stdin" });
    expect(r.code).toBe(0);
    expect(ofType(events(r.stdout), "done")).toHaveLength(1);
  });

  test("invalid UTF-8 on stdin: one line naming the byte offset, exit 3, nothing stored", async () => {
    const home = freshHome();
    const r = await cachet(["--emulate", "summarise"], { home, stdin: new Uint8Array([0x63, 0x61, 0x66, 0xc3, 0x28, 0x0a]) });
    expect(r.code).toBe(3);
    expect(r.stdout).toBe("");
    expect(r.stderr.split("\n")[0]).toBe("cachet: stdin is not valid UTF-8: invalid byte 0xc3 at offset 3");
    expect(r.stderr).toContain("--stdin-encoding replace");
    // `sessions --json` prints one line per session: none here.
    expect((await cachet(["sessions", "--json"], { home })).stdout).toBe("");
  });

  test("--stdin-encoding replace substitutes U+FFFD and goes on", async () => {
    const r = await cachet(["--emulate", "--json", "--stdin-encoding", "replace", "summarise"], { stdin: new Uint8Array([0x63, 0x61, 0x66, 0xc3, 0x28]) });
    expect(r.code).toBe(0);
  });

  test("nothing to send: no PROMPT and no stdin is a usage error", async () => {
    const r = await cachet(["--emulate", "-q"], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("nothing to send");
  });

  test("`-` with an empty stdin says stdin was empty (the `-` asked for it), not that no PROMPT was given; nothing stored", async () => {
    const home = freshHome();
    for (const args of [["--emulate", "-"], ["--emulate", "--session", "x", "-"]]) {
      const r = await cachet(args, { home, stdin: "" });
      expect({ args, code: r.code, lines: r.stderr.split("\n") }).toEqual({
        args,
        code: 2,
        lines: ["cachet: nothing to send: `-` reads the prompt from stdin, and stdin was empty", "  hint: pipe the text in (git diff | cachet -), or give the PROMPT as words", ""],
      });
    }
    expect((await cachet(["sessions"], { home })).stdout).toBe("no sessions yet\n");
    // Without `-`, an empty stdin still reads as no input at all.
    expect((await cachet(["--emulate"], { home, stdin: "" })).stderr.split("\n")[0]).toBe("cachet: nothing to send: no PROMPT argument and nothing on stdin");
  });

  test("--stdin skip without a PROMPT says stdin is left unread (it may hold data), not that it is empty; nothing stored", async () => {
    const home = freshHome();
    for (const stdin of ["data\n", ""]) {
      const r = await cachet(["--emulate", "--stdin", "skip"], { home, stdin });
      expect({ stdin, code: r.code, stdout: r.stdout, lines: r.stderr.split("\n") }).toEqual({
        stdin,
        code: 2,
        stdout: "",
        lines: ["cachet: nothing to send: no PROMPT argument, and --stdin skip leaves stdin unread", '  hint: give the prompt as words (cachet --stdin skip "hello"), or drop --stdin skip to send stdin', ""],
      });
    }
    expect((await cachet(["sessions"], { home })).stdout).toBe("no sessions yet\n");
    // With a PROMPT, --stdin skip sends the prompt alone.
    const sent = await cachet(["--emulate", "--stdin", "skip", "--json", "hello"], { home, stdin: "data\n" });
    expect(sent.code).toBe(0);
    const stored = (await cachet(["export"], { home })).stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Raw);
    const users = stored.filter((l) => l.type === "message" && l.message.role === "user").map((l) => l.message.content);
    expect(users).toEqual([[{ type: "text", text: "hello" }]]);
  });
});

describe("keys and text mode", () => {
  test("a missing API key names the variable and suggests --emulate; exit 2; nothing stored", async () => {
    const home = freshHome();
    const r = await cachet(["-m", "openai/gpt-5", "hello"], { home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("OPENAI_API_KEY");
    expect(r.stderr).toContain("--emulate");
    expect((await cachet(["sessions", "--json"], { home })).stdout).toBe("");
  });

  test("without --json only the answer text reaches stdout", async () => {
    const r = await cachet(["--emulate", "hello"]);
    expect(r.code).toBe(0);
    expect(r.stdout.endsWith("\n")).toBe(true);
    expect(r.stdout).not.toContain("{");
    expect(r.stdout.trim().split(" ").length).toBeGreaterThan(3);
  });
});

test("the first -o, --max-tokens and --temperature on a continued session that stored none are each said on stderr, from (unset); a later change too", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "hi"], { home })).code).toBe(0);
  const first = await cachet(["--emulate", "-c", "-o", "top_k=5", "--max-tokens", "900", "again"], { home });
  expect(first.code).toBe(0);
  expect(first.stderr.trim().split("\n")).toEqual(["[warn] -o top_k (unset) → 5 for this session from now on", "[warn] --max-tokens (unset) → 900 for this session from now on"]);
  const second = await cachet(["--emulate", "-c", "--temperature", "0.5", "--max-tokens", "900", "more"], { home });
  expect(second.code).toBe(0);
  expect(second.stderr.trim().split("\n")).toEqual(["[warn] --temperature (unset) → 0.5 for this session from now on"]);
  const same = await cachet(["--emulate", "-c", "-o", "top_k=5", "still"], { home });
  expect({ code: same.code, stderr: same.stderr }).toEqual({ code: 0, stderr: "" });
});

test("an answer ended by a refusal or a content filter prints as text (exit 0) with one stderr line naming the finish reason, on each provider", async () => {
  const home = freshHome();
  const script = join(home, "refuse.json");
  writeFileSync(script, JSON.stringify([{ text: "I can't help with that.", refusal: true }]));
  const expected: [string, string][] = [
    ["google/gemini-2.5-flash", "[warn] the provider's content filter stopped the answer (finish reason SAFETY): what came is printed and stored, and may be cut short"],
    ["openai/gpt-4o", "[warn] the provider's content filter stopped the answer (finish reason content_filter): what came is printed and stored, and may be cut short"],
    ["anthropic/claude-sonnet-4-6", "[warn] the model refused to answer (finish reason refusal): its reply is printed and stored as the answer"],
    // The Responses API sends a refusal as a `refusal` content part, streamed (response.refusal.delta) or not.
    ["openai-responses/gpt-5", "[warn] the model refused to answer (finish reason refusal): its reply is printed and stored as the answer"],
  ];
  for (const [model, line] of expected) {
    const r = await cachet(["--emulate", "-m", model, "please"], { home, env: { CACHET_EMULATOR_SCRIPT: script } });
    expect({ model, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ model, code: 0, stdout: "I can't help with that.\n", stderr: `${line}\n` });
  }
  const unstreamed = await cachet(["--emulate", "-m", "openai-responses/gpt-5", "--no-stream", "please"], { home, env: { CACHET_EMULATOR_SCRIPT: script } });
  expect({ code: unstreamed.code, stdout: unstreamed.stdout, stderr: unstreamed.stderr }).toEqual({ code: 0, stdout: "I can't help with that.\n", stderr: `${expected[3]![1]}\n` });
  const plain = await cachet(["--emulate", "-m", "google/gemini-2.5-flash", "please"], { home });
  expect({ code: plain.code, stderr: plain.stderr }).toEqual({ code: 0, stderr: "" });
});

test("an answer cut at the output limit prints what came (exit 0) with one stderr line naming the limit, on each provider", async () => {
  const home = freshHome();
  const script = join(home, "long.json");
  const long = Array.from({ length: 400 }, (_, i) => `word${i}`).join(" ");
  writeFileSync(script, JSON.stringify(Array.from({ length: 8 }, () => ({ text: long }))));
  const env = { CACHET_EMULATOR_SCRIPT: script };
  const reasons: [string, string][] = [
    ["anthropic/claude-sonnet-4-6", "max_tokens"],
    ["openai/gpt-4o", "length"],
    ["openai-responses/gpt-5", "max_output_tokens"],
    ["google/gemini-2.5-flash", "MAX_TOKENS"],
  ];
  for (const [model, raw] of reasons) {
    const r = await cachet(["--emulate", "-m", model, "--max-tokens", "20", "please"], { home, env });
    expect({ model, code: r.code, stderr: r.stderr }).toEqual({
      model,
      code: 0,
      stderr: `[warn] the answer was cut at the output limit of 20 tokens (finish reason ${raw}): what came is printed and stored; raise --max-tokens above 20, or continue it with \`cachet -c "go on"\`\n`,
    });
    expect(r.stdout.length).toBeGreaterThan(10);
    expect(long.startsWith(r.stdout.trimEnd())).toBe(true);
  }
  const whole = await cachet(["--emulate", "--max-tokens", "4000", "please"], { home, env });
  expect({ code: whole.code, stdout: whole.stdout, stderr: whole.stderr }).toEqual({ code: 0, stdout: `${long}\n`, stderr: "" });
  // At the model's own output limit (gpt-3.5-turbo: 4,096), raising --max-tokens cannot help: only continuing can.
  const longer = join(home, "longer.json");
  writeFileSync(longer, JSON.stringify([{ text: Array.from({ length: 6000 }, (_, i) => `word${i}`).join(" ") }]));
  const capped = await cachet(["--emulate", "-m", "openai/gpt-3.5-turbo", "--max-tokens", "4096", "please"], { home, env: { CACHET_EMULATOR_SCRIPT: longer } });
  expect({ code: capped.code, stderr: capped.stderr }).toEqual({
    code: 0,
    stderr: '[warn] the answer was cut at the model\'s output limit of 4096 tokens (finish reason length): what came is printed and stored; continue it with `cachet -c "go on"`\n',
  });
});

test("without --max-tokens, Anthropic's default 8,192 is capped at a model's smaller output limit (claude-3-haiku: 4,096), which the API would refuse; nothing is stored as a setting", async () => {
  const home = freshHome();
  const r = await cachet(["--emulate", "--json", "-m", "anthropic/claude-3-haiku-20240307", "hi"], { home });
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
  const again = await cachet(["--emulate", "-c", "--max-tokens", "100", "more"], { home });
  // The first turn stored no --max-tokens of its own: setting one now is a change from "unset".
  expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: "[warn] --max-tokens (unset) → 100 for this session from now on\n" });
});

test("the first turn of a new named session reports no setting changes (there is nothing to change from)", async () => {
  const home = freshHome();
  const first = await cachet(["--emulate", "--session", "nn", "--max-tokens", "200", "--temperature", "0.5", "-o", "top_k=3", "hi"], { home });
  expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: "" });
  const next = await cachet(["--emulate", "--session", "nn", "--max-tokens", "300", "more"], { home });
  expect({ code: next.code, stderr: next.stderr }).toEqual({ code: 0, stderr: "[warn] --max-tokens 200 → 300 for this session from now on\n" });
});

test("tool calls left without a result are counted in good grammar: '1 of the 3 … has', '2 of the 3 … have', 'a pending tool call … leaves it'", async () => {
  const home = freshHome();
  const tools = join(home, "tools.json");
  writeFileSync(tools, JSON.stringify([{ name: "lookup", description: "Look a word up.", parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] } }]));
  const script = join(home, "script.json");
  const call = (q: string) => ({ name: "lookup", arguments: JSON.stringify({ q }) });
  writeFileSync(script, JSON.stringify([{ tool_calls: [call("a"), call("b"), call("c")] }]));
  const env = { CACHET_EMULATOR_SCRIPT: script };
  const first = await cachet(["--emulate", "--tools", tools, "--json", "look up a, b and c"], { home, env });
  const ids = ofType(events(first.stdout), "tool_call").map((e) => e.id as string);
  expect(ids).toHaveLength(3);
  const result = join(home, "result.txt");
  writeFileSync(result, "found");
  const firstLine = async (args: string[]) => {
    const r = await cachet(["--emulate", "-c", ...args], { home, env });
    expect(r.code).toBe(2);
    return r.stderr.split("\n")[0];
  };
  expect(await firstLine(["--tool-result", `${ids[0]}=@${result}`])).toBe(`cachet: 2 of the 3 pending tool calls have no result: ${ids[1]}, ${ids[2]}; the provider refuses a new turn that leaves them unanswered`);
  expect(await firstLine(["--tool-result", `${ids[0]}=@${result}`, "--tool-result", `${ids[1]}=@${result}`])).toBe(`cachet: 1 of the 3 pending tool calls has no result: ${ids[2]}; the provider refuses a new turn that leaves it unanswered`);
  expect(await firstLine(["next"])).toBe(`cachet: the last answer has 3 pending tool calls: ${ids.join(", ")}; the provider refuses a new turn that leaves them unanswered`);
  const one = freshHome();
  writeFileSync(script, JSON.stringify([{ tool_calls: [call("z")] }]));
  const single = await cachet(["--emulate", "--tools", tools, "--json", "look up z"], { home: one, env });
  const [only] = ofType(events(single.stdout), "tool_call").map((e) => e.id as string);
  const refused = await cachet(["--emulate", "-c", "next"], { home: one, env });
  expect({ code: refused.code, line: refused.stderr.split("\n")[0] }).toEqual({ code: 2, line: `cachet: the last answer has a pending tool call: ${only}; the provider refuses a new turn that leaves it unanswered` });
});

test("gemini 3 with visible thoughts and tools: the --tool-result turn replays the call's thought signature (streamed and --no-stream, one call and two in parallel)", async () => {
  const home = freshHome();
  const tools = join(home, "tools.json");
  writeFileSync(tools, JSON.stringify([{ name: "get_weather", description: "Weather of a city.", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }]));
  const script = join(home, "script.json");
  const env = { CACHET_EMULATOR_SCRIPT: script };
  const call = (city: string) => ({ name: "get_weather", arguments: JSON.stringify({ city }) });
  const thoughts = ["-o", 'generationConfig={"thinkingConfig":{"includeThoughts":true}}'];
  for (const [session, stream] of [["g", []], ["g-unstreamed", ["--no-stream"]]] as const) {
    writeFileSync(script, JSON.stringify([{ thinking: "hmm", tool_calls: [call("Tokyo")] }, { text: "18 C" }]));
    const first = await cachet(["--emulate", ...stream, "-m", "google/gemini-3-pro-preview", "--session", session, "--tools", tools, ...thoughts, "--json", "weather?"], { home, env });
    expect(first.code).toBe(0);
    const [id] = ofType(events(first.stdout), "tool_call").map((e) => e.id as string);
    const second = await cachet(["--emulate", ...stream, "--session", session, "--tool-result", id!], { home, env, stdin: '{"t":18}' });
    expect({ session, code: second.code, stdout: second.stdout, stderr: second.stderr }).toEqual({ session, code: 0, stdout: "18 C\n", stderr: "" });
  }
  writeFileSync(script, JSON.stringify([{ thinking: "hmm", tool_calls: [call("Tokyo"), call("Osaka")] }, { text: "18 C and 20 C" }]));
  const first = await cachet(["--emulate", "-m", "google/gemini-3-pro-preview", "--session", "p", "--tools", tools, ...thoughts, "--json", "weather?"], { home, env });
  const ids = ofType(events(first.stdout), "tool_call").map((e) => e.id as string);
  expect(ids).toHaveLength(2);
  const result = join(home, "result.json");
  writeFileSync(result, '{"t":18}');
  const second = await cachet(["--emulate", "--session", "p", ...ids.flatMap((id) => ["--tool-result", `${id}=@${result}`])], { home, env });
  expect({ code: second.code, stdout: second.stdout, stderr: second.stderr }).toEqual({ code: 0, stdout: "18 C and 20 C\n", stderr: "" });
});
