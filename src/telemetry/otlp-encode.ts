/**
 * Encodes ledger spans as an OTLP ExportTraceServiceRequest with the official
 * OpenTelemetry JS serializers (protobuf or JSON over HTTP). Loaded lazily by
 * the export command only: the OpenTelemetry packages stay off the start-up
 * path of every other command.
 *
 * @see https://opentelemetry.io/docs/specs/otlp/#otlphttp
 */
import type { HrTime, SpanContext } from "@opentelemetry/api";
import { JsonTraceSerializer, ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { version } from "../../package.json";
import type { LedgerSpan } from "./ledger-span.ts";

/** OTLP/HTTP body encodings. */
export type OtlpFormat = "protobuf" | "json";

/** Content-Type of each encoding, as the OTLP/HTTP spec names them. */
export const OTLP_CONTENT_TYPE: Record<OtlpFormat, string> = { protobuf: "application/x-protobuf", json: "application/json" };

/**
 * The request body carrying `spans`, under one resource (`service.name` =
 * cachet) and one instrumentation scope.
 * @throws Error when the serializer cannot encode the spans (a bug: attributes are plain values)
 */
export function encodeSpans(spans: LedgerSpan[], format: OtlpFormat): Uint8Array {
  const resource = resourceFromAttributes({ "service.name": "cachet", "service.version": version });
  const scope = { name: "cachet", version };
  const readable = spans.map((span): ReadableSpan => {
    const context: SpanContext = { traceId: span.traceId, spanId: span.spanId, traceFlags: 1 };
    const start = hrTime(span.startMs);
    const end = hrTime(span.endMs);
    return {
      name: span.name,
      kind: 2, // SpanKind.CLIENT: a call to a provider
      spanContext: () => context,
      startTime: start,
      endTime: end,
      duration: hrTime(span.endMs - span.startMs),
      status: span.failed ? { code: 2, ...(span.errorMessage ? { message: span.errorMessage } : {}) } : { code: 1 },
      attributes: span.attributes,
      links: [],
      events: [],
      ended: true,
      resource,
      instrumentationScope: scope,
      droppedAttributesCount: 0,
      droppedEventsCount: 0,
      droppedLinksCount: 0,
    };
  });
  const body = (format === "json" ? JsonTraceSerializer : ProtobufTraceSerializer).serializeRequest(readable);
  if (!body) throw new Error(`the OTLP ${format} serializer returned nothing for ${spans.length} spans`);
  return body;
}

function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}
