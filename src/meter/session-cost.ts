/**
 * A session's cost per request and per node (`cachet cost`), pure over its
 * ledger rows. Each request's billed tokens are attributed to its chain
 * (src/meter/attribute.ts) and grouped as a tree: system parts, tools,
 * schema, messages with their blocks (node ids `message#block`), overlay.
 */
import type { Config } from "../config.ts";
import type { Usage } from "../plugin/usage.ts";
import type { RequestFigures } from "../session/ledger-figures.ts";
import type { LedgerRow, RequestStatus } from "../session/types.ts";
import { ChainMeter, OUTPUT_CATEGORIES, ratesOf, type AttributeOptions, type AttributedTokens, type NodeCost } from "./attribute.ts";
import type { Catalog } from "./catalog.ts";
import { costOf, dollars, formatUsd, toUsd, type Atto } from "./money.ts";
import { priceUsage, resolvePrice, type CostCategory, type PriceExtras, type RequestCost } from "./pricing.ts";
import { plainRef, type CatalogRefOf } from "./stats.ts";

/** One node (or a message grouping its blocks) of a request's cost tree. USD exact as a decimal string. */
export interface CostTreeNode extends AttributedTokens {
  id: string;
  usd: number | null;
  usdExact: string | null;
  /** Blocks of a message. */
  children?: CostTreeNode[];
}

/** One request of the session, attributed. */
export interface RequestCostView {
  /** The request's id (`r_…`), as every `--json` request object names it (`cost --json`, `why --json`, `export`). */
  id: string;
  role: string;
  /** `provider/model` as the session used it (`openai-responses/gpt-5`), as `cost` without `--tree` names it. */
  model: string;
  /** The catalog id its prices came from (`openai/gpt-5` for `openai-responses/gpt-5`). */
  pricedAs: string;
  startedAt: number;
  usage: Usage;
  /** Cost recorded in the ledger, USD. */
  costUsd: number | null;
  /** Why `costUsd` is a flagged estimate or lower bound (printed with `~`, as `cost` without `--tree` does); null when exact. */
  costEstimate: string | null;
  /** The ledger row's status: `ok`, or how the attempt ended otherwise (`error`, `incomplete`, `in_flight`, `lost`). */
  status: RequestStatus;
  /** Billed prompt tokens, and the sum over the nodes (always equal when the chain is not empty). */
  billedPrompt: number;
  nodeTokens: number;
  /**
   * cachet's own token estimate of the chain. Node figures are these
   * estimates scaled by billedPrompt / estimatedPrompt, so an unchanged node's
   * share moves a little from request to request as that ratio moves.
   */
  estimatedPrompt: number;
  /**
   * Whether the billed prompt tokens were laid over the nodes: false when the
   * provider reported no prompt count (a refused request, one in flight or
   * lost, a usage mapping that failed); `tree` is then empty, since a node's
   * share of an unknown bill is unknown, never 0.
   */
  attributed: boolean;
  tree: CostTreeNode[];
  /** The output, and its parts by category (text, reasoning, image, audio) each at its own rate. */
  output: { messageId: string | null; tokens: number | undefined; usd: number | null; usdExact: string | null; parts: OutputPart[] };
  /** What the request cost beside its tokens at the node rates; tree + output + charges = the request's computed cost. */
  charges: RequestCharge[];
}

/** One billed category of a request's output. */
export interface OutputPart {
  category: CostCategory;
  tokens: number;
  usd: number | null;
  usdExact: string | null;
}

/**
 * A charge of a request that is not a node's tokens: `fee` for per-call
 * server-tool fees (id `web_search×3`) and a router's fee (`router_fee`);
 * `modality` for input image/audio tokens above the input rate the nodes
 * price them at (id `input_image×N`, the difference only).
 */
export interface RequestCharge {
  kind: "fee" | "modality";
  id: string;
  /** Calls, requests or tokens, as the id says. */
  count: number;
  usd: number | null;
  usdExact: string | null;
}

/** What a stored row's usage report said beside its counts (service tier, server-tool calls, modalities, fees), for pricing it again. */
export type RowExtras = (row: LedgerRow) => PriceExtras;

/**
 * Attributes every request of a session (rows in start order). Prices for
 * per-node USD come from `catalog` (with `overrides`), each row's model
 * looked up as `catalogRef` maps it (a provider's catalog id), with what
 * `extras` reads from its raw usage (its provider's usage mapping); without
 * a price, USD fields are null and tokens are still attributed.
 */
export function sessionCost(rows: readonly LedgerRow[], catalog: Catalog, overrides: Config["prices"] = {}, catalogRef: CatalogRefOf = plainRef, extras: RowExtras = () => ({})): RequestCostView[] {
  const meter = new ChainMeter();
  return [...rows]
    .sort((a, b) => a.startedAt - b.startedAt)
    .map((row) => {
      const modelId = catalogRef(row.provider, row.model);
      const resolved = resolvePrice(catalog, modelId, overrides);
      const options: AttributeOptions = { messageId: row.messageId };
      const priced = resolved ? priceUsage(row.usage, resolved, modelId, extras(row)) : undefined;
      if (priced) Object.assign(options, ratesOf(priced));
      const a = meter.attribute(row.chain, row.usage, options);
      const attributed = promptKnown(row.usage);
      const nodes = attributed ? a.nodes() : [];
      return {
        id: row.id,
        role: row.role,
        model: `${row.provider}/${row.model}`,
        pricedAs: modelId,
        startedAt: row.startedAt,
        usage: row.usage,
        costUsd: row.costUsd,
        costEstimate: row.costEstimate ?? null,
        status: row.status,
        billedPrompt: a.billedPrompt,
        nodeTokens: nodes.reduce((s, n) => s + n.tokens, 0),
        estimatedPrompt: row.chain.reduce((s, link) => s + link.tokens, 0),
        attributed,
        tree: buildTree(nodes),
        output: {
          messageId: a.output.messageId,
          tokens: a.output.tokens,
          usd: a.output.usd,
          usdExact: a.output.usdAtto === null ? null : formatUsd(a.output.usdAtto),
          parts: (priced?.lines ?? []).filter((l) => OUTPUT_CATEGORIES.has(l.category) && l.tokens > 0).map((l) => ({ category: l.category, tokens: l.tokens, usd: l.usd, usdExact: l.usdExact })),
        },
        charges: priced ? chargesOf(priced) : [],
      };
    });
}

/** True when the usage holds at least one prompt count (unknown counts are absent, never 0). */
function promptKnown(usage: Usage): boolean {
  return [usage.input, usage.cacheRead, usage.cacheWrite5m, usage.cacheWrite1h].some((count) => count !== undefined && count !== null);
}

function chargesOf(cost: RequestCost): RequestCharge[] {
  const inputRate = cost.lines.find((l) => l.category === "input")?.pricePico ?? null;
  const charges: RequestCharge[] = [];
  const charge = (kind: RequestCharge["kind"], id: string, count: number, atto: Atto | null): void => {
    charges.push({ kind, id, count, usd: atto === null ? null : toUsd(atto), usdExact: atto === null ? null : formatUsd(atto) });
  };
  for (const l of cost.lines) {
    if (l.category === "server_tool") charge("fee", `${l.tool}×${l.tokens}`, l.tokens, l.usdAtto);
    else if (l.category === "router_fee") charge("fee", "router_fee", l.tokens, l.usdAtto);
    else if ((l.category === "input_image" || l.category === "input_audio") && l.pricePico !== inputRate) {
      // The nodes hold these tokens at the input rate; the difference to their own rate is charged here.
      charge("modality", `${l.category}×${l.tokens}`, l.tokens, l.usdAtto === null || inputRate === null ? null : l.usdAtto - costOf(l.tokens, inputRate));
    }
  }
  return charges;
}

function buildTree(nodes: readonly NodeCost[]): CostTreeNode[] {
  const out: CostTreeNode[] = [];
  let group: { node: CostTreeNode; atto: Atto | null } | undefined;
  for (const n of nodes) {
    const leaf = leafOf(n);
    const hash = n.nodeId.indexOf("#");
    if (hash === -1) {
      group = undefined;
      out.push(leaf);
      continue;
    }
    const messageId = n.nodeId.slice(0, hash);
    if (group?.node.id !== messageId) {
      group = { node: { id: messageId, kind: "message", tokens: 0, cacheRead: 0, cacheWrite1h: 0, cacheWrite5m: 0, input: 0, status: "empty", usd: 0, usdExact: "0", children: [] }, atto: 0n };
      out.push(group.node);
    }
    const g = group.node;
    g.children!.push(leaf);
    g.tokens += n.tokens;
    g.cacheRead += n.cacheRead;
    g.cacheWrite1h += n.cacheWrite1h;
    g.cacheWrite5m += n.cacheWrite5m;
    g.input += n.input;
    g.status = g.children!.every((c) => c.status === g.children![0]!.status) ? g.children![0]!.status : "mixed";
    group.atto = group.atto === null || n.usdAtto === null ? null : group.atto + n.usdAtto;
    g.usd = group.atto === null ? null : toUsd(group.atto);
    g.usdExact = group.atto === null ? null : formatUsd(group.atto);
  }
  return out;
}

function leafOf(n: NodeCost): CostTreeNode {
  return {
    id: n.nodeId,
    kind: n.kind,
    tokens: n.tokens,
    cacheRead: n.cacheRead,
    cacheWrite1h: n.cacheWrite1h,
    cacheWrite5m: n.cacheWrite5m,
    input: n.input,
    status: n.status,
    usd: n.usd,
    usdExact: n.usdAtto === null ? null : formatUsd(n.usdAtto),
  };
}

/** Cache writes of both TTLs; unknown ("?") when neither count is known, never a silent 0. */
/**
 * The end of a request's line naming a status other than `ok` in the ledger's own word (`  (status error)`), so a
 * failed attempt, maybe billed, never reads as just an unpriced request; an ok request's line has none.
 */
function statusNote(status: RequestStatus): string {
  return status === "ok" ? "" : `  (status ${status})`;
}

function writes(fiveMinutes: number | null | undefined, oneHour: number | null | undefined): number | "?" {
  return (fiveMinutes ?? null) === null && (oneHour ?? null) === null ? "?" : (fiveMinutes ?? 0) + (oneHour ?? 0);
}

/**
 * One line per request from the stored figures (`cachet cost` without
 * `--tree`), yielded in pieces of `linesPerPiece` lines so that a session of a
 * hundred thousand requests is written as it is formatted, never held as one
 * string; `~` marks a flagged estimate.
 */
export function* requestFigureLines(requests: readonly RequestFigures[], linesPerPiece = 4096): Generator<string> {
  let piece = "";
  let lines = 0;
  for (const r of requests) {
    const cost = r.costUsd === null ? "cost unknown" : `${r.costEstimate ? "~" : ""}${dollars(r.costUsd)}`;
    // Only the unusual form is named: an incremental request sent just its new input (the whole context is billed all the same).
    const form = r.requestForm === "incremental" ? "  (incremental)" : "";
    piece += `${r.id}  ${r.role}  ${r.provider}/${r.model}  ${cost}  in ${r.input ?? "?"} · read ${r.cacheRead ?? "?"} · write ${writes(r.cacheWrite5m, r.cacheWrite1h)} · out ${r.output ?? "?"}${form}${statusNote(r.status)}\n`;
    if (++lines === linesPerPiece) {
      yield piece;
      piece = "";
      lines = 0;
    }
  }
  if (piece !== "") yield piece;
}

/**
 * Text rendering of {@link sessionCost}: one line per request, and with
 * `tree` the nodes under it (indented blocks under their message). A
 * message's line, and the output's, end with the message's preview from
 * `previews` (by message id, as `sessions show` previews it) when it has one.
 * `~` marks a flagged estimate or lower bound on the request's line and on every amount under it.
 */
export function formatSessionCost(views: readonly RequestCostView[], tree: boolean, previews: ReadonlyMap<string, string> = new Map()): string {
  const text = (id: string | null) => {
    const shown = id === null ? undefined : previews.get(id);
    return shown ? `  ${shown}` : "";
  };
  const lines: string[] = [];
  for (const v of views) {
    const u = v.usage;
    lines.push(
      `${v.id}  ${v.role}  ${v.model}  ${v.costUsd === null ? "cost unknown" : `${v.costEstimate ? "~" : ""}${dollars(v.costUsd)}`}  in ${u.input ?? "?"} · read ${u.cacheRead ?? "?"} · write ${writes(u.cacheWrite5m, u.cacheWrite1h)} · out ${u.output ?? "?"}${statusNote(v.status)}`,
    );
    if (!tree) continue;
    if (!v.attributed) {
      // A share of an unknown bill is unknown: one line instead of a column of zeros that would read as "billed nothing".
      lines.push(`  nodes: ${v.estimatedPrompt > 0 ? `estimated ${v.estimatedPrompt} tokens, ` : ""}not attributed: the provider reported no usage${v.costUsd === 0 ? " (nothing was billed)" : ""}`);
      continue;
    }
    if (v.estimatedPrompt > 0 && v.estimatedPrompt !== v.billedPrompt) {
      // Why an unchanged node's tokens differ between requests: its share is an estimate scaled to this request's bill.
      lines.push(`  nodes: estimated ${v.estimatedPrompt} tokens scaled ×${(v.billedPrompt / v.estimatedPrompt).toFixed(4)} to the ${v.billedPrompt} billed`);
    }
    let unbilled = 0;
    // A node's share of a flagged estimate or lower bound is one too: marked as the request's line marks it.
    const mark = v.costEstimate ? "~" : "";
    const usd = (exact: string | null) => (exact === null ? "?" : `${mark}${dollars(exact)}`);
    const walk = (nodes: readonly CostTreeNode[], depth: number): void => {
      for (const n of nodes) {
        // A node given no billed token (its scaled share under one, or no text of its own) carries nothing to read: counted below, not listed.
        if (n.tokens === 0) {
          unbilled += n.children ? n.children.length : 1;
          continue;
        }
        lines.push(`${"  ".repeat(depth)}${n.kind.padEnd(11)} ${n.id.padEnd(24)} ${String(n.tokens).padStart(8)}  ${n.status.padEnd(8)}  ${usd(n.usdExact)}${text(n.id)}`);
        if (n.children) walk(n.children, depth + 1);
      }
    };
    walk(v.tree, 1);
    if (unbilled > 0) lines.push(`  (${unbilled} node${unbilled === 1 ? "" : "s"} given no billed token not listed; --json lists every node)`);
    lines.push(`  ${"output".padEnd(11)} ${(v.output.messageId ?? "-").padEnd(24)} ${String(v.output.tokens ?? "?").padStart(8)}  ${"".padEnd(8)}  ${usd(v.output.usdExact)}${text(v.output.messageId)}`);
    // Parts shown only when the output is priced at more than one rate.
    if (v.output.parts.length > 1) {
      for (const p of v.output.parts) lines.push(`    ${p.category.padEnd(11)} ${"".padEnd(24)} ${String(p.tokens).padStart(8)}  ${"".padEnd(8)}  (${usd(p.usdExact)})`);
    }
    for (const c of v.charges) lines.push(`  ${c.kind.padEnd(11)} ${c.id.padEnd(24)} ${String(c.count).padStart(8)}  ${"".padEnd(8)}  ${usd(c.usdExact)}`);
  }
  return lines.length > 0 ? `${lines.join("\n")}\n` : "";
}
