/** The refusal of `sessions rm` on a session with forks, naming what `--force` would remove. */
import { CachetError } from "../errors.ts";
import type { SessionRecord } from "./types.ts";

/** Most forks the message names one by one; the rest are counted. */
const NAMED_FORKS = 10;

/**
 * The error for removing `family[0]` without `--force` while it has forks.
 * @param family the session, then its forks and theirs (parents before children), at least one fork
 * @returns CachetError SESSION_HAS_FORKS (exit 2: the user must add --force) naming each session --force
 *   would remove with its parent, the first {@link NAMED_FORKS} by name and the rest counted
 */
export function forksRefusal(family: readonly SessionRecord[]): CachetError {
  const [root, ...forks] = family as [SessionRecord, ...SessionRecord[]];
  const byId = new Map(family.map((s) => [s.id, s]));
  const named = forks.slice(0, NAMED_FORKS).map((s) => `${label(s)} (fork of ${shortLabel(byId.get(s.parentId ?? "") ?? root)})`);
  const more = forks.length - named.length;
  const list = more > 0 ? `${named.join(", ")} and ${more} more` : named.join(", ");
  return new CachetError("SESSION_HAS_FORKS", `session ${shortLabel(root)} has forks; --force would remove it and ${forks.length} more: ${list}`, {
    hint: `add --force to remove all ${family.length} sessions (\`cachet export SESSION\` first keeps a copy), or remove the forks first`,
  });
}

/** A session as `cachet sessions` shows it: its name with its id, or its id. */
function label(session: SessionRecord): string {
  return session.name === null ? session.id : `${session.name} (${session.id})`;
}

/** A session by its name, else its id. */
function shortLabel(session: SessionRecord): string {
  return session.name ?? session.id;
}
