import { expect, test } from "bun:test";
import { checkListenFlags } from "./listen.ts";

test("an IPv6 address in URL brackets is the bare address; without brackets it stays as given", async () => {
  expect(await checkListenFlags("18801", "[::1]")).toEqual({ port: 18801, host: "::1" });
  expect(await checkListenFlags("0", "::1")).toEqual({ port: 0, host: "::1" });
  expect(await checkListenFlags("0", "[::ffff:127.0.0.1]")).toEqual({ port: 0, host: "::ffff:127.0.0.1" });
  expect(await checkListenFlags("0", "127.0.0.1")).toEqual({ port: 0, host: "127.0.0.1" });
});
