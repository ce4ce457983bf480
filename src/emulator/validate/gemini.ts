/**
 * What Gemini `generateContent` refuses before generating (400
 * INVALID_ARGUMENT), with its messages: roles, empty parts lists and empty
 * text parts, function call/response turns (a call turn follows a user or
 * function-response turn; the next turn answers every call of it), and the
 * thought signatures Gemini 3 models require back on the first function
 * call of each model step of the current turn.
 * @see https://ai.google.dev/gemini-api/docs/function-calling
 * @see https://ai.google.dev/gemini-api/docs/thought-signatures
 */
import { invalidRequest } from "../request-error.ts";

type Content = { role?: string; parts?: Record<string, unknown>[] };

/**
 * True for models that issue thought signatures and require them back
 * (Gemini 3 and later).
 */
export function requiresThoughtSignatures(model: string): boolean {
  const match = /gemini-(\d+)/.exec(model.toLowerCase());
  return match !== null && Number(match[1]) >= 3;
}

/**
 * Checks a generateContent body.
 * @throws EmulatorRequestError 400 (rendered INVALID_ARGUMENT) worded as the API does.
 */
export function validateGemini(body: Record<string, unknown>, model: string): void {
  const contents = body.contents as Content[];
  if (contents.length === 0) throw invalidRequest("* GenerateContentRequest.contents: contents is not specified\n");
  contents.forEach((content, i) => {
    if (content.role !== undefined && content.role !== "user" && content.role !== "model") throw invalidRequest("Please use a valid role: user, model.");
    const parts = content.parts ?? [];
    if (parts.length === 0) throw invalidRequest(`* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.\n`);
    parts.forEach((part, j) => {
      if (Object.keys(part).every((key) => key === "thought" || key === "thoughtSignature")) {
        throw invalidRequest(`* GenerateContentRequest.contents[${i}].parts[${j}].data: required oneof field 'data' must have one initialized field\n`);
      }
      if (part.text === "" && part.thought !== true && Object.keys(part).length === 1) {
        throw invalidRequest("Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again.");
      }
    });
  });
  checkFunctionTurns(contents);
  if (requiresThoughtSignatures(model)) checkSignatures(contents);
}

const calls = (content: Content | undefined) => (content?.parts ?? []).filter((p) => p.functionCall !== undefined);
const responses = (content: Content | undefined) => (content?.parts ?? []).filter((p) => p.functionResponse !== undefined);

function checkFunctionTurns(contents: Content[]): void {
  contents.forEach((content, i) => {
    const previous = contents[i - 1];
    if (calls(content).length > 0 && previous !== undefined && previous.role === "model") {
      throw invalidRequest("Please ensure that function call turn comes immediately after a user turn or after a function response turn.");
    }
    if (responses(content).length > 0 && calls(previous).length === 0) {
      throw invalidRequest("Please ensure that function response turn comes immediately after a function call turn.");
    }
    const next = contents[i + 1];
    if (calls(content).length > 0 && next !== undefined && responses(next).length !== calls(content).length) {
      throw invalidRequest("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.");
    }
  });
}

/**
 * The current turn starts after the last user content holding no function
 * response; in it, the first function call part of each model content must
 * carry the signature the model issued.
 */
function checkSignatures(contents: Content[]): void {
  let start = 0;
  contents.forEach((content, i) => {
    if (content.role !== "model" && responses(content).length === 0) start = i;
  });
  for (let i = start; i < contents.length; i++) {
    const first = calls(contents[i])[0];
    if (first && typeof first.thoughtSignature !== "string") {
      const name = String((first.functionCall as { name?: unknown }).name);
      throw invalidRequest(
        `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${name}\` , position ${i + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`,
      );
    }
  }
}
