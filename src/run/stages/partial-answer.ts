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
  }

  /** Stores the growing `content` as incomplete, throttled: a burst followed by a stall is stored whole. */
  saveSoon(content: Block[]): void {
    const due = this.lastSave + SAVE_EVERY_MS - Date.now();
    if (due > 0) {
      this.pending ??= setTimeout(() => {
        this.pending = undefined;
        this.lastSave = Date.now();
        this.save(content, true);
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
