import { noteStdoutFailure, stdoutStopped } from "../stdout.ts";

/**
 * Writes a command's output to stdout piece by piece, awaiting each write, so
 * that a listing of a hundred thousand lines is never one string (nor its
 * UTF-8 copy) in memory. A failed write ends the writing: a reader that
 * closed the pipe (`cachet cost | head`) quietly (what it read was written,
 * exit 0 stands), any other failure is reported at the command's end
 * (src/stdout.ts).
 * @param pieces text in output order
 */
export async function writeOut(pieces: Iterable<string>): Promise<void> {
  for (const piece of pieces) {
    if (stdoutStopped()) return;
    try {
      await Bun.write(Bun.stdout, piece);
    } catch (error) {
      noteStdoutFailure(error);
    }
  }
}
