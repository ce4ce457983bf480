/**
 * The service tier an OpenAI response reports, from the tier the request
 * asked for: `flex`, `priority` and `scale` are served as asked; `auto`,
 * `default` or none are served at `default`. The emulator has capacity for
 * every tier, so it never downgrades.
 * @see https://platform.openai.com/docs/api-reference/chat/create (service_tier: the response body includes the tier actually used)
 * @see https://platform.openai.com/docs/guides/flex-processing
 */
export function servedTier(requested: unknown): string {
  return requested === "flex" || requested === "priority" || requested === "scale" ? requested : "default";
}
