/**
 * `cachet emulate`: first stdout line is the root URL, it serves, and it stops
 * on SIGTERM.
 */
import { expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

test("cachet emulate --port 0 prints its URL first, serves, and exits on SIGTERM", async () => {
  const home = mkdtempSync(join(tmpdir(), "cachet-cli-"));
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "../../src/cli/main.ts"), "emulate", "--port", "0", "--quiet"], {
    env: { ...process.env, CACHET_HOME: home },
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = child.stdout.getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    out += new TextDecoder().decode(value);
  }
  const url = out.split("\n")[0]!;
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  const response = await fetch(`${url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ model: "gpt-5", messages: [{ role: "user", content: "hi" }] }) });
  expect(response.status).toBe(200);
  child.kill("SIGTERM");
  expect(await child.exited).toBe(0);
});

test("a bad --port is a usage error", async () => {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "../../src/cli/main.ts"), "emulate", "--port", "abc"], { stdout: "pipe", stderr: "pipe" });
  expect(await child.exited).toBe(2);
  expect(await new Response(child.stderr).text()).toContain("--port must be an integer");
});
