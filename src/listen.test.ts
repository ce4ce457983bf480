import { expect, test } from "bun:test";
import { checkListenFlags, isLoopback } from "./listen.ts";

test("an IPv6 address in URL brackets is the bare address; without brackets it stays as given", async () => {
  expect(await checkListenFlags("18801", "[::1]")).toEqual({ port: 18801, host: "::1" });
  expect(await checkListenFlags("0", "::1")).toEqual({ port: 0, host: "::1" });
  expect(await checkListenFlags("0", "[::ffff:127.0.0.1]")).toEqual({ port: 0, host: "::ffff:127.0.0.1" });
  expect(await checkListenFlags("0", "127.0.0.1")).toEqual({ port: 0, host: "127.0.0.1" });
});

test("loopback is localhost in any case, all of 127.0.0.0/8 and ::1 in any spelling, IPv4-mapped included; nothing else", async () => {
  for (const host of ["localhost", "LOCALHOST", "LocalHost", "localhost.", "127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1", "::ffff:7f00:1"]) {
    expect({ host, loopback: await isLoopback(host) }).toEqual({ host, loopback: true });
  }
  for (const host of ["0.0.0.0", "::", "128.0.0.1", "10.0.0.1", "::ffff:10.0.0.1", "::2", "example.com", "localhost.example.com"]) {
    expect({ host, loopback: await isLoopback(host) }).toEqual({ host, loopback: false });
  }
});
