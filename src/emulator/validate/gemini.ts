/**
 * What Gemini `generateContent` refuses before generating (400
 * INVALID_ARGUMENT), with its messages: roles, empty parts lists and empty
 * text parts, function call/response turns (a call turn follows a user or
 * function-response turn; the next turn answers every call of it), and the
 * thought signatures Gemini 3 models require back on the first function
 * call of each model step of the current turn. Unknown field names (top
 * level and in `generationConfig`) are refused as the API's JSON parser does,
 * and `temperature` outside the model's documented range.
 * @see https://ai.google.dev/api/generate-content (request body, GenerationConfig)
 * @see https://ai.google.dev/gemini-api/docs/function-calling
 * @see https://ai.google.dev/gemini-api/docs/thought-signatures
 */
import { EmulatorRequestError, type FieldViolation, invalidRequest } from "../request-error.ts";

type Content = { role?: string; parts?: Record<string, unknown>[] };

/**
 * True for models that issue thought signatures and require them back
 * (Gemini 3 and later).
 */
export function requiresThoughtSignatures(model: string): boolean {
  const match = /gemini-(\d+)/.exec(model.toLowerCase());
  return match !== null && Number(match[1]) >= 3;
}

/** The request body's fields (GenerateContentRequest; `model` is also the path's). */
const REQUEST_FIELDS = new Set(["model", "contents", "tools", "toolConfig", "safetySettings", "systemInstruction", "generationConfig", "cachedContent"]);

/** GenerationConfig's fields (v1beta). */
const GENERATION_FIELDS = new Set([
  "stopSequences",
  "responseMimeType",
  "responseSchema",
  "responseJsonSchema",
  "responseJsonSchemaOrdered",
  "responseModalities",
  "candidateCount",
  "maxOutputTokens",
  "temperature",
  "topP",
  "topK",
  "seed",
  "presencePenalty",
  "frequencyPenalty",
  "responseLogprobs",
  "logprobs",
  "enableEnhancedCivicAnswers",
  "speechConfig",
  "thinkingConfig",
  "imageConfig",
  "mediaResolution",
]);

/** Proto JSON reads a field by its lowerCamelCase name or its original snake_case one. */
const camel = (name: string) => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/**
 * Refuses field names the API does not know, all at once as its JSON parser
 * does: one line per unknown name, `at 'generation_config'` for one inside
 * the generation config. Checked before anything else is read.
 * @throws EmulatorRequestError 400 INVALID_ARGUMENT "Invalid JSON payload received. Unknown name …: Cannot find field.", with a BadRequest field violation per name
 */
export function checkGeminiFields(body: Record<string, unknown>): void {
  const violations: FieldViolation[] = [];
  for (const key of Object.keys(body)) {
    if (!REQUEST_FIELDS.has(camel(key))) violations.push({ description: `Invalid JSON payload received. Unknown name ${JSON.stringify(key)}: Cannot find field.` });
  }
  const config = body.generationConfig ?? body.generation_config;
  if (config !== null && typeof config === "object" && !Array.isArray(config)) {
    for (const key of Object.keys(config)) {
      if (!GENERATION_FIELDS.has(camel(key))) {
        violations.push({ field: "generation_config", description: `Invalid JSON payload received. Unknown name ${JSON.stringify(key)} at 'generation_config': Cannot find field.` });
      }
    }
  }
  if (violations.length > 0) throw new EmulatorRequestError(400, "invalid_request_error", violations.map((v) => v.description).join("\n"), null, null, violations);
}

/**
 * The largest temperature a model accepts: 1.0 for Gemini 1.0, 2.0 for later
 * models (the Models API's `maxTemperature`).
 * @see https://ai.google.dev/api/models (Model.maxTemperature)
 * @see https://cloud.google.com/vertex-ai/generative-ai/docs/learn/prompts/adjust-parameter-values (temperature range per model)
 */
export function maxTemperature(model: string): number {
  return /^gemini-(1\.0-|pro(-vision)?$)/.test(model.toLowerCase()) ? 1 : 2;
}

/**
 * Checks a generateContent body.
 * @throws EmulatorRequestError 400 (rendered INVALID_ARGUMENT) worded as the API does.
 */
export function validateGemini(body: Record<string, unknown>, model: string): void {
  const temperature = (body.generationConfig as { temperature?: unknown } | undefined)?.temperature;
  const max = maxTemperature(model);
  if (typeof temperature === "number" && (temperature < 0 || temperature > max)) {
    throw invalidRequest(`Unable to submit request because it has a temperature value of ${temperature} but the supported range is from 0 (inclusive) to ${max + 0.0001} (exclusive). Update the value and try again.`);
  }
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
