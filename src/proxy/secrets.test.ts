import { expect, test } from "bun:test";
import { publicPath, redact, secretsOf } from "./secrets.ts";

test("credentials from headers and the query are found, cut out of texts, and dropped from the kept path", () => {
  const url = new URL("http://127.0.0.1/v1beta/models/m:streamGenerateContent?alt=sse&key=AIzaQUERYKEY1");
  const headers = new Headers({ authorization: "Bearer sk-BEARER-1234", "x-api-key": "sk-ant-HEADER-5678", "user-agent": "ua" });
  const secrets = secretsOf(headers, url);
  expect(secrets).toContain("sk-BEARER-1234");
  expect(secrets).toContain("sk-ant-HEADER-5678");
  expect(secrets).toContain("AIzaQUERYKEY1");
  expect(redact("bad key sk-BEARER-1234 / sk-ant-HEADER-5678 (AIzaQUERYKEY1)", secrets)).toBe("bad key [redacted] / [redacted] ([redacted])");
  expect(publicPath(url)).toBe("/v1beta/models/m:streamGenerateContent?alt=sse");
});
