/**
 * This machine's name, as node:os's hostname() gives it, without loading
 * node:os (Bun's JS builtin, ~0.8 ms in a fresh process) on a run's way to
 * its request where Linux keeps the name in a file: the file is read in the
 * background from {@link prefetchHostname}, and {@link hostname} takes the
 * read's result once it has settled. Both name the same thing: Linux's
 * gethostname(2), which node:os asks, returns the UTS name this file holds.
 */

const HOSTNAME_FILE = "/proc/sys/kernel/hostname";

let read: Promise<string | undefined> | undefined;

/**
 * Starts reading the host name in the background (Linux only; once per process).
 * @returns the read, which settles with the name, or undefined when the file cannot be read; undefined on another platform
 */
export function prefetchHostname(): Promise<string | undefined> | undefined {
  if (process.platform !== "linux") return undefined;
  read ??= Bun.file(HOSTNAME_FILE)
    .text()
    .then((text) => (text.endsWith("\n") ? text.slice(0, -1) : text))
    .catch(() => undefined);
  return read;
}

/**
 * The host name: the prefetched one if its read has settled with one, else
 * node:os's hostname() (another platform, no prefetch, a read still under
 * way or failed).
 */
export function hostname(): string {
  const prefetched = read === undefined ? undefined : Bun.peek(read);
  return typeof prefetched === "string" ? prefetched : process.getBuiltinModule("node:os").hostname();
}
