/**
 * What the store holds about sessions, read two ways for the first-turn e2e
 * files: the raw rows (what `cachet sessions` hides is still seen there) and
 * the listing a user gets.
 */
import { Database } from "bun:sqlite";
import { expect } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { cachet } from "./harness.ts";

/** Every session row of the store under `home`, in creation order; none when there is no store yet. */
export function sessionRows(home: string): { id: string; name: string | null }[] {
  if (!existsSync(join(home, "cachet.db"))) return [];
  const db = new Database(join(home, "cachet.db"), { readonly: true });
  try {
    return db.query("SELECT id, name FROM sessions ORDER BY rowid").all() as { id: string; name: string | null }[];
  } finally {
    db.close();
  }
}

/** `cachet sessions --json` under `home`, parsed: one object per listed session. */
export async function listed(home: string): Promise<{ id: string; name: string | null; messages: number; requests: number }[]> {
  const r = await cachet(["sessions", "--json"], { home });
  expect(r.code).toBe(0);
  return r.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
}
