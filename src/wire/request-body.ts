/**
 * A wire body serialized once, for the SDK to send as it is: adapters pass
 * it to the SDK's raw request (`client.post(path, { body })`), which sends a
 * string or a stream verbatim instead of JSON.stringify-ing the body itself.
 * A body holding a huge string (a 500 MB stdin) is a stream of its UTF-8
 * bytes, written slice by slice as the socket takes them, with its length
 * announced up front so the request is not chunked.
 */
import { ListMemo } from "../list-memo.ts";
import { hasLongString, jsonByteLength, jsonPieces } from "./json-pieces.ts";

/** A serialized JSON request body and the headers that describe it. */
export interface SerializedBody {
  /** `JSON.stringify(body)`: a string, or for a body holding a huge string a stream of its UTF-8 bytes (single use). */
  body: string | ReadableStream<Uint8Array>;
  /** `content-type: application/json`; for a stream also `content-length` (bytes). */
  headers: Record<string, string>;
}

/** Pieces are encoded in batches of about this many code units, and a long string is sliced to this length (each slice leaves its escaped and encoded copies behind until collected). */
const BATCH_CHARS = 1 << 18;

/**
 * Full collections while the body's long string streams: twice jsonPieces' default, as often as once a batch. The
 * stream is the last step of a huge turn, its slices' copies (and the chunks the socket has not taken yet) beside
 * all the turn holds: with 10 MiB of non-ASCII text it made the turn's peak, three batches' copies (about 5 MB)
 * over the rest (test/bench/big-stdin.ts). At most 16 more collections a request, milliseconds each.
 */
const BODY_COLLECTIONS = 32;

/**
 * Serializes a wire body. The bytes are exactly those of
 * `JSON.stringify(body)` in UTF-8; call once per attempt (a stream is read once).
 * The elements of the body's lists (messages, input, contents: a long
 * session's history) are serialized once each: one at the place it held in
 * the conversation's last request is the same object, never changed in place
 * (the render memo's, shared between requests; a strategy marks a copy,
 * `request:before` handlers get a copy of the whole request), and its JSON
 * text is reused (src/list-memo.ts), so a turn serializes its new elements.
 * @throws TypeError as JSON.stringify does (a cycle, a BigInt).
 */
export function serializeBody(body: Record<string, unknown>): SerializedBody {
  const json = smallBodyJson(body);
  if (json !== undefined) return { body: json, headers: { "content-type": "application/json" } };
  return { body: bodyStream(body), headers: { "content-type": "application/json", "content-length": String(jsonByteLength(body)) } };
}

/** `JSON.stringify(body)`, or undefined when the body holds a long string (hasLongString): that one is streamed. */
function smallBodyJson(body: Record<string, unknown>): string | undefined {
  let json = "{";
  for (const key of Object.keys(body)) {
    const value = body[key];
    let member: string | undefined;
    if (Array.isArray(value)) {
      member = listJson(value);
      if (member === undefined) return undefined;
    } else {
      if (hasLongString(value)) return undefined;
      // Left out as JSON.stringify leaves them out: undefined, a function, a symbol.
      member = JSON.stringify(value);
      if (member === undefined) continue;
    }
    json += `${json.length > 1 ? "," : ""}${JSON.stringify(key)}:${member}`;
  }
  return `${json}}`;
}

/**
 * The JSON text of a list, or undefined when an element holds a long string.
 * The elements' texts are kept joined in blocks of {@link BLOCK}, per
 * conversation: the blocks before the first element whose text changed are
 * taken over, the others joined anew, and the list's text is a rope of the
 * blocks, copied once, when the body is written (slicing a kept text would copy it).
 */
function listJson(list: readonly unknown[]): string | undefined {
  const json = elementJson.map(list);
  const { results, changedFrom } = json;
  if (json.total > 0) {
    joined.delete(json);
    return undefined;
  }
  let blocks = joined.get(json);
  if (blocks === undefined) {
    blocks = [];
    joined.set(json, blocks);
  }
  const count = Math.ceil(results.length / BLOCK);
  for (let b = Math.min(Math.floor(changedFrom / BLOCK), blocks.length); b < count; b++) blocks[b] = results.slice(b * BLOCK, (b + 1) * BLOCK).join(",");
  blocks.length = count;
  let text = "[";
  for (let b = 0; b < count; b++) text += b > 0 ? `,${blocks[b]}` : blocks[b];
  return `${text}]`;
}

/** Elements a block of a list's text joins. */
const BLOCK = 64;

// Per conversation's list (the memo's record of it): its elements' texts joined by blocks.
const joined = new WeakMap<object, string[]>();

/** An element holding a long string: it is not written out here. */
const LONG = "";

// Each element's JSON text (as an array element: null for what JSON leaves out), or LONG, weighing 1.
const elementJson = new ListMemo<unknown, string>((element) => (hasLongString(element) ? LONG : (JSON.stringify(element) ?? "null")), { weight: (json) => (json === LONG ? 1 : 0) });

function bodyStream(body: Record<string, unknown>): ReadableStream<Uint8Array> {
  const pieces = jsonPieces(body, { sliceChars: BATCH_CHARS, collections: BODY_COLLECTIONS, collectAfterChars: BATCH_CHARS });
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      let batch = "";
      for (let next = pieces.next(); ; next = pieces.next()) {
        if (next.done) {
          if (batch) controller.enqueue(encoder.encode(batch));
          controller.close();
          return;
        }
        batch += next.value;
        if (batch.length >= BATCH_CHARS) break;
      }
      controller.enqueue(encoder.encode(batch));
    },
    cancel() {
      pieces.return(undefined);
    },
  });
}
