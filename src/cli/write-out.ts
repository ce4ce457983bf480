import { stdout, stdoutDrained, stdoutStopped } from "../stdout.ts";

/**
 * Writes a command's output to stdout piece by piece, each through the one
 * stdout writer and waited for until it went out, so that a listing of a
 * hundred thousand lines is never one string (nor its UTF-8 copy) in memory.
 * Not `Bun.write(Bun.stdout, …)`: to a pipe whose reader is slow it may write
 * a large piece only in part, and the next piece then follows the part
 * (a 230 KB exported message lost its middle under load). A failed write
 * ends the writing: a reader that closed the pipe (`cachet cost | head`)
 * quietly (what it read was written, exit 0 stands), any other failure is
 * reported at the command's end (src/stdout.ts).
 * @param pieces text in output order
 */
export async function writeOut(pieces: Iterable<string>): Promise<void> {
  for (const piece of pieces) {
    if (stdoutStopped()) return;
    stdout().write(piece);
    await stdoutDrained();
  }
}
