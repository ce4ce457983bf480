import { expect, test } from "bun:test";
import { hostname as osHostname } from "node:os";
import { hostname, prefetchHostname } from "./hostname.ts";

test("the host name is node:os's, before the prefetch has settled and after", async () => {
  expect(hostname()).toBe(osHostname());
  const read = prefetchHostname();
  if (process.platform === "linux") expect(await read).toBe(osHostname());
  else expect(read).toBeUndefined();
  expect(hostname()).toBe(osHostname());
});
