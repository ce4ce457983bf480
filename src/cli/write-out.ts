/**
 * Writes a command's output to stdout piece by piece, awaiting each write, so
 * that a listing of a hundred thousand lines is never one string (nor its
 * UTF-8 copy) in memory. A reader that closed the pipe (`cachet cost | head`)
 * ends the writing quietly: what it read was written, exit 0 stands.
 * @param pieces text in output order
 * @throws the write's error when it is not EPIPE
 */
export async function writeOut(pieces: Iterable<string>): Promise<void> {
  for (const piece of pieces) {
    try {
      await Bun.write(Bun.stdout, piece);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EPIPE") return;
      throw error;
    }
  }
}
