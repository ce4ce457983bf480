import { expect, test } from "bun:test";
import { dollars, formatUsd, plainUsd } from "./money.ts";

test("plainUsd writes String's digits without the exponent, adding or rounding away none", () => {
  const cases: [number, string][] = [
    [3.75e-7, "0.000000375"],
    [7.5e-8, "0.000000075"],
    [1e-18, "0.000000000000000001"],
    [-2.5e-7, "-0.00000025"],
    [0.048291, "0.048291"],
    [0.000001, "0.000001"],
    [0, "0"],
    [12.5, "12.5"],
    [1.5e21, "1500000000000000000000"],
  ];
  for (const [amount, text] of cases) expect({ amount, text: plainUsd(amount) }).toEqual({ amount, text });
  // The same number read back: nothing lost.
  for (const [amount] of cases) expect(Number(plainUsd(amount))).toBe(amount);
  expect(() => plainUsd(Number.NaN)).toThrow(RangeError);
});

test("dollars puts the sign before the dollar, from a number or an exact decimal alike", () => {
  expect(dollars(3.75e-7)).toBe("$0.000000375");
  expect(dollars(-0.0056)).toBe("-$0.0056");
  expect(dollars("-0.0056")).toBe("-$0.0056");
  expect(dollars(formatUsd(375_000_000_000n))).toBe("$0.000000375");
  expect(dollars(0)).toBe("$0");
});
