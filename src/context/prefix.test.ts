import { expect, test } from "bun:test";
import { hashJson } from "../wire/hash.ts";
import { buildPrefix, prefixChange } from "./prefix.ts";
import type { StablePrefix } from "./types.ts";

const order = { type: "object", properties: { total: { type: "number" } }, required: ["total"] };

test("the same schema content is the same prefix whatever its name; a different schema is a change", () => {
  const named = buildPrefix({ system: ["be brief"], tools: [], schema: { name: "order", schema: order } });
  const renamed = buildPrefix({ system: ["be brief"], tools: [], schema: { name: "output", schema: { required: ["total"], properties: { total: { type: "number" } }, type: "object" } } });
  expect(renamed.fingerprint).toBe(named.fingerprint);
  expect(prefixChange(named, renamed)).toBeNull();
  const other = buildPrefix({ system: ["be brief"], tools: [], schema: { name: "output", schema: { ...order, required: [] } } });
  expect(prefixChange(named, other)).toBe("schema changed");
  const none = buildPrefix({ system: ["be brief"], tools: [] });
  expect(prefixChange(named, none)).toBe("schema changed");
  expect(prefixChange(none, buildPrefix({ system: ["be terse"], tools: [] }))).toBe("system changed");
});

test("a prefix stored before names came from the content alone (its fingerprint hashed the name) is no change for the same schema", () => {
  const current = buildPrefix({ system: ["be brief"], tools: [], schema: { name: "output", schema: order } });
  // As stored then: named after the file, the name in the fingerprint.
  const schema = { name: "invoice", schema: current.schema!.schema };
  const stored: StablePrefix = { system: current.system, tools: [], schema, fingerprint: hashJson({ system: ["be brief"], tools: [], schema }) };
  expect(stored.fingerprint).not.toBe(current.fingerprint);
  expect(prefixChange(stored, current)).toBeNull();
  expect(prefixChange(stored, buildPrefix({ system: ["be brief"], tools: [], schema: { name: "output", schema: { type: "object", properties: {} } } }))).toBe("schema changed");
});
