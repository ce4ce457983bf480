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
 * Serializes a wire body. The bytes are exactly those of
 * `JSON.stringify(body)` in UTF-8; call once per attempt (a stream is read once).
 * @throws TypeError as JSON.stringify does (a cycle, a BigInt).
 */
export function serializeBody(body: Record<string, unknown>): SerializedBody {
  if (!bodyHasLongString(body)) return { body: JSON.stringify(body), headers: { "content-type": "application/json" } };
  return { body: bodyStream(body), headers: { "content-type": "application/json", "content-length": String(jsonByteLength(body)) } };
}

/**
 * hasLongString of a body whose lists (messages, input, contents) are a long
 * session's history: their elements at the places they held in the
 * conversation's last request cost a pointer compare each (src/list-memo.ts).
 */
function bodyHasLongString(body: Record<string, unknown>): boolean {
  for (const key in body) {
    const value = body[key];
    if (Array.isArray(value) ? longElements.map(value).total > 0 : hasLongString(value)) return true;
  }
  return false;
}

// Elements never change once rendered (the render memo's are shared between requests); weight 1: holds a long string.
const longElements = new ListMemo<unknown, boolean>((element) => hasLongString(element), { weight: (long) => (long ? 1 : 0) });

function bodyStream(body: Record<string, unknown>): ReadableStream<Uint8Array> {
  const pieces = jsonPieces(body, { sliceChars: BATCH_CHARS });
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
