/**
 * A scripted "agent" behind `cachet proxy --emulate` (the compiled binary),
 * making the two classic cache mistakes: it stamps the date and time into its
 * system prompt on every request, and on turn 5 it sends its tools in another
 * order. It sends no affinity key, so its turns are joined into one recorded
 * session by their log alone, across a restart of the proxy after turn 3;
 * `cachet why` then diagnoses each turn.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cachet, cleanHomes, freshHome } from "../e2e/harness.ts";
import { spawnProxy } from "./harness.ts";

const TURNS = 8;
/** 0-based: the fifth turn reorders the tools. */
const REORDERED = 4;
/** 0-based: the proxy is restarted before this turn. */
const RESTART = 3;
const TOOLS = ["read_file", "write_file", "run_shell", "search_code"].map((name) => ({
  name,
  description: `${name.replace("_", " ")}: ${"a tool of the agent, described at length. ".repeat(40)}`,
  input_schema: { type: "object", properties: { target: { type: "string" } }, required: ["target"] },
}));

type Why = { divergence: { kind: string; nodeId: string } | null; causes: string[]; request: { session: string } };
let home: string;
const whys: Why[] = [];

beforeAll(async () => {
  home = freshHome();
  let proxy = await spawnProxy(home, ["--emulate"]);
  const lines: string[] = [];
  const messages: unknown[] = [];
  for (let turn = 0; turn < TURNS; turn++) {
    if (turn === RESTART) {
      lines.push(...(await proxy.recorded(turn)));
      await proxy.stop();
      proxy = await spawnProxy(home, ["--emulate"]);
    }
    messages.push({ role: "user", content: [{ type: "text", text: `step ${turn}: continue the refactoring` }] });
    const tools = turn >= REORDERED ? [...TOOLS].reverse() : TOOLS;
    const response = await fetch(`${proxy.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "sk-ant-agent-fake", "user-agent": "scripted-agent/1.0" },
      body: JSON.stringify({
        model: "claude-sonnet-4-6",
        max_tokens: 100,
        tools,
        system: [{ type: "text", text: `You are a coding agent. Current time: 2026-11-30T14:0${turn}:00Z.`, cache_control: { type: "ephemeral" } }],
        messages,
      }),
    });
    const answer = (await response.json()) as { content: unknown[] };
    messages.push({ role: "assistant", content: answer.content });
  }
  lines.push(...(await proxy.recorded(TURNS - RESTART)));
  await proxy.stop();
  for (const line of lines) {
    const id = /recorded (r_\w+)/.exec(line)![1]!;
    whys.push(JSON.parse((await cachet(["why", id, "--json"], { home })).stdout) as Why);
  }
}, 60_000);

afterAll(cleanHomes);

describe("a scripted agent with the date in its system prompt and tools reordered on turn 5", () => {
  test("its turns form one recorded session, found from the log, also after the proxy restarted", () => {
    expect(whys).toHaveLength(TURNS);
    expect(new Set(whys.map((w) => w.request.session)).size).toBe(1);
  });

  test("every later turn: the system prompt changed", () => {
    for (let turn = 1; turn < TURNS; turn++) {
      expect(whys[turn]!.causes).toContain("system changed");
      if (turn === REORDERED) continue;
      expect(whys[turn]!.causes).not.toContain("tools reordered");
      expect(whys[turn]!.divergence?.kind).toBe("system");
    }
  });

  test("turn 5: the tools were reordered (first divergent element: a tool), and the system prompt changed too", () => {
    const why = whys[REORDERED]!;
    expect(why.divergence).toMatchObject({ kind: "tool", nodeId: "tool:search_code" });
    expect(why.causes[0]).toBe("tools reordered");
    expect(why.causes).toContain("system changed");
  });

  test("the per-client view names the agent and its hit rate of 0", async () => {
    const stats = JSON.parse((await cachet(["stats", "--recorded", "--by", "client", "--json"], { home })).stdout) as { groups: { key: string; requests: number; hitRate: number | null }[] };
    expect(stats.groups).toHaveLength(1);
    expect(stats.groups[0]).toMatchObject({ key: "scripted-agent/1.0", requests: TURNS });
    // Its only breakpoint closes a system prompt that changes every turn: nothing is ever read back.
    expect(stats.groups[0]!.hitRate).toBe(0);
  });
});
