/**
 * Small command-line contracts, through the binary: probe takes --model for a
 * scenario without models; a failed `plugins test` counts its failures; one
 * duration parser and real dates for --since; run --help names the default
 * model; one message for a bad integer flag; proxy names a bad --host;
 * emulate and proxy print a bracketed IPv6 --host once in their URL.
 */
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, freshHome, homeEnv } from "./harness.ts";

afterAll(cleanHomes);

test("probe: a scenario without models runs with --model, and without either is refused (exit 2)", async () => {
  const home = freshHome();
  const scenario = join(home, "s.json");
  writeFileSync(scenario, JSON.stringify({ steps: [{ user: "hi" }] }));
  const ran = await cachet(["probe", scenario, "--emulate", "--json", "--model", "anthropic/claude-sonnet-4-6"], { home });
  expect(ran.code).toBe(0);
  expect(JSON.stringify(JSON.parse(ran.stdout))).toContain("anthropic/claude-sonnet-4-6");
  const refused = await cachet(["probe", scenario, "--emulate"], { home });
  expect(refused.code).toBe(2);
  expect(refused.stderr.split("\n")[0]).toBe("cachet: scenario s.json names no models and no --model was given");
});

test("plugins test: a failed run counts the checks that failed", async () => {
  const home = freshHome();
  const plugin = join(home, "nanp.js");
  writeFileSync(
    plugin,
    `export default {
  name: "nanp",
  api: "^1",
  setup(api) {
    api.provider({
      id: "nanp", protocol: "openai-chat", env: ["NANP_API_KEY"], defaultBaseUrl: "https://api.nanp.example/v1", emulatorPath: "/nanp/v1", models: ["m1"],
      usageExamples: [{ raw: { prompt_tokens: 12, completion_tokens: 3 }, usage: { input: 12, output: 3 } }],
      create(config) {
        const chat = api.adapter("openai-compatible", config);
        return { render: chat.render, send: chat.send, usage: (raw) => ({ raw, usage: { input: NaN, output: 1 } }) };
      },
    });
  },
};
`,
  );
  const r = await cachet(["plugins", "test", plugin], { home });
  expect(r.code).toBe(1);
  const lines = r.stdout.trim().split("\n");
  const failed = lines.filter((l) => l.startsWith("FAIL ")).length;
  const checks = lines.filter((l) => l.startsWith("FAIL ") || l.startsWith("ok   ")).length;
  expect(failed).toBe(3);
  expect(lines.at(-1)).toBe(`failed: nanp, ${failed} of ${checks} checks failed`);
});

test("stats --since: 1h30m is a duration (as in scenarios); 2026-02-30 is refused; a real date is taken", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "hello"], { home })).code).toBe(0);
  const recent = await cachet(["stats", "--since", "1h30m", "--json"], { home });
  expect(recent.code).toBe(0);
  expect(JSON.parse(recent.stdout).total.requests).toBe(1);
  const impossible = await cachet(["stats", "--since", "2026-02-30"], { home });
  expect(impossible.code).toBe(2);
  expect(impossible.stderr.split("\n")[0]).toBe('cachet: --since "2026-02-30" is neither a duration nor a date that exists');
  const future = await cachet(["stats", "--since", "2999-01-01", "--json"], { home });
  expect(future.code).toBe(0);
  expect(JSON.parse(future.stdout).total.requests).toBe(0);
});

test("run --help names the default model as its example", async () => {
  const r = await cachet(["run", "--help"]);
  expect(r.code).toBe(0);
  expect(r.stdout).toContain("anthropic/claude-sonnet-4-6");
  expect(r.stdout).not.toContain("claude-sonnet-4-5");
});

test("--max-tokens: abc, 1.5, 0 and the exponent and hex forms Number() would read get the same message", async () => {
  for (const value of ["abc", "1.5", "0", "-3", "1e3", "0x10", " 5"]) {
    const r = await cachet(["--emulate", "--max-tokens", value, "hi"]);
    expect({ value, code: r.code, line: r.stderr.split("\n")[0] }).toEqual({ value, code: 2, line: `cachet: --max-tokens ${value}: expected an integer ≥ 1 in decimal digits` });
  }
});

test("emulate --port takes decimal digits only: 1e3 and 0x50 are one-line usage errors (exit 2), not ports 1000 and 80", async () => {
  for (const value of ["1e3", "0x50", "8.0"]) {
    const r = await cachet(["emulate", "--port", value]);
    const lines = r.stderr.trim().split("\n");
    expect({ value, code: r.code, stdout: r.stdout, line: lines[0], lines: lines.length }).toEqual({ value, code: 2, stdout: "", line: `cachet: --port must be an integer from 0 to 65535 in decimal digits, got "${value}"`, lines: 2 });
    expect(lines[1]).toBe("  hint: use --port 0 for a free port");
  }
});

test("--retries, --idle-timeout and --temperature refuse exponent and hex forms before anything is sent", async () => {
  for (const [flag, value, expected] of [
    ["--retries", "1e1", "expected an integer ≥ 0 in decimal digits"],
    ["--retries", "0x2", "expected an integer ≥ 0 in decimal digits"],
    ["--idle-timeout", "1e1", "expected seconds from 0.001 to 2147483"],
    ["--idle-timeout", "0x10", "expected seconds from 0.001 to 2147483"],
    ["--temperature", "5e-1", "expected a non-negative number in decimal digits"],
  ] as const) {
    const home = freshHome();
    const r = await cachet(["--emulate", flag, value, "hi"], { home });
    expect({ flag, value, code: r.code, stdout: r.stdout }).toEqual({ flag, value, code: 2, stdout: "" });
    expect(r.stderr.split("\n")[0]).toStartWith(`cachet: ${flag} ${value}: ${expected}`);
    expect((await cachet(["stats", "--json"], { home })).stdout).toContain('"requests":0');
  }
  // Decimal forms still work: a fraction of a second, a fractional temperature.
  expect((await cachet(["--emulate", "--idle-timeout", "2.5", "--temperature", ".5", "--retries", "007", "hi"])).code).toBe(0);
});

test("proxy --host 999.1.1.1 names the host, not the port (exit 2)", async () => {
  const r = await cachet(["proxy", "--host", "999.1.1.1", "--emulate"]);
  expect(r.code).toBe(2);
  const [line, hint] = r.stderr.split("\n");
  expect(line).toBe("cachet: --host 999.1.1.1 is not an IPv4 address");
  expect(hint).toContain("127.0.0.1");
  expect(hint).not.toContain("--port");
});

test("stats --help keeps its option column narrow (--by=<GROUP>, the groups in the description); a bad --by is exit 2 naming the groups", async () => {
  const home = freshHome();
  const help = await cachet(["stats", "--help"], { home });
  expect(help.code).toBe(0);
  const by = help.stdout.split("\n").find((l) => l.includes("--by="))!;
  expect(by).toBe("         --by=<GROUP>    Group by session (default), model, role, day, request or client (the user-agent of recorded sessions)");
  const bad = await cachet(["stats", "--by", "week"], { home });
  expect({ code: bad.code, stdout: bad.stdout, stderr: bad.stderr }).toEqual({
    code: 2,
    stdout: "",
    stderr: 'cachet: --by "week" is not a grouping\n  hint: use --by with one of session, model, role, day, request, client\n',
  });
});

test("models: the text table has the output-token limit beside the context window, under a `max out` header, aligned, the same figures as --json's `context` and `maxOutput`", async () => {
  const home = freshHome();
  for (const provider of ["anthropic", "openai"]) {
    const text = await cachet(["models", "--provider", provider], { home });
    const json = await cachet(["models", "--provider", provider, "--json"], { home });
    expect([text.code, json.code, text.stderr, json.stderr]).toEqual([0, 0, "", ""]);
    const rows = json.stdout.trim().split("\n").map((l) => JSON.parse(l) as { id: string; context: number | null; maxOutput: number | null });
    const [header, ...lines] = text.stdout.trimEnd().split("\n");
    expect(header!.split(/\s{2,}/)).toEqual(["model", "in $/M", "out $/M", "read $/M", "write $/M", "context", "max out", "tiers"]);
    expect(lines).toHaveLength(rows.length);
    // Right-aligned: each figure ends where its header ends.
    const contextEnd = header!.indexOf("context") + "context".length;
    const maxOutEnd = header!.indexOf("max out") + "max out".length;
    const shown = (v: number | null) => (v === null ? "-" : String(v));
    for (const [i, row] of rows.entries()) {
      const line = lines[i]!;
      expect({ id: row.id, line: line.startsWith(`${row.id} `), context: line.slice(0, contextEnd).trimEnd().split(" ").at(-1), maxOut: line.slice(0, maxOutEnd).trimEnd().split(" ").at(-1) }).toEqual({
        id: row.id, line: true, context: shown(row.context), maxOut: shown(row.maxOutput),
      });
    }
    expect(rows.filter((r) => r.maxOutput !== null).length).toBeGreaterThan(5);
  }
  expect((await cachet(["models", "--provider", "anthropic"], { home })).stdout.split("\n").find((l) => l.startsWith("anthropic/claude-sonnet-4-6 "))).toMatch(/ 1000000 {4}64000(\s|$)/);
});

test("a letter group with a global letter before a command (`-qv sessions`) is that command's: its error names the command", async () => {
  const home = freshHome();
  const grouped = await cachet(["-qv", "sessions"], { home });
  expect(grouped.code).toBe(2);
  expect(grouped.stderr).toBe("cachet: unknown flag -v for `cachet sessions`\n  hint: `cachet --version` alone prints the version; run `cachet sessions --help` for the flags it accepts\n");
  const quiet = await cachet(["-qq", "sessions"], { home });
  expect({ code: quiet.code, stderr: quiet.stderr }).toEqual({ code: 0, stderr: "" });
});

test("emulate and proxy fail to listen alike: a taken port and a bad host are each one line with a hint for that flag, exit 2, no warning first", async () => {
  const taken = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("taken") });
  const portHint = "  hint: pick another --port, or 0 for a free one";
  const hostHint = "  hint: give a name or address of this machine: 127.0.0.1 (loopback, the default), localhost, ::1, or 0.0.0.0 for every interface";
  try {
    for (const [flags, line, hint] of [
      [["--port", String(taken.port)], `cachet: cannot listen on --port ${taken.port}: the port is in use on 127.0.0.1`, portHint],
      [["--host", "[127.0.0.1]"], "cachet: --host [127.0.0.1]: only an IPv6 address goes in brackets", hostHint],
      [["--host", "notahost.invalid"], /^cachet: --host notahost\.invalid: no such host \(\w+\)$/, hostHint],
      [["--host", "/tmp/x.sock"], "cachet: --host /tmp/x.sock is not a host name or an IP address", hostHint],
      // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): no machine's own address.
      [["--host", "192.0.2.1"], "cachet: cannot listen on --host 192.0.2.1: not an address of this machine", hostHint],
    ] as const) {
      for (const command of [["emulate"], ["proxy", "--emulate"]]) {
        const r = await cachet([...command, ...flags]);
        const lines = r.stderr.split("\n");
        expect({ command, flags, code: r.code, stdout: r.stdout, lines: lines.length, hint: lines[1] }).toEqual({ command, flags, code: 2, stdout: "", lines: 3, hint });
        if (typeof line === "string") expect(lines[0]).toBe(line);
        else expect(lines[0]).toMatch(line);
      }
    }
  } finally {
    taken.stop(true);
  }
});

test("a limit below a millionth of a dollar is shown with its digits, not as $0.000000", async () => {
  const r = await cachet(["--emulate", "--max-cost", "0.0000001", "hi"]);
  expect(r.code).toBe(6);
  expect(r.stderr.split("\n")[0]).toMatch(/^cachet: budget: the run limit \(--max-cost\) of \$0\.00000010 would be crossed: spent \$0\.0000 in this run, this call's worst-case forecast \$\d+\.\d{4,}; nothing was sent$/);
});

/** Starts `cachet ARGS` (emulate or proxy) and stops it once its info line is out: its URL line and stderr. */
async function served(args: string[]): Promise<{ url: string; stderr: string }> {
  const home = freshHome();
  const proc = Bun.spawn([BINARY, ...args], { env: homeEnv(home), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  let stderr = "";
  const decoder = new TextDecoder();
  const reader = proc.stderr.getReader();
  const readUntil = async (done: () => boolean) => {
    while (!done()) {
      const chunk = await reader.read();
      if (chunk.done) return;
      stderr += decoder.decode(chunk.value, { stream: true });
    }
  };
  // Stopped only once the info line is out: it is checked too. How the server ends is not what this looks at.
  await readUntil(() => stderr.includes("Ctrl-C stops it"));
  proc.kill("SIGTERM");
  const [stdout] = await Promise.all([new Response(proc.stdout).text(), readUntil(() => false), proc.exited]);
  return { url: stdout.split("\n")[0]!, stderr };
}

test("emulate and proxy stopped by SIGTERM as soon as their URL line is read stop cleanly, exit 0", async () => {
  for (const command of [["emulate"], ["proxy", "--emulate"]]) {
    const home = freshHome();
    const proc = Bun.spawn([BINARY, ...command, "--port", "0"], { env: homeEnv(home), stdin: "ignore", stdout: "pipe", stderr: "ignore" });
    const reader = proc.stdout.getReader();
    const decoder = new TextDecoder();
    let out = "";
    while (!out.includes("\n")) {
      const chunk = await reader.read();
      if (chunk.done) break;
      out += decoder.decode(chunk.value, { stream: true });
    }
    expect(out).toMatch(/^http:\/\/127\.0\.0\.1:\d+/);
    proc.kill("SIGTERM");
    expect({ command, code: await proc.exited }).toEqual({ command, code: 0 });
  }
});

test("emulate and proxy take an IPv6 --host with or without URL brackets and print it bracketed once", async () => {
  for (const command of [["emulate"], ["proxy", "--emulate"]]) {
    for (const host of ["[::1]", "::1"]) {
      const { url, stderr } = await served([...command, "--host", host, "--port", "0"]);
      expect({ command, host, url }).toEqual({ command, host, url: expect.stringMatching(/^http:\/\/\[::1\]:\d+$/) });
      expect(stderr).toContain(`on ${url}`);
      expect(stderr).not.toContain("[[");
    }
  }
});

test("a cost below a millionth of a dollar is printed with its digits, never in exponent notation: cost, cost --tree, sessions show, stats", async () => {
  const home = freshHome();
  // Gemini 2.0 Flash-Lite: $0.075/M input, $0.30/M output (https://ai.google.dev/gemini-api/docs/pricing): 1 + 1 tokens cost $0.000000375.
  const ran = await cachet(["--emulate", "-m", "google/gemini-2.0-flash-lite", "--max-tokens", "1", "--session", "tiny", "hi"], { home });
  expect(ran.code).toBe(0);
  const outputs: string[] = [];
  for (const args of [["cost", "tiny"], ["cost", "tiny", "--tree"], ["sessions", "show", "tiny"], ["stats"], ["stats", "--by", "request"]]) {
    const r = await cachet(args, { home });
    expect({ args, code: r.code }).toEqual({ args, code: 0 });
    outputs.push(r.stdout);
  }
  for (const text of outputs) expect(text).not.toMatch(/\de-\d/);
  const [cost, tree, show] = outputs;
  expect(cost!.split("\n")[0]).toMatch(/ \$0\.000000375 {2}in 1 /);
  expect(tree).toContain("$0.000000075");
  expect(show).toMatch(/ 0\.000000375\n$/);
});
