/**
 * Stage "finish": a structured answer is validated, the sink gets the closing
 * `answer`, `error` and `done` events (an answer ending in tool calls: `done`
 * carries the hint that answers them all), and the turn's result is returned
 * (or its failure thrown).
 */
import type { Message } from "../../context/types.ts";
import type { CachetError } from "../../errors.ts";
import { finishNotice, structuredFinishError } from "../finish-check.ts";
import type { Runtime } from "../runtime.ts";
import { toolResultFlags } from "../tool-result-hint.ts";
import type { TurnOptions, TurnResult } from "../turn-types.ts";
import type { AssembledContext } from "./context.ts";
import type { Recorded } from "./record.ts";
import type { SendOutcome } from "./send.ts";

/**
 * Ends the turn on the sink.
 * @throws the provider failure of `sent`; CachetError ANSWER_INVALID when a `--schema` answer (not a tool-call turn) does not validate
 */
export async function finishTurn(runtime: Runtime, options: TurnOptions, assembled: AssembledContext, sent: SendOutcome, recorded: Recorded): Promise<TurnResult> {
  const { sessionId, context } = assembled;
  const { result, failure } = sent;
  const { row, report, priced } = recorded;
  const requestId = row.id;
  const content = result.content;
  let answer: unknown;
  // A tool call is not an answer: only a turn that finished with an answer is validated against the schema.
  const toolTurn = content.some((block) => block.type === "tool_use");
  if (failure === undefined && context.prefix.schema && !toolTurn) {
    try {
      // The finish reason first: an answer cut at the output limit or refused is not a schema problem (CASES.md case 41).
      const cut = structuredFinishError(result.finish, options.generation.maxTokens, !runtime.ephemeral);
      if (cut) throw cut;
      answer = await runtime.checkAnswer(row.protocol, context.prefix.schema, content);
    } catch (error) {
      const e = error as CachetError;
      options.sink.event({ type: "error", code: e.code ?? "INTERNAL", message: e.message, ...(e.hint ? { hint: e.hint } : {}), incomplete: false });
      options.sink.event({ type: "done", session: sessionId, request_id: requestId, finish_reason: result.finish?.reason ?? null, incomplete: false });
      await options.sink.end();
      throw error;
    }
    options.sink.event({ type: "answer", value: answer });
  }

  if (failure !== undefined) {
    const e = failure as { code?: string; message?: string; hint?: string };
    // Incomplete: a partial answer was stored; with none, the prompt was rolled back and nothing is marked.
    const incomplete = content.length > 0;
    options.sink.event({ type: "error", code: e.code ?? "INTERNAL", message: e.message ?? String(failure), ...(e.hint ? { hint: e.hint } : {}), incomplete });
    options.sink.event({ type: "done", session: sessionId, request_id: requestId, finish_reason: null, incomplete });
    await options.sink.end();
    throw failure;
  }
  // A cut or refused answer reads like an answer on stdout: the finish reason is said on stderr (a --schema one failed above).
  const cut = result.finish?.reason === "length";
  const modelOutput = cut ? (await runtime.modelLimits(sent.catalogRef)).output : undefined;
  const notice = finishNotice(result.finish, { maxTokens: options.generation.maxTokens, outputTokens: row.usage.output, modelOutput });
  if (notice) options.notice?.(notice);
  // Answered by a next turn of this session (nothing is stored with --no-store): every pending call at once, or the turn is refused.
  const calls = runtime.ephemeral ? [] : content.flatMap((block) => (block.type === "tool_use" ? [block.id] : []));
  const hint = calls.length > 0 ? `answer ${calls.length === 1 ? "it" : `all ${calls.length} in one turn`}: ${toolResultFlags(calls, sessionId)}` : undefined;
  options.sink.event({ type: "done", session: sessionId, request_id: requestId, finish_reason: result.finish?.reason ?? null, incomplete: false, ...(hint ? { hint } : {}) });
  await options.sink.end();
  const message: Message = { id: sent.answer.id, role: "assistant", content };
  return { sessionId, requestId, message, report, costUsd: priced.costUsd, finishReason: result.finish?.reason ?? null, incomplete: false, row, ...(answer !== undefined ? { answer } : {}) };
}
