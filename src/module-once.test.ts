import { expect, test } from "bun:test";
import { moduleOnce } from "./module-once.ts";

test("a module is loaded once and the same promise is returned after; a failed load is tried again", async () => {
  let calls = 0;
  const load = moduleOnce(async () => {
    calls++;
    if (calls === 1) throw new Error("not yet");
    return { value: calls };
  });
  await expect(load()).rejects.toThrow("not yet");
  const first = load();
  expect(await first).toEqual({ value: 2 });
  expect(load()).toBe(first);
  expect(calls).toBe(2);
});
