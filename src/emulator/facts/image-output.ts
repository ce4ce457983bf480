/**
 * Image output of Gemini image models, as the emulator reproduces it: each
 * generated image is one `inlineData` part (`mimeType`, base64 `data`) of the
 * candidate, billed as output tokens reported under
 * `usageMetadata.candidatesTokensDetails` with modality `IMAGE`.
 *
 * Tokens per image (the pricing page's per-image figures):
 * - Gemini 3 Pro Image: 1,120 for a 1K or 2K image, 2,000 for a 4K image
 *   (`generationConfig.imageConfig.imageSize`, default `1K`);
 * - Gemini 2.5 Flash Image and other image models: 1,290 (up to 1024×1024 px).
 * @see https://ai.google.dev/gemini-api/docs/image-generation (inlineData parts, imageConfig.imageSize)
 * @see https://ai.google.dev/gemini-api/docs/pricing (output tokens per image)
 */

/** The image the emulator "generates": a 1×1 transparent PNG, base64. */
export const EMULATED_IMAGE = {
  mimeType: "image/png",
  data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
} as const;

/** Output tokens one image costs on `model` at the requested `imageSize` (`1K`, `2K`, `4K`). */
export function imageOutputTokens(model: string, imageSize: unknown): number {
  if (/^gemini-3(\.\d+)?-pro-image/.test(model)) return imageSize === "4K" ? 2000 : 1120;
  return 1290;
}
