/**
 * A flag's file may be a pipe that takes its time (`--schema <(slow)`, a FIFO nobody writes yet): SIGINT while it is
 * read stops the run as one during a wait for stdin does (README "Exit codes"): exit 130 at once, and the one line
 * saying nothing was sent or stored, not the watchdog's generic line a second later.
 */
import { afterAll, expect, test } from "bun:test";
import { readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, freshHome, homeEnv, until } from "./harness.ts";

afterAll(cleanHomes);

/** Whether process `pid` has `path` open (a read of it is pending). */
function holds(pid: number, path: string): boolean {
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === path;
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

for (const flag of [["-s", "@"], ["--overlay", "@"], ["--tools", ""], ["--schema", ""]] as const) {
  test(`SIGINT while ${flag[0]} reads a FIFO nobody writes: exit 130, nothing sent or stored, and the line says so`, async () => {
    const home = freshHome();
    const fifo = join(home, "slow.fifo");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    const proc = Bun.spawn([BINARY, "--emulate", "--session", "piped", flag[0], `${flag[1]}${fifo}`, "hello"], { env: homeEnv(home), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const stderr = new Response(proc.stderr).text();
    await until("the FIFO's read to be pending", () => holds(proc.pid, fifo), () => proc.exitCode === null);
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(130);
    expect(await stderr).toBe("cachet: interrupted by SIGINT before the request was sent: nothing was sent, and the prompt was not stored\n");
    expect(await new Response(proc.stdout).text()).toBe("");
    const sessions = await cachet(["sessions", "--json"], { home });
    expect(sessions.code).toBe(0);
    expect(sessions.stdout).toBe("");
  });
}
