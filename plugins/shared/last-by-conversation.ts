/**
 * The last value kept for each of the latest conversations, told apart by a
 * key (a list's first element, as the render memo tells them apart). A scan
 * that keeps what it found by position only helps when it meets the same
 * conversation again; a process serving several in turn (the probe, the
 * proxy, a benchmark alternating two sessions) keeps each one's.
 */
export class LastByConversation<T> {
  private readonly values = new Map<unknown, T>();

  /** @param max conversations kept; the least recently used is dropped beyond it */
  constructor(private readonly max = 16) {}

  /** The value kept for `key`, now the most recently used; undefined when none is. */
  get(key: unknown): T | undefined {
    const value = this.values.get(key);
    if (value !== undefined) {
      this.values.delete(key);
      this.values.set(key, value);
    }
    return value;
  }

  /** Keeps `value` for `key`, replacing what was kept. */
  set(key: unknown, value: T): void {
    this.values.delete(key);
    this.values.set(key, value);
    if (this.values.size > this.max) this.values.delete(this.values.keys().next().value);
  }
}
