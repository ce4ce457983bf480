/**
 * While stdin is still being read, the run opens its connection to the
 * provider (src/run/prepare.ts), and the request then leaves on that
 * connection as soon as the input ends. Observed from outside: a TCP relay in
 * front of the emulator sees the connection open while the test still holds
 * stdin open with half of the input written, sees no request byte before
 * stdin ends, and sees the whole request arrive on that same connection.
 * Event-driven: the test waits for the connection, never for a time.
 */
import { afterAll, afterEach, expect, test } from "bun:test";
import type { Socket } from "bun";
import { cleanHomes, freshHome, homeEnv } from "./harness.ts";
import { BINARY } from "./harness.ts";
import { startEmulatorProcess, type EmulatorProcess } from "./session-kit.ts";

interface Relayed {
  /** Bytes the client sent on this connection, in order. */
  sent: string;
  upstream: Promise<Socket<undefined>>;
}

let emulator: EmulatorProcess | undefined;
afterEach(() => emulator?.stop());
afterAll(cleanHomes);

test("the provider connection opens while stdin is read, and the request leaves on it once stdin ends", async () => {
  const home = freshHome();
  emulator = await startEmulatorProcess(freshHome());
  const target = new URL(emulator.url);
  const connections: Relayed[] = [];
  let opened: () => void;
  const firstConnection = new Promise<void>((resolve) => (opened = resolve));
  const relay = Bun.listen<Relayed>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        const upstream = Bun.connect({
          hostname: target.hostname,
          port: Number(target.port),
          socket: {
            data: (_, chunk) => void client.write(chunk),
            close: () => void client.end(),
          },
        });
        client.data = { sent: "", upstream };
        connections.push(client.data);
        opened();
      },
      async data(client, chunk) {
        client.data.sent += chunk.toString("latin1");
        (await client.data.upstream).write(chunk);
      },
      async close(client) {
        (await client.data.upstream).end();
      },
    },
  });
  try {
    const proc = Bun.spawn([BINARY, "-m", "openai/gpt-5", "--base-url", `http://127.0.0.1:${relay.port}/openai/v1`, "--no-stream", "-q", "-"], {
      env: { ...homeEnv(home), OPENAI_API_KEY: "test-key" },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      timeout: 20_000,
    });
    proc.stdin.write("first half of the input, ");
    await proc.stdin.flush();
    await firstConnection;
    // Connected before the input is complete, and nothing sent on it yet: the request waits for the input.
    expect(connections).toHaveLength(1);
    expect(connections[0]!.sent).toBe("");
    proc.stdin.write("second half");
    await proc.stdin.end();
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(stdout.length).toBeGreaterThan(0);
    // One connection: the preconnected one carried the request, which holds the whole input.
    expect(connections).toHaveLength(1);
    expect(connections[0]!.sent).toStartWith("POST /openai/v1/chat/completions ");
    expect(connections[0]!.sent).toContain("first half of the input, second half");
  } finally {
    relay.stop(true);
  }
});
