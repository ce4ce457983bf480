import { expect, test } from "bun:test";
import { commandEnvironment, keepFetchStable, runtimeFetch } from "./resident-fetch.ts";

/** A fetch that says which one it is. */
const named = (name: string) => (async () => new Response(name)) as unknown as typeof fetch;

test("runtimes of one environment share one function, which calls the fetch of the runtime opened last; another environment gets another", async () => {
  expect(runtimeFetch(named("alone"), { A: "1" })).not.toBe(runtimeFetch(named("alone"), { A: "1" }));
  keepFetchStable();
  const first = runtimeFetch(named("first"), { A: "1", B: "2" });
  const second = runtimeFetch(named("second"), { B: "2", A: "1" });
  expect(second).toBe(first);
  expect(await (await first("http://x")).text()).toBe("second");
  expect(runtimeFetch(named("third"), { A: "1", B: "3" })).not.toBe(first);
  expect(runtimeFetch(named("fourth"), { A: "1" })).not.toBe(first);
});

test("a command's environment given as its plain object gives the function process.env would give; the same environment again gives it again, a changed one another", () => {
  keepFetchStable();
  const own = runtimeFetch(named("own"), process.env);
  commandEnvironment({ ...process.env });
  expect(runtimeFetch(named("command"), process.env)).toBe(own);
  commandEnvironment(undefined);
  commandEnvironment({ ...process.env });
  expect(runtimeFetch(named("again"), process.env)).toBe(own);
  commandEnvironment(undefined);
  // What a command's environment says decides, once given: a variable more, or another value, is another environment.
  commandEnvironment({ ...process.env, CACHET_TEST_ONE_MORE: "1" });
  const more = runtimeFetch(named("more"), process.env);
  expect(more).not.toBe(own);
  commandEnvironment(undefined);
  commandEnvironment({ ...process.env, CACHET_TEST_ONE_MORE: "2" });
  expect(runtimeFetch(named("other"), process.env)).not.toBe(more);
  commandEnvironment(undefined);
  expect(runtimeFetch(named("after"), process.env)).toBe(own);
});
