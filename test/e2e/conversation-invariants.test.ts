/**
 * Conversation invariants through the binary, on every protocol (issue 11;
 * CASES.md cases 38, 39, 40): a turn ending in two parallel tool calls is
 * answered with two `--tool-result ID=@FILE`; a new prompt while a call is
 * pending is refused locally (exit 2, the ids named, nothing sent) or, with
 * `--drop-pending`, sent with a stored "moved on" result; DeepSeek thinking
 * and Gemini 3 signatures are replayed. Every wire request the emulator
 * recorded was accepted; the same requests with the repair undone are
 * refused with the provider's error.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { cachet, cleanHomes, events, freshHome, ofType } from "./harness.ts";
import { against, ok, startEmulatorProcess, tempFile } from "./session-kit.ts";

type Raw = Record<string, any>;
afterAll(cleanHomes);

const TOOLS = tempFile(
  "tools.json",
  JSON.stringify([{ name: "lookup", description: "Look a word up.", parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"], additionalProperties: false } }]),
);
const SCRIPT = tempFile(
  "script.json",
  JSON.stringify([
    { tool_calls: [{ name: "lookup", arguments: '{"q":"alpha"}' }, { name: "lookup", arguments: '{"q":"beta"}' }] },
    { tool_calls: [{ name: "lookup", arguments: '{"q":"gamma"}' }] },
    { text: "Done." },
    { text: "Fine." },
  ]),
);

/** Per model: the emulator path of its protocol, and how to undo each repair in a recorded body. */
const MODELS = [
  { model: "anthropic/claude-sonnet-4-6", path: "/anthropic/v1/messages", error: "`tool_use` ids were found without `tool_result` blocks immediately after" },
  { model: "openai/gpt-5", path: "/openai/v1/chat/completions", error: "An assistant message with 'tool_calls' must be followed by tool messages" },
  { model: "openai-responses/gpt-5", path: "/openai/v1/responses", error: "No tool output found for function call" },
  { model: "google/gemini-3-pro-preview", path: "/google/v1beta/models/gemini-3-pro-preview:generateContent", error: "Please ensure that the number of function response parts is equal to the number of function call parts" },
  { model: "deepseek/deepseek-v4-flash", path: "/deepseek/chat/completions", error: "An assistant message with 'tool_calls' must be followed by tool messages" },
] as const;

/** The body with the results of the last answered tool turn removed but the first (a parallel call left half answered). */
function dropOneResult(model: string, body: Raw): Raw {
  const copy = structuredClone(body);
  if (model.startsWith("anthropic/")) {
    const turn = copy.messages.findIndex((m: Raw) => Array.isArray(m.content) && m.content.filter((b: Raw) => b.type === "tool_result").length === 2);
    copy.messages[turn].content = copy.messages[turn].content.filter((b: Raw, i: number) => b.type !== "tool_result" || i === 0);
  } else if (model.startsWith("openai-responses/")) {
    const second = copy.input.filter((i: Raw) => i.type === "function_call_output")[1];
    copy.input = copy.input.filter((i: Raw) => i !== second);
  } else if (model.startsWith("google/")) {
    const turn = copy.contents.find((c: Raw) => c.parts.filter((p: Raw) => p.functionResponse).length === 2);
    turn.parts = turn.parts.slice(1);
  } else {
    const second = copy.messages.filter((m: Raw) => m.role === "tool")[1];
    copy.messages = copy.messages.filter((m: Raw) => m !== second);
  }
  return copy;
}

describe.each(MODELS)("$model", ({ model, path, error }) => {
  test(
    "parallel results, a refused prompt while a call is pending, --drop-pending; every wire request valid, the unrepaired ones refused",
    async () => {
      const home = freshHome();
      const emulator = await startEmulatorProcess(home, { CACHET_EMULATOR_SCRIPT: SCRIPT });
      try {
        const target = against(emulator, model);
        const run = (args: string[], stdin?: string) => cachet(["-m", model, ...target.args, ...args], { home, env: target.env, ...(stdin === undefined ? {} : { stdin }) });
        const first = await ok(["-m", model, ...target.args, "--tools", TOOLS, "--json", "look up alpha and beta"], { home, env: target.env });
        const calls = ofType(events(first.stdout), "tool_call").map((e) => e.id as string);
        expect(calls).toHaveLength(2);

        // Case 39: a new prompt while calls are pending is refused before anything is sent.
        const refused = await run(["-c", "never mind"]);
        expect(refused.code).toBe(2);
        for (const id of calls) expect(refused.stderr).toContain(id);
        expect(refused.stderr).toContain("--drop-pending");
        expect(await emulator.bodies()).toHaveLength(1);
        // One result of two parallel calls is refused the same way.
        const half = await run(["-c", "--tool-result", `${calls[0]}=@${tempFile("a.txt", "A")}`]);
        expect(half.code).toBe(2);
        expect(half.stderr).toContain(calls[1]!);

        // Both results at once: one turn, answered with the next tool call.
        const second = await run(["-c", "--json", "--tool-result", `${calls[0]}=@${tempFile("a.txt", "A")}`, "--tool-result", `${calls[1]}=@${tempFile("b.txt", "B")}`]);
        expect(second.code).toBe(0);
        const [next] = ofType(events(second.stdout), "tool_call");
        expect(next).toBeDefined();

        // --drop-pending: the pending call gets the stored "moved on" result, and the prompt goes with it.
        const moved = await run(["-c", "--drop-pending", "-q", "never mind, thanks"]);
        expect(moved.stderr).toBe("");
        expect(moved.code).toBe(0);

        const received = await emulator.received();
        expect(received.map((r) => r.status)).toEqual([200, 200, 200]);
        const last = received.at(-1)!.body as Raw;
        expect(JSON.stringify(last)).toContain("no result: the user moved on");

        // The same requests with the repair undone are refused with the provider's error.
        const secondBody = received[1]!.body as Raw;
        const unrepaired = await fetch(`${emulator.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(dropOneResult(model, secondBody)) });
        expect(unrepaired.status).toBe(400);
        expect(JSON.stringify(await unrepaired.json())).toContain(error.replace(/'/g, "'"));
        if (model.startsWith("deepseek/")) {
          // Case 38: the tool-calling turn carries its reasoning_content; without it the thinking-mode request is refused.
          const withCalls = secondBody.messages.filter((m: Raw) => m.role === "assistant" && m.tool_calls);
          expect(withCalls.every((m: Raw) => typeof m.reasoning_content === "string" && m.reasoning_content.length > 0)).toBe(true);
          const stripped = structuredClone(secondBody);
          for (const m of stripped.messages) delete m.reasoning_content;
          const r = await fetch(`${emulator.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(stripped) });
          expect(r.status).toBe(400);
          expect(((await r.json()) as Raw).error.message).toBe("The `reasoning_content` in the thinking mode must be passed back to the API.");
        }
        if (model.startsWith("google/")) {
          const call = secondBody.contents.flatMap((c: Raw) => c.parts).find((p: Raw) => p.functionCall);
          expect(typeof call.thoughtSignature).toBe("string");
          const stripped = structuredClone(secondBody);
          for (const c of stripped.contents) for (const p of c.parts) delete p.thoughtSignature;
          const r = await fetch(`${emulator.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(stripped) });
          expect(r.status).toBe(400);
          expect(((await r.json()) as Raw).error.message).toContain("Function call is missing a thought_signature in functionCall parts.");
        }
      } finally {
        emulator.stop();
      }
    },
    90_000,
  );
});

describe("case 40: a whitespace-only answer is stored as it came and left off the wire", () => {
  test.each(MODELS.map((m) => m.model))("%s", async (model) => {
    const home = freshHome();
    const emulator = await startEmulatorProcess(home, { CACHET_EMULATOR_SCRIPT: tempFile("blank.json", JSON.stringify([{ text: "\n\n" }, { text: "Yes." }])) });
    try {
      const target = against(emulator, model);
      await ok(["-m", model, ...target.args, "-q", "hello"], { home, env: target.env });
      const again = await cachet(["-m", model, ...target.args, "-c", "-q", "are you there?"], { home, env: target.env });
      expect(again.stderr).toBe("");
      expect(again.code).toBe(0);
      const received = await emulator.received();
      expect(received.map((r) => r.status)).toEqual([200, 200]);
      expect(JSON.stringify(received[1]!.body)).not.toContain('"\\n\\n"');
      const exported = await cachet(["export"], { home });
      expect(exported.stdout).toContain('"text":"\\n\\n"');
    } finally {
      emulator.stop();
    }
  }, 60_000);
});

describe("settings a provider refuses are local usage errors, before anything is sent", () => {
  test("--temperature on a model that accepts only the default, --max-tokens above the output limit, -o setting an owned key (any wire's): exit 2, nothing sent", async () => {
    const home = freshHome();
    const emulator = await startEmulatorProcess(home);
    try {
      const target = against(emulator, "openai/gpt-5");
      const run = (args: string[]) => cachet(["-m", "openai/gpt-5", ...target.args, ...args, "hi"], { home, env: target.env });
      const temperature = await run(["--temperature", "0.2"]);
      expect(temperature.code).toBe(2);
      expect(temperature.stderr).toContain("openai/gpt-5 accepts only the default temperature (1); --temperature 0.2 would be refused by the provider");
      const topP = await run(["-o", "top_p=0.5"]);
      expect(topP.code).toBe(2);
      expect(topP.stderr).toContain("-o top_p 0.5");
      const output = await run(["--max-tokens", "200000"]);
      expect(output.code).toBe(2);
      expect(output.stderr).toContain("--max-tokens 200000 is above openai/gpt-5's output limit of 128,000 tokens");
      for (const key of ["model", "messages", "stream"]) {
        const owned = await run(["-o", `${key}=x`]);
        expect(owned.code).toBe(2);
        expect(owned.stderr).toContain(`-o ${key}: cachet sets "${key}" itself`);
      }
      // Every wire's system prompt, log and schema, whichever model: one line naming the option, a hint naming what to use instead.
      const wires = [
        ["systemInstruction", '{"parts":[{"text":"EVIL"}]}', "systemInstruction", "-s/--system"],
        ["instructions", "EVIL", "instructions", "-s/--system"],
        ["system", "EVIL", "system", "-s/--system"],
        ["input", "EVIL", "input", "the prompt"],
        ["contents", "[]", "contents", "the prompt"],
        ["text", '{"format":{"type":"text"}}', "text.format", "--schema"],
      ];
      for (const [key, value, part, use] of wires) {
        const owned = await run(["-o", `${key}=${value}`]);
        expect({ code: owned.code, stderr: owned.stderr }).toEqual({ code: 2, stderr: expect.stringMatching(new RegExp(`^cachet: -o ${key}: cachet sets "${part!.replace(".", "\\.")}" itself \\(it is part of the session and its cached prefix\\)\\n  hint: use ${use!.replace(/[/-]/g, "\\$&")}[^\\n]*\\n$`)) });
      }
      expect(await emulator.bodies()).toHaveLength(0);
      // The default is accepted.
      expect((await run(["--temperature", "1"])).code).toBe(0);
    } finally {
      emulator.stop();
    }
  }, 60_000);
});

describe("--schema with tool calls", () => {
  test("a tool-call turn is not validated as the answer; the finished answer after the results is", async () => {
    const home = freshHome();
    const script = tempFile("schema-tools.json", JSON.stringify([{ tool_calls: [{ name: "lookup", arguments: '{"q":"alpha"}' }] }, { text: '{"answer":"alpha means first"}' }]));
    const emulator = await startEmulatorProcess(home, { CACHET_EMULATOR_SCRIPT: script });
    try {
      const model = "openai/gpt-5";
      const target = against(emulator, model);
      const schema = JSON.stringify({ type: "object", properties: { answer: { type: "string" } }, required: ["answer"], additionalProperties: false });
      const call = await cachet(["-m", model, ...target.args, "--tools", TOOLS, "--schema", schema, "--json", "what is alpha?"], { home, env: target.env });
      expect(call.code).toBe(0);
      const callEvents = events(call.stdout);
      expect(ofType(callEvents, "error")).toEqual([]);
      const [toolCall] = ofType(callEvents, "tool_call");
      const done = await cachet(["-m", model, ...target.args, "-c", "--json", "--tool-result", `${toolCall!.id}=@${tempFile("r.txt", "first")}`], { home, env: target.env });
      expect(done.code).toBe(0);
      expect(ofType(events(done.stdout), "answer")).toEqual([{ type: "answer", value: { answer: "alpha means first" } }]);
    } finally {
      emulator.stop();
    }
  }, 60_000);
});

describe("Anthropic thinking replay", () => {
  test("with thinking on, the tool-using turn goes back starting with its signed thinking block; unsigned or without it, the emulator refuses", async () => {
    const home = freshHome();
    const script = tempFile("thinking.json", JSON.stringify([{ thinking: "I should look it up.", tool_calls: [{ name: "lookup", arguments: '{"q":"alpha"}' }] }, { text: "Alpha is first." }]));
    const emulator = await startEmulatorProcess(home, { CACHET_EMULATOR_SCRIPT: script });
    try {
      const model = "anthropic/claude-sonnet-4-6";
      const target = against(emulator, model);
      const thinking = ["-o", 'thinking={"type":"enabled","budget_tokens":1024}', "--max-tokens", "2000"];
      const first = await ok(["-m", model, ...target.args, ...thinking, "--tools", TOOLS, "--json", "what is alpha?"], { home, env: target.env });
      const [call] = ofType(events(first.stdout), "tool_call");
      const second = await cachet(["-m", model, ...target.args, ...thinking, "-c", "-q", "--tool-result", `${call!.id}=@${tempFile("r.txt", "first")}`], { home, env: target.env });
      expect(second.stderr).toBe("");
      expect(second.code).toBe(0);
      const received = await emulator.received();
      expect(received.map((r) => r.status)).toEqual([200, 200]);
      const body = received[1]!.body as Raw;
      const turn = body.messages[1].content as Raw[];
      expect(turn[0]).toMatchObject({ type: "thinking", thinking: "I should look it up." });
      expect(typeof turn[0]!.signature).toBe("string");
      const post = async (b: Raw) => {
        const r = await fetch(`${emulator.url}/anthropic/v1/messages`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(b) });
        return { status: r.status, message: ((await r.json()) as Raw).error?.message as string };
      };
      const withoutThinking = structuredClone(body);
      withoutThinking.messages[1].content = turn.slice(1);
      expect(await post(withoutThinking)).toMatchObject({ status: 400, message: expect.stringContaining("a final `assistant` message must start with a thinking block") });
      const unsigned = structuredClone(body);
      delete unsigned.messages[1].content[0].signature;
      expect(await post(unsigned)).toMatchObject({ status: 400, message: "messages.1.content.0.thinking.signature: Field required" });
    } finally {
      emulator.stop();
    }
  }, 60_000);
});
