/**
 * A full disk under CACHET_HOME, through the binary: opening the store fails
 * with a hint about disk space (not "move the file away"), for a new store and
 * for one that exists, while what is stored can still be read (sessions,
 * export, cost, stats), and once space is freed the session goes on with
 * nothing lost. The disk is a small tmpfs; on a machine that does not allow
 * mounting one, the test is skipped (src/session/database.test.ts checks the
 * mapping of each cause on every machine).
 */
import { afterAll, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cachet } from "./harness.ts";

const mountPoint = mkdtempSync(join(tmpdir(), "cachet-full-"));
const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", mountPoint]).status === 0;

afterAll(() => {
  if (mounted) spawnSync("umount", [mountPoint]);
  rmSync(mountPoint, { recursive: true, force: true });
});

/** Fills the tmpfs: writes until the file system says there is no space left. */
function fill(file: string): void {
  try {
    writeFileSync(file, Buffer.alloc(4 * 1024 * 1024));
  } catch (error) {
    expect((error as { code: string }).code).toBe("ENOSPC");
    return;
  }
  throw new Error("the tmpfs did not fill");
}

const DISK_HINT = (home: string) => `  hint: free disk space on the file system holding ${home}`;

test.skipIf(!mounted)("a full disk at store open: a new store and an existing one are refused (exit 1) with a disk-space hint; freed, the session goes on with nothing lost", async () => {
  const fresh = join(mountPoint, "fresh");
  const home = join(mountPoint, "home");
  mkdirSync(home);
  const env = { HOME: home };
  expect((await cachet(["--emulate", "--session", "kept", "first question"], { home, env })).code).toBe(0);
  const filler = join(mountPoint, "filler");
  fill(filler);

  const refusedNew = await cachet(["--emulate", "hello"], { home: fresh, env: { HOME: fresh } });
  expect(refusedNew.code).toBe(1);
  const [newLine, newHint] = refusedNew.stderr.split("\n");
  expect(newLine).toStartWith(`cachet: cannot open the session store ${join(fresh, "cachet.db")}: `);
  expect(newHint).toStartWith(DISK_HINT(fresh));
  expect(refusedNew.stderr).not.toContain("move it away");

  const refused = await cachet(["--emulate", "--session", "kept", "second question"], { home, env });
  expect(refused.code).toBe(1);
  const [line, hint] = refused.stderr.split("\n");
  expect(line).toStartWith(`cachet: cannot open the session store ${join(home, "cachet.db")}: `);
  expect(hint).toStartWith(DISK_HINT(home));
  expect(refused.stderr).not.toContain("move it away");

  // What is stored can still be read, to look at or to export before freeing space: the last writer checkpointed its
  // log as it closed, so the file holds everything, and is read without the -shm index the full disk cannot take.
  const listed = await cachet(["sessions"], { home, env });
  expect(listed.code).toBe(0);
  expect(listed.stdout).toContain("kept");
  const shown = await cachet(["export", "kept"], { home, env });
  expect(shown.code).toBe(0);
  const asked = shown.stdout.trim().split("\n").map((l) => JSON.parse(l)).filter((e) => e.type === "message" && e.message.role === "user");
  expect(asked.map((e) => e.message.content[0].text)).toEqual(["first question"]);
  for (const command of [["cost"], ["stats"]]) expect((await cachet(command, { home, env })).code).toBe(0);

  rmSync(filler);
  const resumed = await cachet(["--emulate", "--session", "kept", "--json", "second question"], { home, env });
  expect(resumed.code).toBe(0);
  const exported = (await cachet(["export", "kept"], { home, env })).stdout.trim().split("\n").map((l) => JSON.parse(l));
  const texts = exported.filter((e) => e.type === "message" && e.message.role === "user").map((e) => e.message.content[0].text);
  expect(texts).toEqual(["first question", "second question"]);
});
