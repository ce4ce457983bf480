import { describe, expect, test } from "bun:test";
import type { RequestFigures } from "../session/ledger-figures.ts";
import { requestFigureLines } from "./session-cost.ts";

describe("requestFigureLines (`cachet cost`)", () => {
  const row = (usage: Partial<RequestFigures>): RequestFigures => ({
    id: "r_1", role: "main", provider: "acme", model: "m1", startedAt: 0,
    input: null, cacheRead: null, cacheWrite5m: null, cacheWrite1h: null, output: null, costUsd: null, costEstimate: null, requestForm: "full", status: "ok", ...usage,
  });

  test("an incremental request is named as such; the full form, the usual one, is not", () => {
    const counts = { input: 10, cacheRead: 2048, cacheWrite5m: 0, cacheWrite1h: 0, output: 20, costUsd: 0.001 };
    expect([...requestFigureLines([row({ ...counts, requestForm: "incremental" }), row({ ...counts, id: "r_2" })])].join("")).toBe(
      "r_1  main  acme/m1  $0.001  in 10 · read 2048 · write 0 · out 20  (incremental)\nr_2  main  acme/m1  $0.001  in 10 · read 2048 · write 0 · out 20\n",
    );
  });

  test("usage a plugin could not map prints every count as unknown, never a silent 0", () => {
    expect([...requestFigureLines([row({})])].join("")).toBe("r_1  main  acme/m1  cost unknown  in ? · read ? · write ? · out ?\n");
  });

  test("a request whose ledger status is not ok says it in the ledger's word at the end of its line; an ok one says nothing", () => {
    const rows = (["error", "incomplete", "in_flight", "lost"] as const).map((status, i) => row({ id: `r_${i}`, status }));
    const lines = [...requestFigureLines([...rows, row({ id: "r_ok", input: 1, cacheRead: 0, cacheWrite5m: 0, output: 2, costUsd: 0.5 })])].join("");
    expect(lines).toBe(
      [
        "r_0  main  acme/m1  cost unknown  in ? · read ? · write ? · out ?  (status error)",
        "r_1  main  acme/m1  cost unknown  in ? · read ? · write ? · out ?  (status incomplete)",
        "r_2  main  acme/m1  cost unknown  in ? · read ? · write ? · out ?  (status in_flight)",
        "r_3  main  acme/m1  cost unknown  in ? · read ? · write ? · out ?  (status lost)",
        "r_ok  main  acme/m1  $0.5  in 1 · read 0 · write 0 · out 2",
        "",
      ].join("\n"),
    );
    // The form comes first, as it did: the status is added after it.
    expect([...requestFigureLines([row({ requestForm: "incremental", status: "incomplete" })])].join("")).toBe(
      "r_1  main  acme/m1  cost unknown  in ? · read ? · write ? · out ?  (incremental)  (status incomplete)\n",
    );
  });

  test("known counts print as numbers; one known write TTL is the writes' sum", () => {
    expect([...requestFigureLines([row({ input: 5, cacheRead: 0, cacheWrite5m: 7, output: 3, costUsd: 0.1 })])].join("")).toBe("r_1  main  acme/m1  $0.1  in 5 · read 0 · write 7 · out 3\n");
  });

  test("a long listing comes in pieces of whole lines that join to the same text", () => {
    const rows = Array.from({ length: 10 }, (_, i) => row({ id: `r_${i}`, input: i, costUsd: i / 10 }));
    const pieces = [...requestFigureLines(rows, 4)];
    expect(pieces.map((p) => p.split("\n").length - 1)).toEqual([4, 4, 2]);
    expect(pieces.join("")).toBe([...requestFigureLines(rows)].join(""));
    expect(pieces.join("").split("\n")[9]).toBe("r_9  main  acme/m1  $0.9  in 9 · read ? · write ? · out ?");
  });
});
