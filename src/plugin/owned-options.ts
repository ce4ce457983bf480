/**
 * The one rule for provider options (`-o key=value`, config): an option may
 * not replace or add to a part of the request that cachet renders from the
 * session and prices as nodes (system prompt, messages, tools, output schema)
 * or that decides what is sent and how (model, stream, cache markers, a
 * server-held context, the session's affinity key). Such an option would put
 * on the wire something the session does not record, so `cost --tree` would
 * price what was never sent. Legacy tool definitions (`functions`,
 * `function_call`) are tools outside the frozen prefix; `n` (Gemini's
 * `generationConfig.candidateCount`) asks for several choices while cachet
 * reads and stores one.
 *
 * The list covers every wire's spelling at once (a key one wire does not know
 * would be refused by that provider anyway), so every adapter and the command
 * line apply the same rule. Gemini reads both camelCase and snake_case field
 * names (proto JSON), hence both spellings.
 * @see https://docs.claude.com/en/api/messages (system, messages, tools, cache_control, output_config)
 * @see https://platform.openai.com/docs/api-reference/chat/create (messages, tools, response_format)
 * @see https://platform.openai.com/docs/api-reference/responses/create (instructions, input, previous_response_id, conversation, prompt, text.format)
 * @see https://ai.google.dev/api/generate-content (systemInstruction, contents, tools, cachedContent, generationConfig.responseJsonSchema, generationConfig.candidateCount)
 * @see https://platform.openai.com/docs/api-reference/chat/create (functions, function_call, n, prompt_cache_key)
 * @see https://docs.claude.com/en/api/messages (metadata.user_id)
 * @see https://openrouter.ai/docs/features/prompt-caching (session_id)
 */
import { CachetError } from "../errors.ts";

/** What a user sets instead of an owned part. */
const SYSTEM = "-s/--system";
const LOG = "the prompt, -c/--session, --fork and --tool-result";
const SCHEMA = "--schema";
const TOOLS = "--tools";
/** Why an owned part is cachet's, unless the entry says otherwise. */
const PREFIX = "it is part of the session and its cached prefix";
const AFFINITY = { use: "--cache auto|off (cachet places the session's affinity key)", why: "it is the session's cache affinity key" };

/** An owned part: what to use instead, and why cachet owns it (default {@link PREFIX}). */
interface Owner {
  use: string;
  why?: string;
}

/** A field that asks for several choices, where cachet reads and stores one. */
function oneChoice(field: string): Owner {
  return { use: `one request per answer (leave ${field} unset)`, why: "cachet reads and stores one choice per turn" };
}
const SCHEMA_OWNER: Owner = { use: SCHEMA };

/**
 * Owned request parts by top-level key. An entry with `within` owns only
 * those sub-keys, each with its own owner, and the rest of the object stays
 * the user's (e.g. `-o text={"verbosity":"low"}` is fine, `text.format` is not).
 */
const OWNED: Readonly<Record<string, Owner | { within: Readonly<Record<string, Owner>> }>> = {
  model: { use: "-m/--model" },
  stream: { use: "--no-stream" },
  system: { use: SYSTEM },
  instructions: { use: SYSTEM },
  systemInstruction: { use: SYSTEM },
  system_instruction: { use: SYSTEM },
  messages: { use: LOG },
  input: { use: LOG },
  contents: { use: LOG },
  previous_response_id: { use: LOG },
  conversation: { use: LOG },
  prompt: { use: `${SYSTEM} and ${LOG}` },
  tools: { use: TOOLS },
  functions: { use: TOOLS },
  function_call: { use: TOOLS },
  n: oneChoice("n"),
  prompt_cache_key: AFFINITY,
  session_id: AFFINITY,
  metadata: { within: { user_id: AFFINITY } },
  cachedContent: { use: "--cache auto|off (cachet sends the whole prefix and lets the provider cache it)" },
  cached_content: { use: "--cache auto|off (cachet sends the whole prefix and lets the provider cache it)" },
  cache_control: { use: "--cache auto|off and --cache-ttl 5m|1h (cachet places the cache breakpoints)" },
  response_format: SCHEMA_OWNER,
  text: { within: { format: SCHEMA_OWNER } },
  output_config: { within: { format: SCHEMA_OWNER } },
  generationConfig: { within: geminiGenerationConfig() },
  generation_config: { within: geminiGenerationConfig() },
};

/**
 * Gemini's generationConfig: the output schema, and candidateCount (several
 * candidates where cachet reads one). Written out: the table is built when
 * the module loads, on every run's way to its request.
 */
function geminiGenerationConfig(): Record<string, Owner> {
  return {
    responseSchema: SCHEMA_OWNER,
    responseJsonSchema: SCHEMA_OWNER,
    response_schema: SCHEMA_OWNER,
    response_json_schema: SCHEMA_OWNER,
    responseMimeType: SCHEMA_OWNER,
    response_mime_type: SCHEMA_OWNER,
    candidateCount: oneChoice("candidateCount"),
    candidate_count: oneChoice("candidate_count"),
  };
}

/**
 * The owned part a provider option `key` = `value` would replace or add to,
 * with what to use instead; undefined when the option is the user's to set.
 * A `value` that is not a plain object replaces a partly owned object whole,
 * so it is refused too.
 */
export function ownedOption(key: string, value: unknown): { part: string; use: string; why: string } | undefined {
  if (!Object.hasOwn(OWNED, key)) return undefined;
  const owned = OWNED[key]!;
  const found = (part: string, owner: Owner) => ({ part, use: owner.use, why: owner.why ?? PREFIX });
  if (!("within" in owned)) return found(key, owned);
  const subKeys = Object.keys(owned.within);
  // A value that is not a plain object replaces the whole object, owned sub-keys included.
  if (value === null || typeof value !== "object" || Array.isArray(value)) return found(key, owned.within[subKeys[0]!]!);
  const sub = subKeys.find((k) => Object.hasOwn(value, k));
  return sub === undefined ? undefined : found(`${key}.${sub}`, owned.within[sub]!);
}

/**
 * Refuses the first provider option (in sorted key order) that sets an owned
 * part of the request (see {@link ownedOption}); a null value (which drops a
 * sticky option) is never refused.
 * @throws CachetError BAD_FLAG (exit 2): one line naming the option, and a hint naming what to use instead (`-m/--model` for `-o model`)
 */
export function refuseOwnedOptions(options: Record<string, unknown>): void {
  for (const key of Object.keys(options).sort()) {
    const value = options[key];
    if (value === null || value === undefined) continue;
    const owned = ownedOption(key, value);
    if (!owned) continue;
    throw new CachetError("BAD_FLAG", `-o ${key}: cachet sets "${owned.part}" itself (${owned.why})`, { hint: `use ${owned.use} instead of -o ${key}` });
  }
}
