/**
 * Shared helpers of the emulator tests: a fresh emulator per suite (fresh
 * CACHET_HOME, in-memory state unless a path is given) and a JSON poster.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type EmulatorHandle, startEmulator } from "../../src/emulator/index.ts";

/** `n` tokens of o200k_base exactly: one single-token word repeated. */
export function tokens(n: number, word = "cache"): string {
  return ` ${word}`.repeat(n);
}

/** Starts an emulator with in-memory state (or `statePath`) and a fresh CACHET_HOME. */
export async function emulator(env: Record<string, string | undefined> = {}, statePath: string | null = null): Promise<EmulatorHandle> {
  const home = mkdtempSync(join(tmpdir(), "cachet-emu-"));
  return startEmulator({ statePath, env: { CACHET_HOME: home, ...env } });
}

/** POSTs JSON and returns status and parsed body. */
export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any; headers: Headers }> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, json: text.startsWith("{") || text.startsWith("[") ? JSON.parse(text) : text, headers: response.headers };
}

/** Header shifting the emulator clock by `minutes`. */
export function after(minutes: number): Record<string, string> {
  return { "x-emulator-clock-offset-ms": String(minutes * 60_000) };
}
