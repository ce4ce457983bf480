/**
 * Stage "resolve the input": the model, the provider adapter, the stable
 * prefix and the user message of a turn, from its options and the session as
 * stored. All validation of the turn's input happens here, before anything is
 * stored or sent.
 */
import { newId } from "../../context/ids.ts";
import { buildPrefix } from "../../context/prefix.ts";
import type { Block, Message, StablePrefix } from "../../context/types.ts";
import { CachetError } from "../../errors.ts";
import type { LoadedSession } from "../../session/types.ts";
import { parseModelRef, resolveProvider } from "../resolve-provider.ts";
import type { Runtime } from "../runtime.ts";
import type { TurnOptions } from "../turn-types.ts";

/** The model used when neither flag, session nor config names one. */
export const DEFAULT_MODEL = "anthropic/claude-sonnet-4-6";

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
}

/**
 * Resolves a turn's input against the session it continues (undefined for a new session).
 * @throws CachetError for an unknown provider or model, a bad `--tool-result` id, or nothing to send
 */
export function resolveInput(runtime: Runtime, options: TurnOptions, loaded: LoadedSession | undefined): TurnInput {
  const modelRef = options.model ?? loaded?.session.model ?? runtime.config.model ?? DEFAULT_MODEL;
  const ref = parseModelRef(modelRef);
  const resolved = resolveProvider({
    host: runtime.host,
    config: runtime.config,
    ref,
    baseUrl: options.baseUrl,
    emulatorUrl: runtime.emulatorUrl,
    options: options.generation.providerOptions,
    env: runtime.env,
    fetch: runtime.fetch,
  });
  const prefix = buildPrefix({
    system: options.system ?? loaded?.prefix.prefix.system.map((s) => s.text) ?? [],
    tools: options.tools ?? loaded?.prefix.prefix.tools ?? [],
    schema: options.schema ?? loaded?.prefix.prefix.schema,
  });
  return { modelRef, ref, resolved, prefix, userMessage: buildUserMessage(options, loaded) };
}

function buildUserMessage(options: TurnOptions, loaded: LoadedSession | undefined): Message {
  const content: Block[] = [];
  if (options.toolResult) {
    const { id } = options.toolResult;
    const last = loaded?.messages.at(-1);
    const call = last?.role === "assistant" ? last.content.find((b) => b.type === "tool_use" && b.id === id) : undefined;
    if (!call) {
      throw new CachetError("BAD_FLAG", `--tool-result ${id}: the session's last answer has no tool call with that id`, {
        hint: "pass the id printed in the tool_call event of the previous turn (see `cachet export`)",
      });
    }
    content.push({ type: "tool_result", toolUseId: id, content: options.toolResult.content, ...(options.toolResult.isError ? { isError: true } : {}) });
  }
  if (options.prompt !== undefined && options.prompt !== "") content.push({ type: "text", text: options.prompt });
  if (content.length === 0) {
    throw new CachetError("MISSING_ARGUMENT", "nothing to send: no PROMPT argument and nothing on stdin", {
      hint: 'e.g. cachet "hello", or pipe text in: git diff | cachet "write the commit message"',
    });
  }
  return { id: newId("m"), role: "user", content };
}
