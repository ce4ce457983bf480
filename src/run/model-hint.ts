/**
 * The "did you mean -m PROVIDER/MODEL?" of a `-m` a turn refused: a model id
 * without a provider (`claude-sonnet-4-6`), or a provider no plugin registers
 * (`gemini/gemini-2.5-flash`, `anthropc/…`). Read from the price catalog in
 * force; this module and the whole catalog are loaded on that error path
 * only (src/run/turn.ts imports it there).
 */
import { nearestName } from "../cli/near-name.ts";
import { withHintText, type CachetError } from "../errors.ts";
import { embeddedCatalog, modelHome } from "../meter/catalog.ts";
import { storedUpdate } from "../meter/model-limits.ts";
import { statePaths } from "../paths.ts";
import type { PluginHost } from "../plugin/host.ts";
import { catalogIdOf } from "./model-resolution.ts";

/**
 * `error` (the turn's BAD_FLAG or UNKNOWN_PROVIDER) with a "did you mean" opening its hint when
 * `flag`, the `-m` value, is what was refused and a registered provider has
 * the model (src/meter/catalog.ts `modelHome`) or the provider is a typo away
 * from a registered one; else `error` as it is. A catalog that cannot be
 * read leaves `error` as it is: the refusal is what the user must see.
 */
export async function withModelHint(error: CachetError, flag: string, host: PluginHost, env: Record<string, string | undefined>): Promise<CachetError> {
  const slash = flag.indexOf("/");
  const provider = slash === -1 ? undefined : flag.slice(0, slash);
  // A `-m` the turn took (its provider is registered): the refusal is about something else.
  if (slash === 0 || slash === flag.length - 1 || (provider !== undefined && host.providers.has(provider))) return error;
  const model = slash === -1 ? flag : flag.slice(slash + 1);
  let suggestion: string | undefined;
  try {
    const catalog = (await storedUpdate(statePaths(env))) ?? embeddedCatalog();
    // Providers priced under their own id: `openai-responses` shares `openai`'s models, which `openai` names.
    const own = [...host.providers.keys()].filter((id) => catalogIdOf(host.provider(id)) === id);
    suggestion = modelHome(catalog, model, own);
  } catch {
    suggestion = undefined;
  }
  if (suggestion === undefined && provider !== undefined) {
    const near = nearestName(provider, host.providers.keys());
    if (near !== undefined) suggestion = `${near}/${model}`;
  }
  if (suggestion === undefined) return error;
  const rest = provider === undefined ? "`cachet models` lists the models" : error.hint;
  return withHintText(error, `did you mean -m ${suggestion}?${rest ? ` ${rest}` : ""}`);
}
