/**
 * The resident daemon through the compiled binary (README "Resident daemon"):
 * a turn it runs gives what the same turn run in-process gives (stdout,
 * stderr, exit code, ledger), and what it cannot run as a fresh process would,
 * it declines. One daemon for the file (`daemon run` on its own home); the
 * in-process twin runs in another home with CACHET_NO_DAEMON=1. Every wait is
 * on an event: the socket answering, answer text on stdout.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { BINARY, cachet, cleanHomes, events, freshHome, ofType, readUntil, type Run, until, homeEnv } from "./harness.ts";
import { against, type EmulatorProcess, startEmulatorProcess } from "./session-kit.ts";
import { BUILD, VERSION } from "../../src/daemon/identity.ts";
import { encodeFrame, FRAME, FrameReader, type Hello, jsonFrame, PROTOCOL_VERSION, splitU32, text, u32Frame } from "../../src/daemon/protocol.ts";

const home = freshHome();
const twin = freshHome();
/** What the client says when its daemon went away after accepting the command. */
const STOPPED_LINE =
  "cachet: the daemon stopped during this command, so its output here was cut short; what the turn stored is kept (`cachet sessions show` and `cachet export` show it)\n";

const BASE_ENV = homeEnv(home);
let foreground: ReturnType<typeof Bun.spawn> | undefined;

/** `daemon status` parsed; undefined when none runs, or while one restarts (its successor not yet in its place). */
async function status(): Promise<{ pid: number; served: number; busy: boolean } | undefined> {
  const r = await cachet(["daemon", "status"], { home });
  if (r.code !== 0 || r.stdout.startsWith("cachet daemon: restarting (")) return undefined;
  const m = /pid (\d+),.* (\d+) commands? served(, one running now)?/.exec(r.stdout);
  if (!m) throw new Error(`unexpected status line: ${r.stdout}`);
  return { pid: Number(m[1]), served: Number(m[2]), busy: m[3] !== undefined };
}

/** Waits until a daemon answers on the socket (a restarted successor binds it again after its warm-up). */
async function serving(): Promise<{ pid: number; served: number; busy: boolean }> {
  let answered: Awaited<ReturnType<typeof status>>;
  await until("a daemon to answer", async () => (answered = await status()) !== undefined);
  return answered!;
}

/** Session and request ids differ between two homes: replaced by their kind. */
function normalize(out: string): string {
  return out.replace(/\bs_[a-z0-9]+/g, "s_ID").replace(/\br_[a-z0-9]+/g, "r_ID");
}

/** The same command line via the daemon's home and in-process in the twin home. */
async function both(args: string[], options: { stdin?: string | Uint8Array; env?: Record<string, string> } = {}): Promise<[Run, Run]> {
  const viaDaemon = await cachet(args, { home, ...options });
  const inProcess = await cachet(args, { home: twin, ...options, env: { ...options.env, CACHET_NO_DAEMON: "1" } });
  return [viaDaemon, inProcess];
}

/** The ledger's totals (tokens and cost) of a home. */
async function ledgerTotal(h: string): Promise<unknown> {
  const r = await cachet(["stats", "--json"], { home: h });
  expect(r.code).toBe(0);
  const { requests, tokens, costUsd } = (JSON.parse(r.stdout) as { total: { requests: number; tokens: unknown; costUsd: number } }).total;
  return { requests, tokens, costUsd };
}

/** A turn started in the background (stdout and stderr piped), for the tests that act while it runs. */
function background(args: string[], env: Record<string, string>) {
  return Bun.spawn([BINARY, ...args], { env: { ...BASE_ENV, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
}

beforeAll(async () => {
  foreground = Bun.spawn([BINARY, "daemon", "run", "--idle", "10m"], { env: BASE_ENV, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  await serving();
});

afterAll(async () => {
  await cachet(["daemon", "stop"], { home });
  foreground?.kill();
  cleanHomes();
});

describe("a turn through the daemon", () => {
  test("gives the in-process turn's stdout, stderr, exit code and ledger, with stdin the null device", async () => {
    const before = await serving();
    const [d, p] = await both(["--emulate", "--json", "what is a stable prefix"]);
    expect(d.code).toBe(0);
    expect(normalize(d.stdout)).toBe(normalize(p.stdout));
    expect(d.stderr).toBe(p.stderr);
    expect(ofType(events(d.stdout), "done")).toHaveLength(1);
    expect(await ledgerTotal(home)).toEqual(await ledgerTotal(twin));
    expect((await status())!.served).toBe(before.served + 1);
  });

  test("a second turn with -c continues the same session", async () => {
    const before = await serving();
    const [d, p] = await both(["--emulate", "--json", "-c", "and a breakpoint?"]);
    expect(d.code).toBe(0);
    expect(normalize(d.stdout)).toBe(normalize(p.stdout));
    const list = await cachet(["sessions", "--json"], { home });
    expect(list.stdout.trim().split("\n")).toHaveLength(1);
    expect(await ledgerTotal(home)).toEqual(await ledgerTotal(twin));
    expect((await status())!.served).toBe(before.served + 1);
  });

  test.skipIf(!existsSync("/proc/self/fd"))("holds no more open files after six --emulate turns than after one (each turn's emulator state is closed)", async () => {
    const pid = (await status())!.pid;
    const openFiles = () => readdirSync(`/proc/${pid}/fd`).length;
    expect((await cachet(["--emulate", "--session", "fds", "first"], { home })).code).toBe(0);
    const after1 = openFiles();
    for (let i = 0; i < 5; i++) expect((await cachet(["--emulate", "--session", "fds", `turn ${i}`], { home })).code).toBe(0);
    expect((await status())!.pid).toBe(pid);
    expect(openFiles()).toBe(after1);
  });

  test("a store deleted or replaced between turns is opened again, as a new process would", async () => {
    const { rmSync, renameSync } = await import("node:fs");
    const first = await serving();
    const removeStore = (h: string) => {
      for (const suffix of ["", "-wal", "-shm"]) rmSync(`${h}/cachet.db${suffix}`, { force: true });
    };
    removeStore(home);
    removeStore(twin);
    const [d, p] = await both(["--emulate", "--json", "-c", "is anything left?"]);
    expect(d.code).toBe(2);
    expect(d.stderr).toBe(p.stderr);
    // The -c refusal unwound its command: the same daemon serves on.
    const { pid, served } = await serving();
    expect({ pid, served }).toEqual({ pid: first.pid, served: first.served + 1 });
    const [d2, p2] = await both(["--emulate", "--json", "a new start"]);
    expect((await status())!.served).toBe(served + 1);
    expect(d2.code).toBe(0);
    expect(normalize(d2.stdout)).toBe(normalize(p2.stdout));
    // Deleted under the open connection: the turn makes a new store, as a new process would.
    removeStore(home);
    const afterDelete = await cachet(["--emulate", "--json", "after the delete"], { home });
    expect(afterDelete.code).toBe(0);
    expect((await status())!.served).toBe(served + 2);
    expect((await cachet(["sessions", "--json"], { home })).stdout.trim().split("\n")).toHaveLength(1);
    // Replaced by another file (a restored backup): the turn reads the new file, not the one it had open.
    const backup = `${twin}/backup.db`;
    const original = await cachet(["--emulate", "--json", "--session", "restored", "kept in the backup"], { home: twin, env: { CACHET_NO_DAEMON: "1" } });
    const { copyFileSync } = await import("node:fs");
    copyFileSync(`${twin}/cachet.db`, backup);
    renameSync(backup, `${home}/cachet.db`);
    for (const suffix of ["-wal", "-shm"]) rmSync(`${home}/cachet.db${suffix}`, { force: true });
    const before = await serving();
    const restored = await cachet(["--emulate", "--json", "--session", "restored", "still there?"], { home });
    expect((await status())!.served).toBe(before.served + 1);
    expect(restored.code).toBe(0);
    // The session the backup holds is continued (the store it had open would start a new one under the name).
    expect(events(restored.stdout)[0]!.id).toBe(events(original.stdout)[0]!.id as string);
  });

  test("what another process writes between two daemon turns is seen by the next: an in-process turn, a compaction, a removal", async () => {
    const { served } = await serving();
    const say = (words: string) => ["--emulate", "--json", "--session", "memo", words];
    // The daemon turns keep what they read of the session (its log, prefix, ledger rows) with the connection.
    // Long enough that a compaction makes the next request smaller.
    const notes = (n: number) => `Notes ${n}: ${Array.from({ length: 600 }, (_, k) => ["harbor", "lantern", "quartz", "meadow"][(k * 3 + n) % 4]).join(" ")}`;
    for (const words of [notes(1), notes(2)]) {
      const [d, p] = await both(say(words));
      expect({ code: d.code, stdout: normalize(d.stdout) }).toEqual({ code: 0, stdout: normalize(p.stdout) });
    }
    // Each request of the session as the provider counted it: a request that lacked what another process stored shows fewer input tokens.
    const usages = async (h: string) => (JSON.parse((await cachet(["sessions", "show", "memo", "--json"], { home: h })).stdout) as { requests: { usage: unknown }[] }).requests.map((r) => r.usage);
    const alone = async (args: string[]) => {
      for (const h of [home, twin]) expect((await cachet(args, { home: h, env: { CACHET_NO_DAEMON: "1" } })).code).toBe(0);
    };
    // A turn of another process: the next daemon turn sends it along (its prompt, hence its usage, is the in-process one's).
    await alone(say(notes(3)));
    const [d4, p4] = await both(say("what came before?"));
    expect({ code: d4.code, stdout: normalize(d4.stdout) }).toEqual({ code: 0, stdout: normalize(p4.stdout) });
    expect(await usages(home)).toEqual(await usages(twin));
    // A compaction by another process: the next daemon turn sends the summary instead of what it replaced.
    const compacted = await cachet(["compact", "--emulate", "--json", "--session", "memo"], { home });
    expect(compacted.code).toBe(0);
    expect((JSON.parse(compacted.stdout) as { compacted: boolean }).compacted).toBe(true);
    expect((await cachet(["compact", "--emulate", "--json", "--session", "memo"], { home: twin })).code).toBe(0);
    const [d5, p5] = await both(say("and after the compaction?"));
    expect({ code: d5.code, stdout: normalize(d5.stdout) }).toEqual({ code: 0, stdout: normalize(p5.stdout) });
    expect(await usages(home)).toEqual(await usages(twin));
    // Removed by another process: the name starts a new session, with nothing of the old one's log.
    await alone(["sessions", "rm", "memo"]);
    const [d6, p6] = await both(say("a fresh start under the old name"));
    expect({ code: d6.code, stdout: normalize(d6.stdout) }).toEqual({ code: 0, stdout: normalize(p6.stdout) });
    const shown = JSON.parse((await cachet(["sessions", "show", "memo", "--json"], { home })).stdout) as { messages: { message: { role: string } }[] };
    expect(shown.messages.map((m) => m.message.role)).toEqual(["user", "assistant"]);
    expect(await usages(home)).toEqual(await usages(twin));
    expect((await status())!.served).toBe(served + 5);
  });

  describe("a turn that loads a third-party plugin runs in its client's own process", () => {
    /**
     * A plugin that says on stderr, from its module's top level, the pid of the process that imported it and how
     * many times that process imported it (module state a second import in one process would carry over).
     */
    const telling = `${twin}/telling.mjs`;
    const TELLING = `globalThis.tellings = (globalThis.tellings ?? 0) + 1;\nconsole.error(\`telling: pid \${process.pid}, import \${globalThis.tellings}\`);\nexport default { name: "telling", api: 1, setup() {} };\n`;

    /** Runs `args` in the daemon's home with `env`, in a process whose pid is known; its code, stdout and stderr. */
    async function known(args: string[], env: Record<string, string> = {}): Promise<Run & { pid: number }> {
      const proc = background(args, env);
      const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      return { code, stdout, stderr, pid: proc.pid };
    }

    test("CACHET_PLUGINS: declined (said with --debug) before the daemon starts it; the plugin's console output is the client's, from the client's pid, imported once; the daemon serves nothing", async () => {
      await Bun.write(telling, TELLING);
      const before = await serving();
      for (const path of [telling, "telling.mjs"]) {
        // A relative path is the client's working directory's, as in-process.
        const r = Bun.spawn([BINARY, "--emulate", "--debug", "with a plugin"], { cwd: twin, env: { ...BASE_ENV, CACHET_PLUGINS: path }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
        const [stdout, stderr, code] = await Promise.all([new Response(r.stdout).text(), new Response(r.stderr).text(), r.exited]);
        expect(code).toBe(0);
        expect(stdout).not.toBe("");
        expect(stderr).toContain(`cachet: the daemon declined this command (the turn loads a third-party plugin (${telling}): it runs in its own process); running it in this process\n`);
        expect(stderr).toContain(`telling: pid ${r.pid}, import 1\n`);
      }
      expect(await serving()).toMatchObject({ pid: before.pid, served: before.served });
      // Without the plugin the daemon serves the turn, which does not see it.
      const after = await known(["--emulate", "without it"]);
      expect(after.code).toBe(0);
      expect(after.stderr).toBe("");
      expect((await status())!.served).toBe(before.served + 1);
    });

    test("config plugins = [...] and [[installed_plugins]]: declined, run in the client's process, the same answer as in-process", async () => {
      await Bun.write(telling, TELLING);
      const before = await serving();
      const configs = [
        `plugins = ["${telling}"]\n`,
        `[[installed_plugins]]\nname = "telling"\nversion = "1.0.0"\nsource = "${telling}"\nintegrity = "sha512-x"\napi = "1"\nfile = "${telling}"\n`,
      ];
      try {
        for (const config of configs) {
          await Promise.all([Bun.write(`${home}/config.toml`, config), Bun.write(`${twin}/config.toml`, config)]);
          const d = await known(["--emulate", "--json", "--verbose", "with a configured plugin"]);
          const p = await cachet(["--emulate", "--json", "--verbose", "with a configured plugin"], { home: twin, env: { CACHET_NO_DAEMON: "1" } });
          expect(d.code).toBe(0);
          expect(d.stderr).toContain(`the daemon declined this command (the turn loads a third-party plugin (${telling}): it runs in its own process)`);
          expect(d.stderr).toContain(`telling: pid ${d.pid}, import 1\n`);
          expect(normalize(d.stdout)).toBe(normalize(p.stdout));
        }
      } finally {
        await Promise.all([Bun.file(`${home}/config.toml`).delete(), Bun.file(`${twin}/config.toml`).delete()]);
      }
      expect(await serving()).toMatchObject({ pid: before.pid, served: before.served });
    });

    test("a config that cannot be parsed: declined, and the client reports it as in-process (exit 3)", async () => {
      const before = await serving();
      const config = "plugins = [\n";
      await Promise.all([Bun.write(`${home}/config.toml`, config), Bun.write(`${twin}/config.toml`, config)]);
      try {
        const [d, p] = await both(["--emulate", "a broken config"]);
        expect(p.code).toBe(3);
        expect({ code: d.code, stderr: d.stderr.replaceAll(home, "HOME") }).toEqual({ code: p.code, stderr: p.stderr.replaceAll(twin, "HOME") });
        expect(d.stderr).toContain(`malformed TOML in ${home}/config.toml`);
      } finally {
        await Promise.all([Bun.file(`${home}/config.toml`).delete(), Bun.file(`${twin}/config.toml`).delete()]);
      }
      expect(await serving()).toMatchObject({ pid: before.pid, served: before.served });
    });

    test("a plugin calling process.exit(7) in setup: refused, the plugin fails to load, as in-process, and the daemon runs on and serves the next turn", async () => {
      const plugin = `${twin}/exits.mjs`;
      await Bun.write(plugin, `export default { name: "exits", api: 1, setup() { process.exit(7); } };\n`);
      const before = await serving();
      const [d, p] = await both(["--emulate", "an exiting plugin"], { env: { CACHET_PLUGINS: plugin } });
      expect(p.code).toBe(0);
      expect(p.stderr).toContain('failed to load: exits: setup() called process.exit(7); a plugin must throw an error instead of ending the process');
      expect(d).toEqual(p);
      expect(await serving()).toMatchObject({ pid: before.pid, served: before.served });
      expect((await cachet(["--emulate", "after the exit"], { home })).code).toBe(0);
      expect(await serving()).toMatchObject({ pid: before.pid, served: before.served + 1 });
    });

    test("an error nothing caught (a plugin's rejected promise): stderr and exit 1 as in-process, the daemon untouched", async () => {
      const plugin = `${twin}/boom.mjs`;
      await Bun.write(plugin, `export default { name: "boom", api: 1, setup() { void Promise.reject(new Error("boom in a plugin")); } };\n`);
      const before = await serving();
      const [d, p] = await both(["--emulate", "hello"], { env: { CACHET_PLUGINS: plugin } });
      expect(p.code).toBe(1);
      expect(d.code).toBe(1);
      expect(p.stderr).toContain("error: boom in a plugin");
      expect(d.stderr).toContain("error: boom in a plugin");
      expect(await serving()).toMatchObject({ pid: before.pid, served: before.served });
    });
  });

  test("turns with only the built-in plugins share their host; a config's unknown provider is refused as in-process", async () => {
    const { pid, served } = await serving();
    for (const words of ["first with the built-ins", "second with the built-ins"]) {
      const [d, p] = await both(["--emulate", "--json", words]);
      expect({ code: d.code, stdout: normalize(d.stdout), stderr: d.stderr }).toEqual({ code: 0, stdout: normalize(p.stdout), stderr: p.stderr });
    }
    expect((await status())!.served).toBe(served + 2);
    const config = "[providers.nosuch]\nbase_url = \"http://127.0.0.1:1\"\n";
    await Promise.all([Bun.write(`${home}/config.toml`, config), Bun.write(`${twin}/config.toml`, config)]);
    try {
      const [d, p] = await both(["--emulate", "unknown provider table"]);
      expect(p.code).toBe(3);
      expect(d.code).toBe(p.code);
      expect(d.stderr.replaceAll(home, "HOME")).toBe(p.stderr.replaceAll(twin, "HOME"));
      expect(d.stderr).toContain('invalid config key "providers.nosuch"');
    } finally {
      await Promise.all([Bun.file(`${home}/config.toml`).delete(), Bun.file(`${twin}/config.toml`).delete()]);
    }
    // The refusal unwound its command: the daemon that ran it serves on.
    expect(await status()).toEqual({ pid, served: served + 3, busy: false });
  });
  test("the SDK client kept between turns is one built with the turn's environment: OPENAI_CUSTOM_HEADERS reaches the request when set, and only then", async () => {
    const answer = JSON.stringify({ id: "c", object: "chat.completion", created: 0, model: "gpt-5", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } });
    const teams: (string | null)[] = [];
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(request) {
        teams.push(request.headers.get("x-team"));
        return new Response(answer, { headers: { "content-type": "application/json" } });
      },
    });
    try {
      const { served } = await serving();
      const turn = (prompt: string, env: Record<string, string>) => cachet(["--no-stream", "-m", "openai/gpt-5", "--base-url", `http://127.0.0.1:${server.port}/v1`, prompt], { home, env: { OPENAI_API_KEY: "test", ...env } });
      for (const [prompt, env] of [["no header", {}], ["blue team", { OPENAI_CUSTOM_HEADERS: "x-team: blue" }], ["no header again", {}], ["red team", { OPENAI_CUSTOM_HEADERS: "x-team: red" }]] as const) {
        const r = await turn(prompt, env);
        expect(r.code).toBe(0);
        expect(r.stdout).toBe("ok\n");
      }
      expect(teams).toEqual([null, "blue", null, "red"]);
      expect((await status())!.served).toBe(served + 4);
    } finally {
      server.stop(true);
    }
  });

  test("a few MB of piped stdin arrive whole", async () => {
    const before = await serving();
    const input = Array.from({ length: 450_000 }, (_, i) => `w${i % 997}`).join(" ");
    expect(input.length).toBeGreaterThan(2_000_000);
    const [d, p] = await both(["--emulate", "--json", "-m", "google/gemini-2.5-flash", "--no-store", "-"], { stdin: input });
    expect(p.code).toBe(0);
    expect(d.code).toBe(0);
    const usage = (r: Run) => ofType(events(r.stdout), "usage")[0]!.input;
    expect(usage(d)).toBeGreaterThan(100_000);
    expect(usage(d)).toBe(usage(p));
    expect((await status())!.served).toBe(before.served + 1);
  });

  test("stdin redirected from a file or a directory: the in-process answer and error", async () => {
    const { served } = await serving();
    const file = `${twin}/input.txt`;
    await Bun.write(file, "notes from a file\n");
    const shell = async (h: string, redirect: string, env: Record<string, string> = {}) => {
      const proc = Bun.spawn(["bash", "-c", `"${BINARY}" --emulate --json -m openai/gpt-5 summarise ${redirect}`], { env: { ...BASE_ENV, HOME: h, CACHET_HOME: h, ...env }, stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      return { stdout, stderr, code };
    };
    const fromFile = await shell(home, `< "${file}"`);
    expect((await status())!.served).toBe(served + 1);
    const fromFileAlone = await shell(twin, `< "${file}"`, { CACHET_NO_DAEMON: "1" });
    expect(fromFile.code).toBe(0);
    expect(fromFile.stderr).toBe(fromFileAlone.stderr);
    expect(normalize(fromFile.stdout)).toBe(normalize(fromFileAlone.stdout));
    const fromDir = await shell(home, `< "${twin}"`);
    const fromDirAlone = await shell(twin, `< "${twin}"`, { CACHET_NO_DAEMON: "1" });
    expect(fromDir.code).toBe(3);
    expect(fromDir.stderr).toBe(fromDirAlone.stderr);
    expect(fromDir.stderr).toContain("stdin: is a directory");
    expect(normalize(fromDir.stdout)).toBe(normalize(fromDirAlone.stdout));
  });

  test("a redirected file shared with the shell: read from the shell's offset, which the turn advances, as in-process", async () => {
    const { served } = await serving();
    const file = `${twin}/lines.txt`;
    await Bun.write(file, "header line\nbody one\nbody two\n");
    // `read` takes the first line; the turn gets the rest; `cat` then finds the file read to its end.
    const script = `{ read -r header; "${BINARY}" --emulate --json summarise; echo "left: [$(cat)]"; } < "${file}"`;
    const shell = async (h: string, env: Record<string, string> = {}) => {
      const proc = Bun.spawn(["bash", "-c", script], { env: { ...BASE_ENV, HOME: h, CACHET_HOME: h, ...env }, stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      return { stdout, stderr, code };
    };
    const sent = async (h: string) => {
      const r = await cachet(["export"], { home: h });
      return events(r.stdout).filter((e) => e.type === "message").map((e) => (e as unknown as { message: { content: { text?: string }[] } }).message.content[0]?.text)[0];
    };
    const viaDaemon = await shell(home);
    expect((await status())!.served).toBe(served + 1);
    const alone = await shell(twin, { CACHET_NO_DAEMON: "1" });
    expect(alone.code).toBe(0);
    expect(alone.stdout).toEndWith("left: []\n");
    expect(viaDaemon.code).toBe(0);
    expect(viaDaemon.stderr).toBe(alone.stderr);
    expect(normalize(viaDaemon.stdout)).toBe(normalize(alone.stdout));
    expect(await sent(home)).toBe("body one\nbody two\n\nsummarise");
    expect(await sent(twin)).toBe("body one\nbody two\n\nsummarise");
  });

  test("a bad flag gives the in-process error and exit 2, and the same daemon serves the next turn", async () => {
    const before = await serving();
    const [d, p] = await both(["--emulate", "--max-tokens", "lots", "hi"]);
    expect(d.code).toBe(2);
    expect(d.stderr).toBe(p.stderr);
    expect(d.stderr).toContain("--max-tokens lots");
    expect(await status()).toEqual({ pid: before.pid, served: before.served + 1, busy: false });
    const [d2, p2] = await both(["--emulate", "--json", "hello again"]);
    expect(d2.code).toBe(0);
    expect(normalize(d2.stdout)).toBe(normalize(p2.stdout));
    expect(await status()).toEqual({ pid: before.pid, served: before.served + 2, busy: false });
  });

  test("a reader closing stdout early (EPIPE): the turn is stored and the exit is 0", async () => {
    const { served } = await serving();
    const before = (await ledgerTotal(home)) as { requests: number };
    const script = `"${BINARY}" --emulate "tell me everything" | head -c1 >/dev/null; echo "exit \${PIPESTATUS[0]}" >&2`;
    const proc = Bun.spawn(["bash", "-c", script], { env: { ...BASE_ENV, CACHET_EMULATOR_ANSWER_TOKENS: "6000" }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const stderr = await new Response(proc.stderr).text();
    await proc.exited;
    expect(stderr).toBe("exit 0\n");
    expect(((await ledgerTotal(home)) as { requests: number }).requests).toBe(before.requests + 1);
    expect((await status())!.served).toBe(served + 1);
  });
});

describe("a turn that fails once it has unwound: the daemon that ran it serves on", () => {
  const failures: [string, string[], Record<string, string>, number][] = [
    ["a provider's 429 (exit 4)", ["--emulate", "--retries", "0", "rate limited"], { CACHET_EMULATOR_FAULT: "429" }, 4],
    ["a provider's 429 under --json (exit 4, the error line on stdout)", ["--emulate", "--json", "--retries", "0", "rate limited"], { CACHET_EMULATOR_FAULT: "429" }, 4],
    ["an unknown flag (exit 2)", ["--emulate", "--bogus-flag", "hi"], {}, 2],
    ["a spending limit the call could cross (exit 6)", ["--emulate", "--json", "--max-cost", "0.000001", "too dear"], {}, 6],
  ];
  for (const [what, args, env, code] of failures) {
    test(`${what}: the in-process stdout, stderr and exit code; the same daemon serves the next turn, with its in-process answer`, async () => {
      const before = await serving();
      const [d, p] = await both(args, { env });
      expect(p.code).toBe(code);
      expect({ code: d.code, stdout: normalize(d.stdout), stderr: d.stderr }).toEqual({ code: p.code, stdout: normalize(p.stdout), stderr: p.stderr });
      expect(await status()).toEqual({ pid: before.pid, served: before.served + 1, busy: false });
      const [d2, p2] = await both(["--emulate", "--json", `after ${what}`]);
      expect({ code: d2.code, stdout: normalize(d2.stdout), stderr: d2.stderr }).toEqual({ code: 0, stdout: normalize(p2.stdout), stderr: p2.stderr });
      expect(await status()).toEqual({ pid: before.pid, served: before.served + 2, busy: false });
    });
  }

  test("nothing of a failed --verbose or --debug --json turn is left for the next: a plain failure prints no stack, a plain turn plain text", async () => {
    const before = await serving();
    const fault = { CACHET_EMULATOR_FAULT: "429" };
    for (const loud of ["--verbose", "--debug"]) {
      const [d, p] = await both(["--emulate", loud, "--json", "--retries", "0", "loud and refused"], { env: fault });
      expect({ code: d.code, stdout: normalize(d.stdout), stderr: d.stderr }).toEqual({ code: 4, stdout: normalize(p.stdout), stderr: p.stderr });
      const [quietFail, quietFailAlone] = await both(["--emulate", "--retries", "0", "plainly refused"], { env: fault });
      expect(quietFail).toEqual(quietFailAlone);
      expect(quietFail.code).toBe(4);
      expect(quietFail.stderr.split("\n")).toHaveLength(3);
      const [next, alone] = await both(["--emulate", "plain after it"]);
      expect({ code: next.code, stdout: normalize(next.stdout), stderr: next.stderr }).toEqual({ code: 0, stdout: normalize(alone.stdout), stderr: "" });
      expect(next.stdout).not.toStartWith("{");
    }
    expect(await status()).toEqual({ pid: before.pid, served: before.served + 6, busy: false });
  });
});

describe("signals, a busy daemon and a daemon that dies", () => {
  test("SIGINT mid-answer is forwarded: the in-process line and exit 130; a second turn meanwhile is declined as busy and runs in-process", async () => {
    await serving();
    const stalled = background(["--emulate", "--json", "--session", "stall", "stream then stall"], { CACHET_EMULATOR_FAULT: "stall" });
    await readUntil(stalled.stdout, '"type":"text"');
    expect((await status())!.busy).toBe(true);
    // Busy: declined (said with --debug) and run in this process, with the result it has alone.
    const busy = await cachet(["--emulate", "--json", "--debug", "while busy"], { home });
    const alone = await cachet(["--emulate", "--json", "--debug", "while busy"], { home: twin, env: { CACHET_NO_DAEMON: "1" } });
    expect(busy.code).toBe(0);
    expect(busy.stderr).toContain("the daemon declined this command (the daemon is running another command)");
    expect(normalize(busy.stdout)).toBe(normalize(alone.stdout));
    stalled.kill("SIGINT");
    const [code, stderr] = await Promise.all([stalled.exited, new Response(stalled.stderr).text()]);
    expect(code).toBe(130);
    expect(stderr).toStartWith("cachet: interrupted by SIGINT");
    expect(stderr).toContain("interrupted by SIGINT mid-answer");
  });

  test("SIGTERM mid-answer gives 143, and SIGHUP (which a turn does not handle) ends the client by that signal, as in-process", async () => {
    for (const [signal, env, session] of [["SIGTERM", {}, "t"], ["SIGHUP", {}, "h"], ["SIGHUP", { CACHET_NO_DAEMON: "1" }, "h-alone"]] as const) {
      await serving();
      const stalled = background(["--emulate", "--json", "--session", `stall-${session}`, "stream then stall"], { CACHET_EMULATOR_FAULT: "stall", ...env });
      await readUntil(stalled.stdout, '"type":"text"');
      stalled.kill(signal);
      const [code, stderr] = await Promise.all([stalled.exited, new Response(stalled.stderr).text()]);
      if (signal === "SIGTERM") {
        expect(code).toBe(143);
        expect(stderr).toStartWith("cachet: interrupted by SIGTERM");
      } else {
        expect(stalled.signalCode).toBe("SIGHUP");
        expect(stderr).toBe("");
      }
    }
  });

  /**
   * A client made by hand, whose stdout acknowledgements the test holds: it runs a turn, waits until the answer is
   * stored, sends SIGINT, and answers the daemon's STDOUT_SYNC as a client whose reader is reading (it acknowledges
   * every STDOUT frame first) or stopped (it acknowledges none). Resolves with the exit and the stderr it got.
   */
  async function signalledOnceStored(session: string, reading: boolean): Promise<{ exit: { code: number }; stderr: string }> {
    const reader = new FrameReader();
    const held: number[] = [];
    let stderr = "";
    let settle!: (r: { exit: { code: number }; stderr: string }) => void;
    const done = new Promise<{ exit: { code: number }; stderr: string }>((resolve) => (settle = resolve));
    const socket = await Bun.connect({
      unix: `${home}/daemon.sock`,
      socket: {
        data(s, chunk) {
          for (const frame of reader.push(chunk)) {
            if (frame.type === FRAME.STDOUT) held.push(splitU32(frame.payload).n);
            else if (frame.type === FRAME.STDERR) stderr += text(frame.payload);
            else if (frame.type === FRAME.STDOUT_SYNC) {
              if (reading) for (const seq of held.splice(0)) s.write(u32Frame(FRAME.STDOUT_ACK, seq));
              s.write(u32Frame(FRAME.STDOUT_SYNCED, splitU32(frame.payload).n));
            } else if (frame.type === FRAME.EXIT) settle({ exit: JSON.parse(text(frame.payload)) as { code: number }, stderr });
          }
        },
        close: () => settle({ exit: { code: -1 }, stderr }),
      },
    });
    const hello = { protocol: PROTOCOL_VERSION, version: VERSION, build: BUILD, argv: ["--emulate", "--session", session, "answer once stored"], env: BASE_ENV, cwd: home, umask: 0o022, uid: process.getuid!(), pid: process.pid, terminal: [false, false, false] };
    socket.write(jsonFrame(FRAME.HELLO, hello));
    socket.write(encodeFrame(FRAME.STDIN_KIND, "null"));
    // The answer is stored before the command waits for stdout to take it (src/run/command.ts answerWritten).
    await until("the answer to be stored", async () => (await cachet(["export", session], { home })).stdout.includes('"role":"assistant"'));
    expect(held.length).toBeGreaterThan(0);
    socket.write(encodeFrame(FRAME.SIGNAL, "SIGINT"));
    const result = await done;
    socket.end();
    return result;
  }

  test("SIGINT once the answer is stored, its stdout frames in flight: taken by a reader still reading, exit 0 as in-process; held by a stopped one, the interrupted line and 130", async () => {
    await serving();
    const taken = await signalledOnceStored("sync-reading", true);
    expect(taken).toEqual({ exit: expect.objectContaining({ code: 0 }), stderr: "" });
    await serving();
    const stuck = await signalledOnceStored("sync-stopped", false);
    expect(stuck.exit.code).toBe(130);
    expect(stuck.stderr).toContain("cachet: interrupted by SIGINT while writing the answer to stdout, which had not taken all of it: the whole answer is stored");
  });

  test("a session busy with a turn the daemon runs: another process waiting for it names the turn's client (the process the user sees), not the daemon", async () => {
    const { pid } = await serving();
    const holder = background(["--emulate", "--json", "--session", "held", "stream then stall"], { CACHET_EMULATOR_FAULT: "stall" });
    await readUntil(holder.stdout, '"type":"text"');
    expect((await status())!.busy).toBe(true);
    const waiter = background(["--emulate", "--verbose", "--session", "held", "my turn"], { CACHET_NO_DAEMON: "1" });
    const reader = waiter.stderr.getReader();
    let said = "";
    while (!said.includes("waiting for it")) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`the waiting turn ended first: ${said}`);
      said += new TextDecoder().decode(chunk.value);
    }
    waiter.kill("SIGINT");
    holder.kill("SIGINT");
    expect([await waiter.exited, await holder.exited]).toEqual([130, 130]);
    expect(said).toMatch(/session s_\w+ is busy \(process (\d+) on /);
    const named = Number(/is busy \(process (\d+) on /.exec(said)![1]);
    expect({ named, client: holder.pid, daemon: pid }).toEqual({ named: holder.pid, client: holder.pid, daemon: pid });
  });

  test("the daemon killed mid-command: one line, exit 1", async () => {
    const { pid } = await serving();
    const stalled = background(["--emulate", "--json", "--session", "stall2", "stream then stall"], { CACHET_EMULATOR_FAULT: "stall" });
    await readUntil(stalled.stdout, '"type":"text"');
    process.kill(pid, "SIGKILL");
    const [code, stderr] = await Promise.all([stalled.exited, new Response(stalled.stderr).text()]);
    expect(code).toBe(1);
    expect(stderr).toBe(STOPPED_LINE);
    // A dead server's socket file is stale: the next turn runs in-process.
    const after = await cachet(["--emulate", "--json", "after the crash"], { home });
    expect(after.code).toBe(0);
  });
});

describe("declining and the daemon command", () => {
  test("start, status and stop", async () => {
    const start = await cachet(["daemon", "start"], { home });
    expect(start.code).toBe(0);
    expect(start.stderr).toMatch(/^\[info\] cachet daemon: running \(pid \d+, socket .*daemon\.sock\)\n$/);
    const again = await cachet(["daemon", "start"], { home });
    expect(again.stderr).toMatch(/^\[info\] cachet daemon: already running \(pid \d+/);
    expect((await serving()).busy).toBe(false);
    const stop = await cachet(["daemon", "stop"], { home });
    expect(stop.stderr).toMatch(/^\[info\] cachet daemon: stopped \(pid \d+\)\n$/);
    const none = await cachet(["daemon", "status"], { home });
    expect(none.code).toBe(1);
    expect(none.stdout).toBe("cachet daemon: not running\n");
    expect((await cachet(["daemon", "stop"], { home })).stderr).toBe("[info] cachet daemon: not running\n");
    expect((await cachet(["daemon", "start"], { home })).code).toBe(0);
  });

  test("--idle: the daemon exits after that long without a command and removes its socket; a bad duration, or one under 1s, is exit 2", async () => {
    const idleHome = freshHome();
    const proc = Bun.spawn([BINARY, "daemon", "run", "--idle", "1s"], { env: { ...BASE_ENV, HOME: idleHome, CACHET_HOME: idleHome }, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    expect(stderr).toContain(`cachet daemon: running (pid ${proc.pid}, socket ${idleHome}/daemon.sock)`);
    expect(code).toBe(0);
    // Bun.file().exists() answers false for a socket: node:fs's existsSync stats it.
    expect((await import("node:fs")).existsSync(`${idleHome}/daemon.sock`)).toBe(false);
    expect((await cachet(["daemon", "status"], { home: idleHome })).code).toBe(1);
    const bad = await cachet(["daemon", "start", "--idle", "soon"], { home: idleHome });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--idle soon: expected a duration");
    // Below the minimum: refused before anything starts, for start and run alike, naming the minimum.
    for (const [action, idle] of [["start", "1ms"], ["start", "0s"], ["run", "999ms"]]) {
      const short = await cachet(["daemon", action!, "--idle", idle!], { home: idleHome });
      expect(short).toEqual({ code: 2, stdout: "", stderr: `cachet: --idle ${idle}: the daemon's idle time is at least 1s\n  hint: use a duration such as 30m, 2h or 90s\n` });
    }
    expect((await cachet(["daemon", "status"], { home: idleHome })).code).toBe(1);
  });

  test("a relative CACHET_HOME: served from the directory it names there, also by the daemon that takes over after a restart", async () => {
    const base = freshHome();
    const options = { home: base, cwd: base, env: { CACHET_HOME: "rel" } };
    expect((await cachet(["daemon", "start"], options)).stderr).toContain(`socket rel/daemon.sock`);
    const statusOf = async () => (await cachet(["daemon", "status"], options)).stdout;
    expect(await statusOf()).toContain("0 commands served");
    expect((await cachet(["--emulate", "hello"], options)).code).toBe(0);
    expect(await statusOf()).toContain("1 command served");
    // A refused turn unwound: the same daemon serves on.
    expect((await cachet(["--emulate", "--max-tokens", "0", "hello"], options)).code).toBe(2);
    expect(await statusOf()).toContain("2 commands served");
    // A turn interrupted mid-answer ends the daemon's process its own way: a fresh daemon takes over.
    const stalled = Bun.spawn([BINARY, "--emulate", "--idle-timeout", "0", "stream then stall"], { cwd: base, env: { ...BASE_ENV, HOME: base, CACHET_HOME: "rel", CACHET_EMULATOR_FAULT: "stall" }, stdin: "ignore", stdout: "pipe", stderr: "ignore" });
    await readUntil(stalled.stdout, " ");
    stalled.kill("SIGINT");
    expect(await stalled.exited).toBe(130);
    await until("the successor", async () => (await statusOf()).includes("0 commands served"));
    expect((await cachet(["--emulate", "-c", "again"], options)).code).toBe(0);
    expect(await statusOf()).toContain("1 command served");
    expect((await cachet(["daemon", "stop"], options)).code).toBe(0);
  });

  test("a socket path over the platform's limit: start refuses with exit 2", async () => {
    const long = `${freshHome()}/${"d".repeat(120)}`;
    const r = await cachet(["daemon", "start"], { home: long });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("longer than this platform's limit");
  });

  test("a variable the runtime reads only at start that differs from the daemon's: declined, run in-process", async () => {
    const { served } = await serving();
    const args = ["--emulate", "--json", "--verbose", "behind a proxy"];
    const env = { https_proxy: "http://127.0.0.1:9" };
    const d = await cachet(args, { home, env });
    const p = await cachet(args, { home: twin, env: { ...env, CACHET_NO_DAEMON: "1" } });
    expect(d.code).toBe(0);
    expect(d.stderr).toContain("the daemon declined this command (https_proxy differs from the daemon's (read once, when a process starts)); running it in this process");
    expect(normalize(d.stdout)).toBe(normalize(p.stdout));
    expect((await status())!.served).toBe(served);
  });

  test("a flag naming a file of the client's own process (`--tools <(…)`, `-s @/dev/stdin`, /proc/self/fd/N): run in the client, as in-process, the reason said under --verbose", async () => {
    const { served } = await serving();
    const dir = freshHome();
    writeFileSync(join(dir, "tools.json"), JSON.stringify([{ name: "lookup", description: "Look a word up", parameters: { type: "object", properties: { word: { type: "string" } } } }]));
    writeFileSync(join(dir, "system.txt"), "Answer in one line.\n");
    const forms = [
      `exec "$1" --emulate --json --verbose --tools <(cat "$2/tools.json") "use the tool"`,
      `exec "$1" --emulate --json --verbose -s @/dev/stdin "a system prompt from stdin" < "$2/system.txt"`,
      `exec "$1" --emulate --json --verbose --tools /proc/self/fd/3 "use the tool" 3< "$2/tools.json"`,
    ];
    for (const form of forms) {
      const runIn = async (h: string, env: Record<string, string>) => {
        const r = Bun.spawn(["bash", "-c", form, "bash", BINARY, dir], { env: { ...homeEnv(h), ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
        const [stdout, stderr, code] = await Promise.all([new Response(r.stdout).text(), new Response(r.stderr).text(), r.exited]);
        return { code, stdout, stderr };
      };
      const d = await runIn(home, {});
      const p = await runIn(twin, { CACHET_NO_DAEMON: "1" });
      expect({ form, code: d.code }).toEqual({ form, code: 0 });
      expect(d.stderr).toContain("cachet: the daemon cannot take this command (a word names a file of the client's own process (/dev/fd/…, /dev/stdin, /proc/self/…), which the daemon would open as its own); running it in this process\n");
      expect(normalize(d.stdout)).toBe(normalize(p.stdout));
    }
    expect((await status())!.served).toBe(served);
  });

  test("a flag's file that leads to a file of the client's own process indirectly (a symlink to /dev/stdin, `stdin` run in /dev, /dev/./fd/N): declined, run in the client, which sends its own stdin or file, as in-process", async () => {
    const { served } = await serving();
    const dir = freshHome();
    const tools = [{ name: "lookup", description: "Look a word up", parameters: { type: "object", properties: { word: { type: "string" } } } }];
    writeFileSync(join(dir, "tools.json"), JSON.stringify(tools));
    writeFileSync(join(dir, "system.txt"), "Answer in one line.\n");
    symlinkSync("/dev/stdin", join(dir, "piped"));
    // One emulator per home: each sees the same requests in the same order, so both answer alike (its prompt cache included).
    const emulators = [await startEmulatorProcess(freshHome()), await startEmulatorProcess(freshHome())];
    try {
      const forms = [
        { form: `cd "$2" && printf 'Piped, not from a file.\\n' | "$1" "\${@:3}" -s @piped "a system prompt through a link"`, reason: "--system @piped leads to /dev/stdin", system: "Piped, not from a file.\n", prompt: "a system prompt through a link" },
        { form: `cd /dev && exec "$1" "\${@:3}" -s @stdin "a system prompt from stdin in /dev" < "$2/system.txt"`, reason: "--system @stdin leads to /dev/stdin", system: "Answer in one line.\n", prompt: "a system prompt from stdin in /dev" },
        { form: `exec "$1" "\${@:3}" --tools /dev/./fd/3 "use the tool" 3< "$2/tools.json"`, reason: "--tools /dev/./fd/3 leads to /dev/fd/3", tools: ["lookup"], prompt: "use the tool" },
      ];
      for (const { form, reason, system, tools: toolNames, prompt } of forms) {
        const runIn = async (h: string, emulator: EmulatorProcess, env: Record<string, string>) => {
          const target = against(emulator, "anthropic/claude-sonnet-4-6");
          const before = await ledgerTotal(h);
          const r = Bun.spawn(["bash", "-c", form, "bash", BINARY, dir, "--json", "--verbose", ...target.args], { env: { ...homeEnv(h), ...target.env, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
          const [stdout, stderr, code] = await Promise.all([new Response(r.stdout).text(), new Response(r.stderr).text(), r.exited]);
          const bodies = await emulator.bodies();
          return { code, stdout, stderr, body: bodies[bodies.length - 1]!, before, after: await ledgerTotal(h) };
        };
        const d = await runIn(home, emulators[0]!, {});
        const p = await runIn(twin, emulators[1]!, { CACHET_NO_DAEMON: "1" });
        expect({ form, code: d.code, stderr: d.stderr.split("\n").filter((l) => !l.includes("declined")).join("\n") }).toEqual({ form, code: 0, stderr: p.stderr });
        expect(d.stderr).toContain(`cachet: the daemon declined this command (${reason}, a file of the client's own process, which the daemon would open as its own); running it in this process\n`);
        expect(normalize(d.stdout)).toBe(normalize(p.stdout));
        // What reached the provider is the client's stdin or fd: the system prompt piped or redirected, the tools on fd 3.
        for (const { body } of [d, p]) {
          expect(body.system?.map((block: { text: string }) => block.text)).toEqual(system === undefined ? undefined : [system]);
          expect(body.tools?.map((tool: { name: string }) => tool.name)).toEqual(toolNames);
          expect(body.messages.at(-1).content.map((block: { text: string }) => block.text)).toEqual([prompt]);
        }
        // Each home's ledger took the one request, at the cost the turn printed (its totals differ by float rounding).
        for (const r of [d, p]) {
          const [b, a] = [r.before as { requests: number; costUsd: number }, r.after as { requests: number; costUsd: number }];
          const printed = ofType(events(r.stdout), "cost") as unknown as { cost_usd: number }[];
          expect(printed).toHaveLength(1);
          expect(a.requests - b.requests).toBe(1);
          expect(a.costUsd - b.costUsd).toBeCloseTo(printed[0]!.cost_usd, 12);
        }
      }
    } finally {
      for (const emulator of emulators) emulator.stop();
    }
    expect((await status())!.served).toBe(served);
  });

  test("a flag's file that is a FIFO: declined, read by the client's own process, and an interrupted turn leaves no reader to take the next writer's data", async () => {
    const { served } = await serving();
    const dir = freshHome();
    const fifo = join(dir, "p1");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    const reason = "cachet: the daemon declined this command (--system @p1 is a FIFO, a stream that the process opening it reads, which the daemon would hold open past an interrupted turn); running it in this process\n";
    const emulator = await startEmulatorProcess(freshHome());
    const target = against(emulator, "anthropic/claude-sonnet-4-6");
    const turn = () =>
      Bun.spawn([BINARY, "--verbose", "--json", ...target.args, "-s", "@p1", "hi"], { cwd: dir, env: { ...BASE_ENV, ...target.env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    let writer: ReturnType<typeof Bun.spawn> | undefined;
    try {
      // Interrupted while it waits for a writer: its process ends, and with it its open of the FIFO.
      const interrupted = turn();
      await readUntil(interrupted.stderr, reason);
      interrupted.kill("SIGINT");
      await interrupted.exited;
      // 130 once the turn's handler is in place, the signal's own end before it: either way the reader is gone.
      expect(interrupted.exitCode === 130 || interrupted.signalCode === "SIGINT").toBe(true);
      // The next writer's text reaches the next turn, whole.
      writer = Bun.spawn(["sh", "-c", 'printf "Answer from the FIFO.\\n" > "$1"', "sh", fifo], { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
      const next = turn();
      const [stdout, stderr, code] = await Promise.all([new Response(next.stdout).text(), new Response(next.stderr).text(), next.exited]);
      expect({ code, stderr: stderr.includes(reason), answered: ofType(events(stdout), "cost").length }).toEqual({ code: 0, stderr: true, answered: 1 });
      expect(await writer.exited).toBe(0);
      const bodies = await emulator.bodies();
      expect(bodies).toHaveLength(1);
      expect(bodies[0]!.system?.map((block: { text: string }) => block.text)).toEqual(["Answer from the FIFO.\n"]);
    } finally {
      writer?.kill();
      emulator.stop();
    }
    expect((await status())!.served).toBe(served);
  });

  test("a turn from a working directory removed since: run in its own process, the reason said under --verbose as a decline is", async () => {
    const { served } = await serving();
    const gone = join(freshHome(), "gone");
    mkdirSync(gone);
    // The shell enters the directory and removes it: the turn starts where no directory is any more.
    const r = Bun.spawn(["sh", "-c", 'cd "$1" && rmdir "$1" && exec "$2" --emulate --verbose "from nowhere"', "sh", gone, BINARY], { env: BASE_ENV, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(r.stdout).text(), new Response(r.stderr).text(), r.exited]);
    expect({ code, answered: stdout.length > 0 }).toEqual({ code: 0, answered: true });
    expect(stderr).toContain("cachet: the daemon cannot take this command (the working directory was removed, and the daemon runs a turn in its client's); running it in this process\n");
    expect((await status())!.served).toBe(served);
  });

  test("a command-line word that is not UTF-8 is refused as in-process (its raw bytes are the client's)", async () => {
    const { served } = await serving();
    const run = async (h: string, env: Record<string, string> = {}) => {
      const proc = Bun.spawn(["bash", "-c", `"${BINARY}" --emulate $'caf\\xe9'`], { env: { ...BASE_ENV, HOME: h, CACHET_HOME: h, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
      return { stderr, code };
    };
    const d = await run(home);
    const p = await run(twin, { CACHET_NO_DAEMON: "1" });
    // A prompt word: input data, exit 3 (src/cli/argv-encoding.ts).
    expect(d.code).toBe(3);
    expect(d.stderr).toBe(p.stderr);
    expect(d.stderr).toContain("is not valid UTF-8: invalid byte 0xe9");
    expect((await status())!.served).toBe(served);
  });

  test("a command other than a turn runs in-process with its usual result", async () => {
    const { served } = await serving();
    const r = await cachet(["sessions", "--json"], { home });
    expect(r.code).toBe(0);
    expect((await status())!.served).toBe(served);
  });

  /** Sends `hello` on the socket as a client would and returns the server's first frame. */
  async function firstFrame(hello: Partial<Hello>): Promise<{ type: number; payload: string }> {
    const reader = new FrameReader();
    return new Promise((resolve, reject) => {
      Bun.connect({
        unix: `${home}/daemon.sock`,
        socket: {
          open(socket) {
            socket.write(jsonFrame(FRAME.HELLO, { protocol: PROTOCOL_VERSION, version: "0", build: "0", argv: ["hi"], env: BASE_ENV, cwd: home, umask: 0o022, uid: process.getuid!(), terminal: [false, false, false], ...hello }));
          },
          data(socket, chunk) {
            const [frame] = reader.push(chunk);
            if (frame) {
              socket.end();
              resolve({ type: frame.type, payload: text(frame.payload) });
            }
          },
          error: (_s, e) => reject(e),
        },
      }).catch(reject);
    });
  }

  test("a client of another build is declined, and the stale daemon exits", async () => {
    await serving();
    const frame = await firstFrame({ build: "another-build" });
    expect(frame.type).toBe(FRAME.DECLINE);
    expect(frame.payload).toContain("this is 0 (build another-build); it stops");
    await until("the stale daemon to exit", async () => (await status()) === undefined);
  });

  test("a client of the previous protocol (no ACCEPT frame) is declined as another build, and the stale daemon exits", async () => {
    expect((await cachet(["daemon", "start"], { home })).code).toBe(0);
    const frame = await firstFrame({ protocol: PROTOCOL_VERSION - 1, version: VERSION, build: BUILD });
    expect(frame.type).toBe(FRAME.DECLINE);
    expect(frame.payload).toContain("it stops");
    await until("the stale daemon to exit", async () => (await status()) === undefined);
  });

  test("a command line that is not a turn is declined by the daemon itself", async () => {
    expect((await cachet(["daemon", "start"], { home })).code).toBe(0);
    const frame = await firstFrame({ version: VERSION, build: BUILD, argv: ["sessions", "list"] });
    expect(frame.type).toBe(FRAME.DECLINE);
    expect(frame.payload).toBe("the daemon runs only turns (the run command)");
  });
});

describe("the daemon's home named another way", () => {
  test("a trailing slash, /., a path through .., a symbolic link and a relative path run inside it are its home: each turn is served, none declined", async () => {
    const link = join(freshHome(), "link");
    symlinkSync(home, link);
    const parent = dirname(home);
    const names: [string, string | undefined][] = [[`${home}/`, undefined], [`${home}/.`, undefined], [`${parent}/../${basename(parent)}/${basename(home)}`, undefined], [link, undefined], [".", home]];
    for (const [value, cwd] of names) {
      const before = (await serving()).served;
      const r = await cachet(["--emulate", "--verbose", "--no-store", `named ${value}`], { home, env: { CACHET_HOME: value }, ...(cwd ? { cwd } : {}) });
      expect(r.code).toBe(0);
      expect(r.stderr).not.toContain("declined");
      expect((await serving()).served).toBe(before + 1);
    }
  });

  test("a HOME reached through a symbolic link, its config directory not made yet, is the daemon's HOME: served, not declined", async () => {
    const real = freshHome();
    const link = join(freshHome(), "link");
    symlinkSync(real, link);
    const env = { CACHET_HOME: undefined, HOME: real };
    const daemon = Bun.spawn([BINARY, "daemon", "run", "--idle", "1m"], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: real, CACHET_DAEMON_AUTOSTART: "0", NO_COLOR: "1" }, stdio: ["ignore", "ignore", "ignore"] });
    try {
      const served = async () => /(\d+) commands? served/.exec((await cachet(["daemon", "status"], { home: real, env })).stdout)?.[1];
      await until("the daemon answers", async () => (await served()) !== undefined);
      expect(existsSync(join(real, ".config", "cachet"))).toBe(false);
      const r = await cachet(["--emulate", "--verbose", "--no-store", "through the link"], { home: real, env: { ...env, HOME: link } });
      expect(r.code).toBe(0);
      expect(r.stderr).not.toContain("declined");
      expect(await served()).toBe("1");
    } finally {
      await cachet(["daemon", "stop"], { home: real, env });
      daemon.kill();
    }
  });
});
