/**
 * `cachet proxy` flags (the compiled binary): bad values are one-line usage
 * errors with a hint; another host than loopback works but warns; with
 * --keep-bodies the bodies are kept, without the credentials they carried.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { RecordedStore } from "../../src/session/recorded.ts";
import { openStore } from "../../src/session/store.ts";
import { cachet, cleanHomes, freshHome } from "../e2e/harness.ts";
import { spawnProxy } from "./harness.ts";

afterAll(cleanHomes);

describe("cachet proxy flags", () => {
  test.each([
    [["--emulate", "--upstream", "http://127.0.0.1:9"], /--upstream and --emulate cannot be used together/],
    [["--upstream", "ftp://example.com"], /--upstream "ftp:\/\/example.com" is not an http\(s\) URL/],
    [["--provider", "nope", "--emulate"], /nope/],
    [["--port", "99999"], /--port must be an integer from 0 to 65535/],
    // Number() would read these as 1000 and 80: only decimal digits are a port.
    [["--emulate", "--port", "1e3"], /^cachet: --port must be an integer from 0 to 65535 in decimal digits, got "1e3"$/],
    [["--emulate", "--port", "0x50"], /^cachet: --port must be an integer from 0 to 65535 in decimal digits, got "0x50"$/],
  ])("%p is a usage error", async (args, message) => {
    const run = await cachet(["proxy", ...args]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    const lines = run.stderr.trim().split("\n");
    expect(lines[0]).toMatch(message);
    expect(lines[1]).toMatch(/^ {2}hint: /);
  });

  test("a host other than loopback works, with a warning", async () => {
    const proxy = await spawnProxy(freshHome(), ["--emulate", "--host", "0.0.0.0"]);
    const out = await proxy.stop();
    expect(out.code).toBe(0);
    expect(out.stderr).toMatch(/listening on 0\.0\.0\.0, not loopback/);
  });

  test("a loopback host in another spelling gets no warning: LOCALHOST, IPv4-mapped ::ffff:127.0.0.1, 127.0.0.2", async () => {
    for (const host of ["LOCALHOST", "::ffff:127.0.0.1", "127.0.0.2"]) {
      const proxy = await spawnProxy(freshHome(), ["--emulate", "--host", host]);
      const out = await proxy.stop();
      expect({ host, code: out.code, warned: out.stderr.includes("not loopback") }).toEqual({ host, code: 0, warned: false });
    }
  });

  test("--keep-bodies keeps both bodies with the credentials cut out; without it only their hashes", async () => {
    const key = "sk-ant-api03-FAKEKEY-bodies-7777";
    for (const keep of [true, false]) {
      const home = freshHome();
      const proxy = await spawnProxy(home, ["--emulate", ...(keep ? ["--keep-bodies"] : [])]);
      const response = await fetch(`${proxy.url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": key },
        // A client that pastes its key into a prompt: the kept body must not have it either.
        body: JSON.stringify({ model: "claude-sonnet-4-6", max_tokens: 32, messages: [{ role: "user", content: `my key is ${key}, keep it safe` }] }),
      });
      const answer = await response.text();
      await proxy.recorded(1);
      await proxy.stop();
      const store = openStore(join(home, "cachet.db"));
      const exchange = new RecordedStore(store).exchange(store.ledger()[0]!.id)!;
      store.close();
      expect(exchange.requestHash).toMatch(/^[0-9a-f]{16}$/);
      expect(exchange.responseHash).toMatch(/^[0-9a-f]{16}$/);
      if (keep) {
        expect(exchange.requestBody).toContain("my key is [redacted], keep it safe");
        expect(new TextDecoder().decode(exchange.responseBody!)).toBe(answer);
      } else {
        expect(exchange.requestBody).toBeNull();
        expect(exchange.responseBody).toBeNull();
      }
    }
  }, 30_000);
});
