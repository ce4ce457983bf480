import { refuseOwnedOptions } from "../src/plugin/index.ts";

/**
 * Merges provider options (`-o key=value`, config) into a rendered body.
 * Options come last so a user can override anything; a plain object option
 * is merged one level deep into the body's object of the same key (e.g.
 * Gemini `generationConfig.thinkingConfig` keeps the rendered
 * `generationConfig.maxOutputTokens`). Keys the body lacks are appended in
 * sorted order, so the same options always give the same bytes. An option
 * that would replace or add to a part cachet owns (system prompt, log, tools,
 * schema, model, stream, cache markers) is refused, the same rule on every
 * wire (src/plugin/owned-options.ts).
 * @throws CachetError BAD_FLAG naming the owned option and what to use instead
 */
export function mergeOptions(body: Record<string, unknown>, options: Record<string, unknown>): Record<string, unknown> {
  refuseOwnedOptions(options);
  const out: Record<string, unknown> = { ...body };
  for (const key of Object.keys(options).sort()) {
    const value = options[key];
    if (value === undefined) continue;
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? { ...current, ...value } : value;
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
