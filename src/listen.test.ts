import { expect, test } from "bun:test";
import { checkListenFlags, isLoopback, listenError } from "./listen.ts";

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

test("brackets around anything but an IPv6 address are refused by one line naming --host, before any lookup", async () => {
  for (const host of ["[127.0.0.1]", "[localhost]", "[notahost.invalid]", "[]"]) {
    const refused = await checkListenFlags("0", host).catch((error: Error) => error);
    expect({ host, message: (refused as Error).message }).toEqual({ host, message: `--host ${host}: only an IPv6 address goes in brackets` });
  }
});

test("a taken port and a privileged one are named by --port", () => {
  const inUse = Object.assign(new Error("Failed to start server. Is port 18787 in use?"), { code: "EADDRINUSE" });
  expect(listenError(inUse, "127.0.0.1", 18787).message).toBe("cannot listen on --port 18787: the port is in use on 127.0.0.1");
  const denied = Object.assign(new Error("permission denied"), { code: "EACCES" });
  expect(listenError(denied, "::1", 80).message).toBe("cannot listen on --port 80: ports below 1024 need privileges");
});
