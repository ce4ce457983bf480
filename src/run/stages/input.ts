/**
 * Stage "resolve the input": the model, the provider adapter, the stable
 * prefix and the user message of a turn, from its options and the session as
 * stored. All validation of the turn's input happens here, before anything is
 * stored or sent.
 */
import { newId } from "../../context/ids.ts";
import { DROPPED_RESULT, pendingCalls } from "../../context/invariants.ts";
import { buildPrefix } from "../../context/prefix.ts";
import type { Block, Message, StablePrefix } from "../../context/types.ts";
import { CachetError } from "../../errors.ts";
import type { LoadedSession } from "../../session/types.ts";
import { DEFAULT_MODEL, parseModelRef, resolveProvider } from "../resolve-provider.ts";
import type { Runtime } from "../runtime.ts";
import { stickyGeneration, type StickyGeneration } from "../sticky-generation.ts";
import { toolResultFlags } from "../tool-result-hint.ts";
import type { TurnOptions } from "../turn-types.ts";

export { DEFAULT_MODEL };

/** The turn's `provider/model`: the flag's, else the session's, else the config's, else {@link DEFAULT_MODEL}. */
export function modelRefOf(flag: string | undefined, session: { model: string } | undefined, config: { model?: string }): string {
  return flag ?? session?.model ?? config.model ?? DEFAULT_MODEL;
}

/** A turn's validated input. */
export interface TurnInput {
  /** `provider/model` as given or inherited. */
  modelRef: string;
  ref: { provider: string; model: string };
  resolved: ReturnType<typeof resolveProvider>;
  /** The stable prefix this turn renders with (the session's unless the options change it). */
  prefix: StablePrefix;
  /** The new user message (text and/or a tool result). */
  userMessage: Message;
  /** The generation settings this turn sends: its flags over the session's (sticky-generation.ts). */
  generation: StickyGeneration;
}

/**
 * Resolves a turn's input against the session it continues (undefined for a new session).
 * @throws CachetError for an unknown provider or model, a bad `--tool-result` id, or nothing to send
 */
export function resolveInput(runtime: Runtime, options: TurnOptions, loaded: LoadedSession | undefined): TurnInput {
  const modelRef = modelRefOf(options.model, loaded?.session, runtime.config);
  const ref = parseModelRef(modelRef);
  // A session with nothing in its log yet (a named session this turn starts) has no settings to continue: its first flags are no change.
  const continued = loaded !== undefined && loaded.messages.length > 0 ? loaded : undefined;
  const generation = stickyGeneration(options.generation, continued && { generation: continued.generation, provider: parseModelRef(continued.session.model).provider }, ref.provider);
  const resolved = resolveProvider({
    host: runtime.host,
    config: runtime.config,
    ref,
    baseUrl: options.baseUrl,
    emulatorUrl: runtime.emulatorUrl,
    options: generation.settings.providerOptions,
    env: runtime.env,
    fetch: runtime.fetch,
  });
  const prefix = buildPrefix({
    system: options.system ?? loaded?.prefix.prefix.system.map((s) => s.text) ?? [],
    tools: options.tools ?? loaded?.prefix.prefix.tools ?? [],
    schema: options.schema ?? loaded?.prefix.prefix.schema,
  });
  return { modelRef, ref, resolved, prefix, userMessage: buildUserMessage(options, loaded), generation };
}

/**
 * The user message of this turn: the results of the pending tool calls
 * (given, or with `--drop-pending` the stored "moved on" result), then the
 * prompt. Every pending call is answered, in call order, or nothing is sent
 * (src/context/invariants.ts; CASES.md case 39).
 * @throws CachetError BAD_FLAG (exit 2) for a result whose id is not pending,
 *   or for a prompt or results leaving pending calls unanswered (the hint names their ids);
 *   MISSING_ARGUMENT when there is nothing to send.
 */
function buildUserMessage(options: TurnOptions, loaded: LoadedSession | undefined): Message {
  const content: Block[] = [];
  const pending = pendingCalls(loaded?.messages ?? []);
  const given = new Map((options.toolResults ?? []).map((r) => [r.id, r]));
  for (const id of given.keys()) {
    if (!pending.some((call) => call.id === id)) {
      throw new CachetError("BAD_FLAG", `--tool-result ${id}: the session's last answer has no pending tool call with that id`, {
        hint: pending.length ? `pending: ${pending.map((c) => c.id).join(", ")}` : "pass the id printed in the tool_call event of the previous turn (see `cachet export`)",
      });
    }
  }
  const unanswered = pending.filter((call) => !given.has(call.id));
  if (unanswered.length > 0 && !options.dropPending) {
    const ids = unanswered.map((c) => c.id).join(", ");
    const one = unanswered.length === 1;
    const what = given.size > 0 ? `${unanswered.length} of the ${pending.length} pending tool calls ${one ? "has" : "have"} no result` : `the last answer has ${one ? "a pending tool call" : `${pending.length} pending tool calls`}`;
    throw new CachetError("BAD_FLAG", `${what}: ${ids}; the provider refuses a new turn that leaves ${one ? "it" : "them"} unanswered`, {
      hint: `answer ${pending.length === 1 ? "it" : `all ${pending.length} in one turn`}: ${toolResultFlags(pending.map((c) => c.id), loaded!.session.id)}; or pass --drop-pending to answer ${given.size > 0 ? "the rest" : one ? "it" : "them"} with "${DROPPED_RESULT}"`,
    });
  }
  for (const call of pending) {
    const result = given.get(call.id);
    content.push(
      result
        ? { type: "tool_result", toolUseId: call.id, content: result.content, ...(result.isError ? { isError: true } : {}) }
        : { type: "tool_result", toolUseId: call.id, content: DROPPED_RESULT, isError: true },
    );
  }
  // Whitespace alone is no prompt: Anthropic refuses a whitespace-only text block, and the renders that drop it leave an empty request the others refuse.
  const blank = options.prompt !== undefined && options.prompt.trim() === "";
  if (options.prompt !== undefined && !blank) content.push({ type: "text", text: options.prompt });
  if (content.length === 0) {
    throw new CachetError("MISSING_ARGUMENT", blank ? "nothing to send: the PROMPT and stdin are only whitespace" : "nothing to send: no PROMPT argument and nothing on stdin", {
      hint: 'e.g. cachet "hello", or pipe text in: git diff | cachet "write the commit message"',
    });
  }
  return { id: newId("m"), role: "user", content };
}
