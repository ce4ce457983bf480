/**
 * The probe report as text: one per-call table per model and cache setting,
 * with a totals line, then the side-by-side comparison when there are
 * several. Plain aligned columns, no colour, so it pastes into an issue.
 */
import { printable } from "../printable.ts";
import type { ProbeCall, ProbeComparison, ProbeReport, ProbeVariant } from "./probe-report.ts";

/** Formats a report for a terminal. Ends with a newline. */
export function formatProbe(report: ProbeReport): string {
  const parts = report.variants.map((v) => formatVariant(report, v));
  if (report.comparison) parts.push(formatComparison(report.comparison));
  return `${parts.join("\n")}`;
}

const CALL_HEADER = ["call", "session", "role", "input", "cacheRead", "cacheWrite", "hit rate", "cacheable max", "efficiency", "cost", "note"];
// Text columns are left-aligned; counts and ratios right-aligned.
const CALL_LEFT = new Set([2, 10]);

function formatVariant(report: ProbeReport, variant: ProbeVariant): string {
  const title = `${report.scenario} · ${variant.model} · cache ${variant.cache}${report.emulate ? " · emulator" : ""}`;
  const rows = variant.calls.map(callCells);
  const t = variant.totals;
  const total = ["total", "", "", count(t.input), count(t.cacheRead), count(t.cacheWrite), percent(t.hitRate), count(t.cacheableMax), percent(t.efficiency), usd(t.costUsd) + (t.unpriced ? ` (+${t.unpriced} unpriced)` : ""), `${t.calls} calls`];
  return `${printable(title)}\n${table([CALL_HEADER, ...rows, total], CALL_LEFT, rows.length + 1)}`;
}

function callCells(c: ProbeCall): string[] {
  // The table shows the main cause; --json carries them all.
  const note = [c.change ? `[${c.change}]` : "", c.note?.split("; ")[0] ?? ""].filter(Boolean).join(" ");
  return [String(c.call), `s${c.session}`, c.role, count(c.input), count(c.cacheRead), count(c.cacheWrite), percent(c.hitRate), count(c.cacheableMax), percent(c.efficiency), c.costUsd === null ? "unpriced" : usd(c.costUsd), note];
}

function formatComparison(rows: readonly ProbeComparison[]): string {
  const header = ["model", "cache", "calls", "hit rate", "efficiency", "cost", "vs cheapest"];
  const body = rows.map((r) => [r.model, r.cache, String(r.calls), percent(r.hitRate), percent(r.efficiency), usd(r.costUsd) + (r.unpriced ? ` (+${r.unpriced} unpriced)` : ""), r.relative === null ? "–" : `×${r.relative.toFixed(2)}`]);
  return `comparison: cost forecast of the same scenario\n${table([header, ...body], new Set([0, 1]))}`;
}

/** Aligned columns; a rule under the header and, when `ruleBefore` is given, before that row. */
function table(cells: string[][], left: Set<number>, ruleBefore?: number): string {
  // Roles, model ids and notes come from the scenario file: escaped, so no control character breaks a row.
  const rows = cells.map((r) => r.map(printable));
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) =>
    r
      .map((cell, i) => (i === r.length - 1 && left.has(i) ? cell : left.has(i) ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join("  ")
      .trimEnd();
  // The last column is free text: its rule stops at the header's width.
  const rule = widths.map((w, i) => "─".repeat(i === widths.length - 1 ? rows[0]![i]!.length : w)).join("  ");
  const out: string[] = [];
  rows.forEach((r, i) => {
    if (i === ruleBefore) out.push(rule);
    out.push(line(r));
    if (i === 0) out.push(rule);
  });
  return `${out.join("\n")}\n`;
}

function count(n: number | null): string {
  return n === null ? "?" : n.toLocaleString("en-US");
}

function percent(x: number | null): string {
  return x === null ? "–" : `${(x * 100).toFixed(1)}%`;
}

function usd(x: number): string {
  return `$${x.toFixed(6)}`;
}
