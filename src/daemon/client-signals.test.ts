/**
 * The daemon client's signal handlers (src/daemon/client.ts): installed before the hello leaves and kept to the
 * process's exit, so a signal sent once the daemon may have sent the request always has one. A client that installed
 * them after its write, or swapped its accept-wait handlers for its forwarding ones (in Bun a signal whose last
 * listener was removed meets its default action even when the next is added in the same synchronous step), died of a
 * SIGINT or SIGTERM sent right after its request left, silently, on a loaded machine (daemon-waits.test.ts, about 1
 * run in 5 under load); one that removed them once the command had ended died of a signal sent during its exit, after
 * a whole answer (about 1 run in 200 under load). Driven in a process of its own (the client ends by exiting)
 * against a stand-in daemon that accepts and ends the command; SIGTERM's listener count is recorded at every change, and whether the hello had
 * been written when the first listener was added.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SRC = join(import.meta.dir, "..");

const SCRIPT = `
import { FRAME, FrameReader, encodeFrame, jsonFrame, socketPath } from ${JSON.stringify(join(SRC, "daemon", "protocol.ts"))};
import { statePaths } from ${JSON.stringify(join(SRC, "paths.ts"))};
const counts = [];
let helloBeforeHandler;
let hello = false;
// The client's first write on its connection is its hello.
const connect = Bun.connect;
Bun.connect = (options) =>
  connect({
    ...options,
    socket: {
      ...options.socket,
      open(socket) {
        const write = socket.write.bind(socket);
        socket.write = (...args) => {
          hello = true;
          return write(...args);
        };
        return options.socket.open(socket);
      },
    },
  });
for (const method of ["on", "off"]) {
  const original = process[method].bind(process);
  process[method] = (name, handler) => {
    const result = original(name, handler);
    if (name === "SIGTERM") {
      helloBeforeHandler ??= hello;
      counts.push(process.listenerCount("SIGTERM"));
    }
    return result;
  };
}
process.on("exit", (code) => console.log(JSON.stringify({ code, counts, helloBeforeHandler })));
const reader = new FrameReader();
Bun.listen({
  unix: socketPath(statePaths().data),
  socket: {
    data(socket, chunk) {
      for (const frame of reader.push(chunk)) {
        if (frame.type !== FRAME.HELLO) continue;
        socket.write(encodeFrame(FRAME.ACCEPT));
        socket.write(jsonFrame(FRAME.EXIT, { code: 0 }));
      }
    },
  },
});
const { viaDaemon } = await import(${JSON.stringify(join(SRC, "daemon", "client.ts"))});
await viaDaemon(["a prompt"]);
console.log("viaDaemon returned");
`;

test("a command run through the daemon has a SIGTERM handler from before its hello to the process's exit, never none in between", async () => {
  const home = mkdtempSync(join(tmpdir(), "cachet-client-signals-"));
  try {
    const script = join(home, "client.ts");
    writeFileSync(script, SCRIPT);
    const proc = Bun.spawn([process.execPath, script], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, CACHET_HOME: home },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect({ code, err }).toEqual({ code: 0, err: "" });
    const { counts, helloBeforeHandler } = JSON.parse(out.trim()) as { code: number; counts: number[]; helloBeforeHandler: boolean };
    expect(helloBeforeHandler).toBe(false);
    // Installed once and never removed, the process exiting with it: a 0 is a window with no handler.
    expect(counts.length).toBeGreaterThanOrEqual(1);
    expect(counts).not.toContain(0);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});
