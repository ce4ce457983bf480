/** Token counts memoized by content hash, in the store and in this process. */
import { keepRecent, type StoreCore } from "./core.ts";

const TOKEN_CHUNK = 256;

/** Counts a connection keeps: far more than the nodes of the sessions a resident process serves in turn. */
const KEPT_COUNTS = 1 << 16;

/** The token memo. Writes must run inside {@link StoreCore.write}. */
export class TokenMemo {
  private readonly memo: Map<string, number>;

  constructor(private readonly core: StoreCore) {
    // Kept with the connection (StoreCore.kept): a count never changes.
    this.memo = core.kept("tokens", () => new Map());
  }

  get(hashes: readonly string[]): Map<string, number> {
    const out = new Map<string, number>();
    const missing: string[] = [];
    for (const hash of hashes) {
      const tokens = this.memo.get(hash);
      if (tokens === undefined) missing.push(hash);
      else out.set(hash, tokens);
    }
    for (let i = 0; i < missing.length; i += TOKEN_CHUNK) {
      const chunk = missing.slice(i, i + TOKEN_CHUNK);
      const rows = this.core.db.query(`SELECT hash, tokens FROM node_tokens WHERE hash IN (${chunk.map(() => "?").join(", ")})`).all(...chunk) as { hash: string; tokens: number }[];
      for (const row of rows) {
        keepRecent(this.memo, row.hash, row.tokens, KEPT_COUNTS);
        out.set(row.hash, row.tokens);
      }
    }
    return out;
  }

  save(entries: Iterable<readonly [string, number]>): void {
    const insert = this.core.db.query("INSERT OR REPLACE INTO node_tokens (hash, tokens) VALUES (?, ?)");
    for (const [hash, tokens] of entries) {
      insert.run(hash, tokens);
      keepRecent(this.memo, hash, tokens, KEPT_COUNTS);
    }
  }
}
