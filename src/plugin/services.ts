/**
 * Services the core hands to plugins through `api.services`, so a bundled
 * third-party plugin does not need its own copy of cachet's internals.
 */
import { canonicalJson, canonicalize } from "../wire/canonical-json.ts";
import { hashJson } from "../wire/hash.ts";
import { serializeBody } from "../wire/request-body.ts";
import { CachetError, ProviderError } from "../errors.ts";
import { renderMemo } from "./render-memo.ts";

/** The helpers in `api.services`. */
export interface PluginServices {
  /** Canonical JSON (sorted keys, no whitespace). */
  canonicalJson: typeof canonicalJson;
  /** Deep copy with sorted keys, for bodies serialized by an SDK. */
  canonicalize: typeof canonicalize;
  /** 64-bit content hash (16 hex digits) of a value's canonical JSON. */
  hashJson: typeof hashJson;
  /**
   * A wire body serialized once for an SDK's raw request (`client.post(path,
   * { body, headers })`): the JSON text, or a stream of its bytes for a body
   * holding a huge string, so the request is never built as several whole
   * copies of the input. Call once per attempt.
   */
  serializeBody: typeof serializeBody;
  /** cachet's base error (code, hint, cause). */
  CachetError: typeof CachetError;
  /** Error for provider failures (status, retryable, retryAfterMs). */
  ProviderError: typeof ProviderError;
  /**
   * A memo of an adapter's log renders (since API 1.2), so each turn renders only the messages
   * added since the last one (render-memo.ts): `renderMemo(renderMessage)` once
   * per provider in `setup`, then `memo.render(log, start)` in the adapters' `render`.
   */
  renderMemo: typeof renderMemo;
}

/** The services object handed to every plugin. */
export const pluginServices: PluginServices = Object.freeze({
  canonicalJson,
  canonicalize,
  hashJson,
  serializeBody,
  CachetError,
  ProviderError,
  renderMemo,
});
