import { expect, test } from "bun:test";
import { stickyCache } from "./sticky-cache.ts";

test("a flag wins, then the session's last request, then the config, then auto / 5m", () => {
  const last = { cacheMode: "auto" as const, cacheTtl: "1h" as const };
  expect(stickyCache({}, null, {}).settings).toEqual({ mode: "auto", ttl: "5m" });
  expect(stickyCache({}, null, { cache: { ttl: "1h", mode: "off" } }).settings).toEqual({ mode: "off", ttl: "1h" });
  expect(stickyCache({}, last, { cache: { ttl: "5m" } })).toEqual({ settings: { mode: "auto", ttl: "1h" }, changes: [] });
  expect(stickyCache({ ttl: "5m", mode: "off" }, last, {})).toEqual({ settings: { mode: "off", ttl: "5m" }, changes: ["cache mode auto → off", "cache TTL 1h → 5m"] });
});
