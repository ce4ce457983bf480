/**
 * The environment an SDK client reads when it is built: the OpenAI and
 * Anthropic SDKs read their `OPENAI_*` / `ANTHROPIC_*` variables in their
 * constructors (custom headers, log level, an auth token, a base URL), so a
 * client kept for later requests is kept per value of these, as a client
 * built afresh would read them (a resident process runs each command with
 * its client's environment).
 */

/**
 * The variables of `process.env` whose names start with `prefix`, as one
 * string: equal strings mean a client built now reads what the kept one read.
 * @param prefix e.g. "OPENAI_"
 */
export function sdkEnvKey(prefix: string): string {
  const seen: string[] = [];
  for (const [name, value] of Object.entries(process.env)) if (name.startsWith(prefix)) seen.push(name, value ?? "");
  return JSON.stringify(seen);
}
