/**
 * Tool-call arguments as an object, for wires that take one (Anthropic
 * `tool_use.input`, Gemini `functionCall.args`). JSON.parse keeps the model's
 * key order, so the object serializes back to the model's bytes (minus
 * insignificant whitespace) on every request (CASES.md case 14). Text that is
 * not a JSON object (a cut stream) becomes `{}`, the same way every time.
 */
export function parseArguments(raw: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(raw);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
