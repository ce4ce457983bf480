/**
 * Words put in a hint's command line, so that they can be pasted into a POSIX shell.
 */

/** `word` as the shell takes it back: single-quoted unless it is plain. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
