/**
 * The assistant answer as it streams, stored as it grows (marked incomplete),
 * so a crash keeps what stdout showed.
 */
import type { Block, Message } from "../../context/types.ts";
import type { Store } from "../../session/store.ts";

/** Minimum time between two saves of a growing answer, ms. */
const SAVE_EVERY_MS = 250;

/** Saves one assistant message of a session: at most once per 250 ms while streaming, plus a trailing save. */
export class PartialAnswer {
  /** Whether the message has been stored at all. */
  saved = false;
  /** Whether the last save that succeeded stored the answer as complete. */
  complete = false;
  /** The failure of a throttled save (it runs from a timer): thrown by the next {@link saveSoon}. */
  private failure: unknown;
  private lastSave = 0;
  private pending: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly store: Store,
    private readonly sessionId: string,
    readonly id: string,
  ) {}

  /** Stores `content` now, as incomplete or as the final answer. */
  save(content: Block[], incomplete: boolean): void {
    const message: Message = { id: this.id, role: "assistant", content: structuredClone(content), ...(incomplete ? { incomplete: true } : {}) };
    if (!this.saved) {
      this.store.appendMessage(this.sessionId, { ...message, incomplete: true });
      this.saved = true;
      if (!incomplete) this.store.updatePartial(this.sessionId, this.id, message.content, false);
    } else {
      this.store.updatePartial(this.sessionId, this.id, message.content, incomplete);
    }
    this.complete = !incomplete;
  }

  /**
   * Stores the growing `content` as incomplete, throttled: a burst followed by a stall is stored whole.
   * @throws CachetError STORE or SESSION_CONFLICT when this save, or a throttled one before it, was refused
   */
  saveSoon(content: Block[]): void {
    if (this.failure !== undefined) throw this.failure;
    const due = this.lastSave + SAVE_EVERY_MS - Date.now();
    if (due > 0) {
      this.pending ??= setTimeout(() => {
        this.pending = undefined;
        this.lastSave = Date.now();
        try {
          this.save(content, true);
        } catch (error) {
          // A store that refuses writes (disk full, read-only, the lease taken over): the stream stops at the next event.
          this.failure = error;
        }
      }, due);
      return;
    }
    this.cancel();
    this.lastSave = Date.now();
    this.save(content, true);
  }

  /** Drops a pending throttled save. */
  cancel(): void {
    clearTimeout(this.pending);
    this.pending = undefined;
  }
}
