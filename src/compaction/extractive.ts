/**
 * The deterministic extractive render of a span of the log (shared/compaction.md,
 * "Deterministic extractive render"): a pure function of the messages' bytes and
 * {@link RENDER_VERSION}. Long texts are cut to head and tail lines under a
 * header giving their bytes, lines and a content hash, so the summary zone keeps
 * what happened and where to find it without the bulk.
 *
 * One canonical line format: `[user]`, `[assistant]`, `[tool_call name id]`,
 * `[tool_result id]`. Reasoning is dropped (counted only). CRLF becomes LF in the
 * render only; cuts fall on UTF-8 character boundaries (never inside a surrogate pair).
 */
import type { Block, Message } from "../context/types.ts";

/** Version of the render rules; part of every summary's content key, so a change never reuses an old render. */
export const RENDER_VERSION = 1;

/** Bytes up to which a text is kept whole. */
const VERBATIM_BYTES = 1024;
/** User text is kept whole up to this many bytes (exact instructions survive, as in Codex). */
const USER_VERBATIM_BYTES = 4096;
/** Tool-call arguments are cut at this many bytes, path and identifier fields kept whole. */
const ARGUMENT_BYTES = 512;
/** Whole-render cap: over it the oldest items degrade to one-line stubs. */
export const RENDER_MAX_BYTES = 24 * 1024;

/** Tiers: over `above` bytes keep `head` and `tail` lines, at most `cap` bytes of them. */
const TIERS = [
  { above: 8 * 1024, head: 6, tail: 4, cap: 700 },
  { above: VERBATIM_BYTES, head: 8, tail: 6, cap: 900 },
] as const;

/** Marks the render's own header: a text that already starts with it is kept as it is (idempotent). */
const MARKER = "[extractive]";

/**
 * The extractive render of `messages`, oldest first, as one text (LF line
 * ends, no trailing newline). Byte-identical for the same input and version.
 */
export function renderExtractive(messages: readonly Message[]): string {
  const items = messages.map(renderMessage);
  let total = items.reduce((n, item) => n + byteLength(item) + 1, 0);
  // Over the cap the oldest items become one-line stubs, newest kept longest.
  for (let i = 0; i < items.length && total > RENDER_MAX_BYTES; i++) {
    const stub = stubOf(messages[i]!, items[i]!);
    total -= byteLength(items[i]!) - byteLength(stub);
    items[i] = stub;
  }
  return items.join("\n");
}

/** Short hex SHA-256 of a text's UTF-8 bytes (12 hex digits). */
export function shortHash(text: string): string {
  // Bun's hasher, not node:crypto's (the same digest): node:crypto's load cost ms before every run's request.
  return new Bun.CryptoHasher("sha256").update(text).digest("hex").slice(0, 12);
}

function renderMessage(message: Message): string {
  const lines: string[] = [];
  const isUser = message.role === "user";
  let reasoning = 0;
  for (const block of message.content) {
    const line = renderBlock(block, isUser);
    if (line === undefined) reasoning += block.type === "thinking" ? byteLength(block.text) : 0;
    else lines.push(line);
  }
  const head = `[${message.role}]${message.incomplete ? " (incomplete)" : ""}${reasoning > 0 ? ` (reasoning ${reasoning} bytes dropped)` : ""}`;
  return [head, ...lines].join("\n");
}

function renderBlock(block: Block, isUser: boolean): string | undefined {
  switch (block.type) {
    case "text":
      return cut(block.text, isUser ? USER_VERBATIM_BYTES : VERBATIM_BYTES);
    case "tool_use":
      return `[tool_call ${block.name} ${block.id}] ${cutArguments(block.arguments)}`;
    case "tool_result":
      return `[tool_result ${block.toolUseId}]${block.isError ? " (error)" : ""}\n${cut(block.content, VERBATIM_BYTES)}`;
    case "image":
      return `[image ${block.mediaType} ${Math.floor((block.data.length * 3) / 4)} bytes sha=${shortHash(block.data)}]`;
    case "thinking":
      return undefined;
    case "provider": {
      // A server tool's call (its input says what it did) or result (only its kind: the content is opaque).
      const { type, name, input } = block.data;
      return `[${String(type)}${name === undefined ? "" : ` ${String(name)}`}]${input === undefined ? "" : ` ${cutArguments(JSON.stringify(input))}`}`;
    }
  }
}

/** A text within `verbatim` bytes as it is; longer, its head and tail lines under a header. */
function cut(raw: string, verbatim: number): string {
  const text = raw.replace(/\r\n/g, "\n");
  const bytes = byteLength(text);
  if (bytes <= verbatim || text.startsWith(MARKER)) return text;
  const tier = TIERS.find((t) => bytes > t.above) ?? TIERS[1];
  const lines = text.split("\n");
  const headLines = lines.slice(0, tier.head);
  const tailLines = lines.length > tier.head ? lines.slice(Math.max(tier.head, lines.length - tier.tail)) : [];
  const omitted = lines.length - headLines.length - tailLines.length;
  const half = Math.floor(tier.cap / 2);
  const head = truncateBytes(headLines.join("\n"), tailLines.length ? half : tier.cap);
  const tail = tailLines.length ? truncateBytesFromEnd(tailLines.join("\n"), half) : "";
  const header = `${MARKER} bytes=${bytes} lines=${lines.length} omitted=${omitted} sha=${shortHash(text)}`;
  return [header, head, ...(tail ? ["…", tail] : [])].join("\n");
}

/** Tool-call arguments: whole up to 512 bytes; longer, string fields cut except paths and identifiers. */
function cutArguments(text: string): string {
  if (byteLength(text) <= ARGUMENT_BYTES) return text;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return `${truncateBytes(text, ARGUMENT_BYTES)}… (${byteLength(text)} bytes)`;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return `${truncateBytes(text, ARGUMENT_BYTES)}… (${byteLength(text)} bytes)`;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value as Record<string, unknown>)) {
    const keep = /path|file|id|name|url|query/i.test(key);
    out[key] = typeof field === "string" && !keep && byteLength(field) > 64 ? `${truncateBytes(field, 64)}… (${byteLength(field)} bytes sha=${shortHash(field)})` : field;
  }
  return JSON.stringify(out);
}

function stubOf(message: Message, rendered: string): string {
  const first = rendered.split("\n", 2)[1] ?? "";
  return `[${message.role}] (stub) ${truncateBytes(first, 120)} bytes=${byteLength(rendered)} sha=${shortHash(rendered)}`;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** UTF-8 bytes of a text. */
export function byteLength(text: string): number {
  return encoder.encode(text).length;
}

/** The longest prefix of `text` within `max` UTF-8 bytes, cut on a character boundary. */
export function truncateBytes(text: string, max: number): string {
  const bytes = encoder.encode(text);
  if (bytes.length <= max) return text;
  let end = max;
  // Back off continuation bytes (10xxxxxx) so the cut never splits a character.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return decoder.decode(bytes.subarray(0, end));
}

/** The longest suffix of `text` within `max` UTF-8 bytes, cut on a character boundary. */
function truncateBytesFromEnd(text: string, max: number): string {
  const bytes = encoder.encode(text);
  if (bytes.length <= max) return text;
  let start = bytes.length - max;
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
  return decoder.decode(bytes.subarray(start));
}
