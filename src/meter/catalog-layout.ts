/**
 * The embedded catalog's file layout, so that a run decodes and parses only
 * the model it prices (its limits, its cost) instead of the whole catalog
 * (366 KB, ~1,150 models: decoding and parsing it cost more than the rest of
 * a short run's pricing; its bytes are read whole, which is cheap).
 * build/catalog.ts writes it; catalog.ts reads it.
 *
 *     {"alibaba":[202,22747],"anthropic":[22751,39926],…}    each provider's lines: byte offsets [start, end) in the file
 *     {
 *     "openai":{"id":"openai","name":"OpenAI",…,"models":{
 *      "gpt-5":{…},
 *      "gpt-5-mini":{…}
 *     }},
 *     "openrouter":{…}
 *     }
 *
 * Below the first line is the catalog as JSON, one line per model. A
 * provider's range covers its own line and its models' lines; a provider's
 * line starts with its quoted id, a model's line with a space and its quoted
 * id. JSON.stringify writes no raw line break inside a value, so these lines
 * are the only ones.
 */
import type { Catalog } from "./catalog.ts";

/** Byte offsets [start, end) of a provider's lines in the file. */
export type ProviderRange = [start: number, end: number];

/** An api.json-shaped catalog (provider → { …, models }) laid out as the module describes. */
export function layOutCatalog(catalog: Record<string, Record<string, unknown>>): string {
  const ranges: Record<string, ProviderRange> = {};
  const body = ["{\n"];
  let offset = 2;
  const providers = Object.entries(catalog);
  providers.forEach(([id, provider], i) => {
    const { models, ...rest } = provider;
    const head = JSON.stringify(rest);
    const lines = [`${JSON.stringify(id)}:${head === "{}" ? "{" : `${head.slice(0, -1)},`}"models":{`];
    const entries = Object.entries((models ?? {}) as Record<string, unknown>);
    entries.forEach(([model, entry], j) => lines.push(` ${JSON.stringify(model)}:${JSON.stringify(entry)}${j < entries.length - 1 ? "," : ""}`));
    const text = `${lines.join("\n")}\n`;
    const size = Buffer.byteLength(text);
    ranges[id] = [offset, offset + size];
    const close = `}}${i < providers.length - 1 ? "," : ""}\n`;
    body.push(text, close);
    offset += size + close.length;
  });
  body.push("}\n");
  // The ranges were counted from the catalog's start, which the first line (holding them, shifted) pushes down.
  let shift = 0;
  let first: string;
  for (;;) {
    first = JSON.stringify(Object.fromEntries(Object.entries(ranges).map(([id, [start, end]]) => [id, [start + shift, end + shift]])));
    if (Buffer.byteLength(first) + 1 === shift) break;
    shift = Buffer.byteLength(first) + 1;
  }
  return `${first}\n${body.join("")}`;
}

/** The byte range of each provider's lines, from the file's first line (without its line break). */
export function providerRanges(firstLine: string): Record<string, ProviderRange> {
  return JSON.parse(firstLine) as Record<string, ProviderRange>;
}

/** The whole catalog's JSON text: the file without its first line. */
export function catalogText(file: string): string {
  return file.slice(file.indexOf("\n") + 1);
}

/**
 * `{ provider: { …, models: { model } } }` from the bytes of the provider's
 * range: its line and, when the provider lists `model`, that model's line
 * (models is empty when it does not).
 */
export function providerSlice(lines: Buffer, model: string): Catalog {
  const headEnd = lines.indexOf("\n");
  const at = lines.indexOf(`\n ${JSON.stringify(model)}:`);
  let entry = "";
  if (at >= 0) {
    entry = lines.toString("utf8", at + 1, lines.indexOf("\n", at + 1));
    if (entry.endsWith(",")) entry = entry.slice(0, -1);
  }
  // The provider's line ends with `"models":{`: the model's line (its trailing comma cut) and `}}}` close it.
  return JSON.parse(`{${lines.toString("utf8", 0, headEnd)}${entry}}}}`) as Catalog;
}
