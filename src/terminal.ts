/**
 * Whether stdout or stderr is a terminal, without building `process.stdout`
 * or `process.stderr`: those Node streams load Node's stream modules (~8 ms
 * of CPU in a compiled program on the 2-core bench machine), which a run
 * whose output is piped otherwise never needs. Bun keeps Node's `tty_wrap`
 * binding for compatibility; a runtime without it gets the answer from the stream.
 * @param fd 1 (stdout) or 2 (stderr)
 */
export function isTerminal(fd: 1 | 2): boolean {
  const binding = (process as { binding?: (name: string) => { isTTY?: unknown } }).binding;
  const isTTY = binding?.("tty_wrap").isTTY;
  return typeof isTTY === "function" ? isTTY(fd) === true : (fd === 1 ? process.stdout : process.stderr).isTTY === true;
}
