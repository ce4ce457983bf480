/**
 * Command-line words that name a file of the process that reads them: a turn
 * run by the daemon would open the daemon's own (its stdin is /dev/null; it
 * has no fd 63), not its client's, so the client runs such a turn itself.
 */

/**
 * Paths that resolve per process (Linux and macOS: /dev/fd, /dev/std*; Linux: /proc/self, /proc/thread-self), as whole
 * path names: each is itself, or leads (a symlink, a mount) to, a file of the process that opens it, and so does
 * everything under it. src/input/process-path.ts stops at one before following it.
 */
export const PROCESS_ROOTS: readonly string[] = ["/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/proc/self", "/proc/thread-self"];

/** {@link PROCESS_ROOTS} as the prefixes a word is searched for: a directory's with its slash (`/dev/fd/`, not `/dev/fdx`). */
const PER_PROCESS: string[] = [];
// A plain loop, not map(): this module loads on the client's way to its hello, where a builtin's first call compiles it.
for (let i = 0; i < PROCESS_ROOTS.length; i++) {
  const root = PROCESS_ROOTS[i]!;
  PER_PROCESS.push(root.startsWith("/dev/std") ? root : `${root}/`);
}

/**
 * Whether `word` holds a path of {@link PER_PROCESS} anywhere: as a flag's value (`--tools /dev/fd/63`, what a
 * shell's `<(…)` gives), after `@` (`-s @/dev/stdin`) or `=@` (`--tool-result ID=@/dev/fd/3`), or inside a prompt
 * word. A prompt that merely mentions one runs in the client too: slower, never wrong.
 */
export function namesProcessFile(word: string): boolean {
  // includes(), not a regular expression: the client's first one costs ~0.25 ms before its hello.
  for (let i = 0; i < PER_PROCESS.length; i++) if (word.includes(PER_PROCESS[i]!)) return true;
  return false;
}

/** Why a command with such a word runs in its client, as `--verbose` says it. */
export const PROCESS_FILE_REASON = "a word names a file of the client's own process (/dev/fd/…, /dev/stdin, /proc/self/…), which the daemon would open as its own";
