import { afterEach, expect, test } from "bun:test";
import { bindEdges, processEdges, type Edges } from "../../edges.ts";
import { resetLog, setLogLevel } from "../../log.ts";
import { sayWaiting } from "./session.ts";

let unbind: (() => void) | undefined;

afterEach(() => {
  unbind?.();
  resetLog();
});

/** Binds edges that keep what is written to stderr, as the daemon binds a client's. */
function capture(): { stderr: string } {
  const seen = { stderr: "" };
  unbind = bindEdges({ ...processEdges, writeStderr: (text) => void (seen.stderr += text) } satisfies Edges);
  return seen;
}

test("a turn waiting for another process's turn says so once on stderr, naming the holder, as sessions rm and compact do", async () => {
  const seen = capture();
  await sayWaiting("s_abc", { pid: 4242, host: "box" });
  expect(seen.stderr).toBe("cachet: session s_abc is running a turn (process 4242 on box): waiting for it to finish before sending this one\n");
});

test("--quiet drops the line", async () => {
  const seen = capture();
  setLogLevel("quiet");
  await sayWaiting("s_abc", { pid: 4242, host: "box" });
  expect(seen.stderr).toBe("");
});
