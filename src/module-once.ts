/**
 * Lazily loaded modules that a resident process (the daemon) reaches on every
 * turn: `await import()` of a module already loaded still goes through the
 * module loader, ~15 µs each in a compiled binary (measured), and a turn
 * passes a dozen before its request.
 */

/**
 * A loader calling `load` (a dynamic import) once, on its first call: later
 * calls return the same promise. One that rejected is not kept (the next call
 * loads again, as import() would try again).
 */
export function moduleOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => {
    if (loaded === undefined) {
      loaded = load();
      loaded.catch(() => (loaded = undefined));
    }
    return loaded;
  };
}
