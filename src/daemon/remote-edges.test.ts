import { describe, expect, test } from "bun:test";
import { type Exit, FRAME, FrameReader, type Hello } from "./protocol.ts";
import { remoteEdges } from "./remote-edges.ts";
import type { Wire } from "./wire.ts";

/** A client's edges over a wire that keeps the frame types the server sent, and the ends reported to the server. */
function client() {
  const reader = new FrameReader();
  const sent: number[] = [];
  const ends: Exit[] = [];
  const wire = { send: (bytes: Uint8Array) => void sent.push(...reader.push(bytes).map((f) => f.type)) } as unknown as Wire;
  const hello = { pid: 4242, terminal: [false, false, false] } as unknown as Hello;
  const remote = remoteEdges(wire, hello, (exit) => void ends.push(exit));
  return { remote, edges: remote.edges, sent, ends };
}

/** The frame a client sends when `name` reaches it. */
const signal = (name: NodeJS.Signals) => ({ type: FRAME.SIGNAL, payload: new TextEncoder().encode(name) });

describe("a daemon client's edges (src/daemon/remote-edges.ts)", () => {
  test("finish(): the code is kept for the server to send as a normal end, the command is not ended its own way, and what it writes after is dropped", () => {
    const { remote, edges, sent, ends } = client();
    edges.writeStderr("cachet: refused\n");
    edges.finish(4);
    expect(edges.finished).toBe(4);
    expect(remote.ended).toBeUndefined();
    expect(ends).toEqual([]);
    edges.writeStderr("too late\n");
    expect(edges.stdoutSink().write("too late\n")).toBe(9);
    expect(sent).toEqual([FRAME.STDERR]);
    // A second end changes nothing: the first is the command's.
    edges.finish(2);
    expect(edges.finished).toBe(4);
  });

  test("a signal after finish() ends nothing (the command's own process had exited): no handler runs, nothing restarts", () => {
    const { remote, edges, ends } = client();
    let handled = 0;
    edges.onSignal("SIGINT", () => handled++);
    edges.finish(5);
    remote.deliver(signal("SIGINT"));
    remote.deliver(signal("SIGHUP"));
    expect(handled).toBe(0);
    expect(ends).toEqual([]);
    expect(remote.ended).toBeUndefined();
  });

  test("finish() once a signal reached the command ends it as exit() does: the server restarts", () => {
    const { remote, edges, ends } = client();
    let handled = 0;
    edges.onSignal("SIGINT", () => handled++);
    remote.deliver(signal("SIGINT"));
    expect(handled).toBe(1);
    edges.finish(130);
    expect(ends).toEqual([{ code: 130 }]);
    expect(remote.ended).toEqual({ code: 130 });
    expect(edges.finished).toBeUndefined();
  });

  test("exit() after finish() is an end of the process's own (the server restarts) with finish's code, which the client already has", () => {
    const { remote, edges, ends } = client();
    edges.finish(3);
    edges.exit(1);
    expect(ends).toEqual([{ code: 3 }]);
    expect(remote.ended).toEqual({ code: 3 });
  });

  test("exit() ends the command its own way at once, as before", () => {
    const { remote, edges, ends } = client();
    edges.exit(7);
    expect(ends).toEqual([{ code: 7 }]);
    expect(remote.ended).toEqual({ code: 7 });
    edges.finish(2);
    expect(edges.finished).toBeUndefined();
    expect(ends).toHaveLength(1);
  });
});
