import { expect, test } from "bun:test";
import { DAEMON_JSC_OPTIONS, DAEMON_OPTIONS_ENV, daemonEnv, dropDaemonOptions } from "./self.ts";

const NAMES = Object.keys(DAEMON_JSC_OPTIONS);

test("a daemon's environment gets the engine options, and names those it added; the caller's is not changed", () => {
  const env = { HOME: "/h", PATH: "/bin" };
  const tuned = daemonEnv(env);
  expect(tuned).toEqual({ ...env, ...DAEMON_JSC_OPTIONS, [DAEMON_OPTIONS_ENV]: NAMES.join(",") });
  expect(env).toEqual({ HOME: "/h", PATH: "/bin" });
});

test("an option the environment sets already keeps its value and is not named as added", () => {
  const own = NAMES[0]!;
  const tuned = daemonEnv({ [own]: "700" });
  expect(tuned[own]).toBe("700");
  expect(tuned[DAEMON_OPTIONS_ENV]).toBe(NAMES.slice(1).join(","));
  dropDaemonOptions(tuned);
  expect(tuned).toEqual({ [own]: "700" });
});

test("dropping them leaves the environment the daemon was started from, and touches no variable it did not add", () => {
  const env = { HOME: "/h", BUN_JSC_useJIT: "1" };
  const tuned = daemonEnv(env);
  dropDaemonOptions(tuned);
  expect(tuned).toEqual(env);
  // A list naming anything else (a user's hand-written value) removes only the options cachet adds.
  const forged: Record<string, string | undefined> = { HOME: "/h", [DAEMON_OPTIONS_ENV]: "HOME,BUN_JSC_useJIT", BUN_JSC_useJIT: "1" };
  dropDaemonOptions(forged);
  expect(forged).toEqual({ HOME: "/h", BUN_JSC_useJIT: "1" });
});

test("an environment with every option set already is passed on as it is, without the list", () => {
  const env = { ...DAEMON_JSC_OPTIONS, HOME: "/h" };
  expect(daemonEnv(env)).toEqual(env);
});
