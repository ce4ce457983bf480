/**
 * The emulator's test controls (an `x-emulator-*` request header, else its
 * `CACHET_EMULATOR_*` variable), read one way wherever they are checked when
 * the emulator starts and wherever a request uses them, as cachet reads its
 * own variables (src/env-flag.ts, CACHET_MAX_STDIN_BYTES): surrounding blanks
 * are ignored, and a blank value is the same as none. A check and a use that
 * read a value differently would accept at start what a request then reads
 * as something else.
 */

/** The variable `name`'s value without surrounding blanks; undefined when unset or blank. */
export function envControl(env: Readonly<Record<string, string | undefined>>, name: string): string | undefined {
  return trimmed(env[name]);
}

/**
 * A control's value for one request: the header when the request carries it
 * (a blank one means none, whatever the variable says), else the variable;
 * without surrounding blanks, undefined when neither gives one.
 */
export function requestControl(headers: Headers, header: string, env: Readonly<Record<string, string | undefined>>, name: string): string | undefined {
  const sent = headers.get(header);
  return sent === null ? envControl(env, name) : trimmed(sent);
}

function trimmed(value: string | undefined): string | undefined {
  const word = value?.trim();
  return word === undefined || word === "" ? undefined : word;
}
