/**
 * Cost cases 33–37 and 44 (shared/cases/CASES.md) through emulated runs: the
 * compiled binary against its emulator, prices pinned as the cases pin them
 * (config overrides, or the cases' price file through `cachet prices update`).
 * The right value is computed here from the raw usage the emulator sent, by
 * the case's rule; the run (`--json`), the ledger row (`cachet export`),
 * `cachet price` on that usage (text and `--json`) and `cachet cost` (text
 * and `--json`) must all give it to 1e-9.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { CASE_PRICES_FILE } from "../fixtures/meter/cases.ts";
import { cachet, cleanHomes, events, freshHome, ofType, type Event } from "./harness.ts";

afterAll(cleanHomes);

type Raw = Record<string, any>;

interface EmulatedRun {
  home: string;
  cost: Event;
  raw: Raw;
  list: Event[];
  stderr: string;
}

/** Pins prices: TOML `[prices]` overrides in config, or the cases' price file merged into the catalog. */
async function pinPrices(home: string, prices: string | "case-prices"): Promise<void> {
  if (prices !== "case-prices") {
    writeFileSync(join(home, "config.toml"), prices);
    return;
  }
  const update = await cachet(["prices", "update", "--from", CASE_PRICES_FILE], { home });
  expect(update.code).toBe(0);
}

async function emulatedRun(model: string, prices: string, args: string[], script?: unknown, env: Record<string, string> = {}): Promise<EmulatedRun> {
  const home = freshHome();
  await pinPrices(home, prices);
  const runEnv: Record<string, string> = { ...env };
  if (script) {
    writeFileSync(join(home, "script.json"), JSON.stringify(script));
    runEnv.CACHET_EMULATOR_SCRIPT = join(home, "script.json");
  }
  const run = await cachet(["--emulate", "--json", "-m", model, ...args, "what is new in the release"], { home, env: runEnv });
  expect(run.stderr).not.toContain("internal error");
  expect(run.code).toBe(0);
  const list = events(run.stdout);
  return { home, cost: ofType(list, "cost")[0]!, raw: ofType(list, "usage")[0]!.raw as Raw, list, stderr: run.stderr };
}

/** The request rows of a home's ledger (`cachet export`). */
async function ledgerRows(home: string): Promise<Raw[]> {
  const exported = (await cachet(["export"], { home })).stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
  return exported.filter((e) => e.type === "request").map((e) => e.request);
}

/** The dollar figure `cachet cost` (text) prints for request `id`. */
async function costTextOf(home: string, id: string): Promise<number> {
  const text = await cachet(["cost"], { home });
  expect(text.code).toBe(0);
  const line = text.stdout.split("\n").find((l) => l.startsWith(id))!;
  return Number(/\$([0-9.]+)/.exec(line)![1]);
}

/**
 * `cachet cost --tree` (`--json` and text) of a home: for every request, the
 * nodes, the output and the charges (fees, modality differences) sum to the
 * request's cost to 1e-9. Returns the --json views.
 */
async function treeSumsToCost(home: string): Promise<Raw[]> {
  const json = await cachet(["cost", "--tree", "--json"], { home });
  expect(json.code).toBe(0);
  const views = JSON.parse(json.stdout).requests as Raw[];
  expect(views.length).toBeGreaterThan(0);
  for (const v of views) {
    const sum = [...v.tree, v.output, ...v.charges].reduce((s: number, n: Raw) => s + Number(n.usdExact), 0);
    expect(Math.abs(sum - v.costUsd)).toBeLessThan(1e-9);
  }
  const text = await cachet(["cost", "--tree"], { home });
  expect(text.code).toBe(0);
  const lines = text.stdout.split("\n");
  for (const v of views) {
    // A request's own lines: from its header to the next request's header; the nodes, output and charges are indented by two.
    // Each line's cost is its first dollar figure (`~$` when the request's cost is an estimate): a message or output
    // line ends with a preview of its text after it.
    const start = lines.findIndex((l) => l.startsWith(v.id));
    const end = lines.findIndex((l, i) => i > start && !l.startsWith(" "));
    const dollars = lines.slice(start + 1, end).filter((l) => /^  \S/.test(l) && !l.startsWith("  nodes:")).map((l) => Number(/ ~?\$([0-9.]+)(?: |$)/.exec(l)![1]));
    const header = Number(/\$([0-9.]+)/.exec(lines[start]!)![1]);
    expect(Math.abs(dollars.reduce((s, d) => s + d, 0) - header)).toBeLessThan(1e-9);
    expect(Math.abs(header - v.costUsd)).toBeLessThan(1e-9);
  }
  return views;
}

/**
 * The run's first request is priced `expected` everywhere: the run's cost
 * event, its ledger row (which keeps the raw usage the run received),
 * `cachet price` on that usage or response (`priced`; text and `--json`) and
 * `cachet cost` (text and `--json`).
 */
async function samePriceEverywhere(run: EmulatedRun, model: string, priced: unknown, expected: number, priceArgs: string[] = []): Promise<Raw> {
  const { home, cost, raw } = run;
  expect(expected).toBeGreaterThan(0);
  expect(Math.abs((cost.cost_usd as number) - expected)).toBeLessThan(1e-9);
  const row = (await ledgerRows(home))[0]!;
  expect(row.id).toBe(cost.request_id);
  expect(row.rawUsage).toEqual(raw);
  expect(Math.abs(row.costUsd - expected)).toBeLessThan(1e-9);
  writeFileSync(join(home, "usage.json"), JSON.stringify(priced));
  const price = await cachet(["price", "-m", model, "--usage", join(home, "usage.json"), ...priceArgs, "--json"], { home });
  expect(price.code).toBe(0);
  expect(Math.abs(JSON.parse(price.stdout).cost_usd - expected)).toBeLessThan(1e-9);
  const text = await cachet(["price", "-m", model, "--usage", join(home, "usage.json"), ...priceArgs], { home });
  expect(Math.abs(Number(text.stdout.split("\n").find((l) => l.startsWith("total"))!.split(/\s+/)[1]) - expected)).toBeLessThan(1e-9);
  const costJson = await cachet(["cost", "--json"], { home });
  expect(Math.abs(JSON.parse(costJson.stdout).requests[0].costUsd - expected)).toBeLessThan(1e-9);
  expect(Math.abs((await costTextOf(home, row.id)) - expected)).toBeLessThan(1e-9);
  const [view] = await treeSumsToCost(home);
  expect(Math.abs(view!.costUsd - expected)).toBeLessThan(1e-9);
  return row;
}

describe("cost cases through emulated runs", () => {
  test("33: Anthropic's web search fee ($10 per 1,000 searches) is priced from server_tool_use; the blocks go back on -c", async () => {
    const tools = [{ type: "web_search_20250305", name: "web_search", max_uses: 3 }];
    const script = [{ web_search: ["cachet release notes", "cachet changelog", "cachet 2.0 announcement", "one search too many"], text: "Faster start-up and a new cost report." }, { text: "Yes, both." }];
    const home = freshHome();
    writeFileSync(join(home, "tools.json"), JSON.stringify(tools));
    const run = await emulatedRun("anthropic/claude-sonnet-4-6", "case-prices", ["--tools", join(home, "tools.json")], script);
    const { raw, list } = run;
    // max_uses 3: the fourth search is refused (max_uses_exceeded) and not billed.
    expect(raw.server_tool_use.web_search_requests).toBe(3);
    const blocks = ofType(list, "provider_block").map((e) => e.block as Raw);
    expect(blocks.map((b) => b.type)).toEqual(["server_tool_use", "web_search_tool_result", "server_tool_use", "web_search_tool_result", "server_tool_use", "web_search_tool_result", "server_tool_use", "web_search_tool_result"]);
    expect(blocks[7]!.content.error_code).toBe("max_uses_exceeded");
    const expected = (raw.input_tokens * 3 + raw.output_tokens * 15 + 3 * 10_000) / 1e6;
    await samePriceEverywhere(run, "anthropic/claude-sonnet-4-6", raw, expected);
    const [searchView] = await treeSumsToCost(run.home);
    expect(searchView!.charges).toEqual([{ kind: "fee", id: "web_search×3", count: 3, usd: 0.03, usdExact: "0.03" }]);
    // The stored answer keeps the server tool blocks; the next turn sends them back and the emulator,
    // which refuses a server_tool_use without its result, accepts the request.
    const stored = (await cachet(["export"], { home: run.home })).stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const answer = stored.find((e) => e.type === "message" && e.message.role === "assistant").message;
    expect(answer.content.filter((b: Raw) => b.type === "provider").map((b: Raw) => b.data.type)).toEqual(blocks.map((b) => b.type));
    const next = await cachet(["--emulate", "-c", "-m", "anthropic/claude-sonnet-4-6", "both of them?"], { home: run.home, env: { CACHET_EMULATOR_SCRIPT: join(run.home, "script.json") } });
    expect(next.stderr).toBe("");
    expect(next.code).toBe(0);
    expect(next.stdout).toBe("Yes, both.\n");
    // Text mode names each search on stderr, never in the answer.
    const textRun = await cachet(["--emulate", "-m", "anthropic/claude-sonnet-4-6", "--tools", join(home, "tools.json"), "what is new in the release"], { home: run.home, env: { CACHET_EMULATOR_SCRIPT: join(run.home, "script.json") } });
    expect(textRun.code).toBe(0);
    expect(textRun.stdout).toBe("Faster start-up and a new cost report.\n");
    expect(textRun.stderr).toContain('server tool web_search {"query":"cachet release notes"}');
  }, 120_000);

  test("33: a web search tool on a provider that has none is refused before sending (exit 3)", async () => {
    const home = freshHome();
    writeFileSync(join(home, "tools.json"), JSON.stringify([{ type: "web_search_20250305", name: "web_search" }]));
    const run = await cachet(["--emulate", "-m", "openai/gpt-5-mini", "--tools", join(home, "tools.json"), "what is new"], { home });
    expect(run.code).toBe(3);
    expect(run.stderr.split("\n")[0]).toBe('cachet: tool "web_search" is a server tool (type "web_search_20250305") that provider "openai" does not run');
  }, 60_000);

  test("34: the flex tier the response says it served halves every token price", async () => {
    const prices = `[prices."openai/gpt-5-mini"]\ninput = 0.25\ncache_read = 0.025\noutput = 2.0\n`;
    const run = await emulatedRun("openai/gpt-5-mini", prices, ["-o", "service_tier=flex"]);
    const { raw } = run;
    const cached = raw.prompt_tokens_details?.cached_tokens ?? 0;
    const expected = ((raw.prompt_tokens - cached) * 0.125 + cached * 0.0125 + raw.completion_tokens * 1.0) / 1e6;
    expect(ofType(run.list, "cost")[0]!.cost_usd).toBeLessThan(((raw.prompt_tokens - cached) * 0.25 + cached * 0.025 + raw.completion_tokens * 2.0) / 1e6);
    await samePriceEverywhere(run, "openai/gpt-5-mini", { service_tier: "flex", usage: raw }, expected);
  }, 120_000);

  test("35: OpenRouter BYOK: the spend is cost + cost_details.upstream_inference_cost, not the 0 in cost", async () => {
    const run = await emulatedRun("openrouter/anthropic/claude-sonnet-4.5", "case-prices", [], undefined, { CACHET_EMULATOR_BYOK: "free" });
    const { raw, cost } = run;
    expect(raw).toMatchObject({ is_byok: true, cost: 0 });
    const upstream = raw.cost_details.upstream_inference_cost as number;
    expect(upstream).toBeGreaterThan(0);
    // Computed at the case's prices (3 / 15); the provider-reported spend is kept beside it.
    const expected = (raw.prompt_tokens * 3 + raw.completion_tokens * 15) / 1e6;
    const row = await samePriceEverywhere(run, "openrouter/anthropic/claude-sonnet-4.5", raw, expected);
    expect(Math.abs((cost.provider_cost_usd as number) - upstream)).toBeLessThan(1e-12);
    expect(row.providerCostUsd).toBe(cost.provider_cost_usd);
    const price = JSON.parse((await cachet(["price", "-m", "openrouter/anthropic/claude-sonnet-4.5", "--usage", join(run.home, "usage.json"), "--json"], { home: run.home })).stdout);
    expect(price.provider_cost_usd).toBe(cost.provider_cost_usd);
    // Past the monthly free BYOK requests, cost is OpenRouter's 5% fee: the spend is fee + upstream.
    const fee = await emulatedRun("openrouter/anthropic/claude-sonnet-4.5", "case-prices", [], undefined, { CACHET_EMULATOR_BYOK: "fee" });
    expect(fee.raw.is_byok).toBe(true);
    expect(fee.raw.cost).toBeGreaterThan(0);
    expect(Math.abs((fee.cost.provider_cost_usd as number) - (fee.raw.cost + fee.raw.cost_details.upstream_inference_cost))).toBeLessThan(1e-12);
    // What the user pays in all: the tokens (billed to their own key, at the case's prices) plus OpenRouter's fee.
    // The run, the ledger, `price`, `cost` and `stats` say that total, and the tree shows the fee as its own line.
    const tokens = (fee.raw.prompt_tokens * 3 + fee.raw.completion_tokens * 15) / 1e6;
    expect(Math.abs(tokens - fee.raw.cost_details.upstream_inference_cost)).toBeLessThan(1e-12);
    const feeRow = await samePriceEverywhere(fee, "openrouter/anthropic/claude-sonnet-4.5", fee.raw, tokens + fee.raw.cost);
    expect(Math.abs(feeRow.costUsd - (fee.cost.provider_cost_usd as number))).toBeLessThan(1e-9);
    const feePrice = JSON.parse((await cachet(["price", "-m", "openrouter/anthropic/claude-sonnet-4.5", "--usage", join(fee.home, "usage.json"), "--json"], { home: fee.home })).stdout);
    expect(feePrice.lines.find((l: Raw) => l.category === "router_fee")).toEqual({ category: "router_fee", unit: "request", tokens: 1, price_per_million: fee.raw.cost * 1e6, usd: fee.raw.cost });
    const [feeView] = await treeSumsToCost(fee.home);
    expect(feeView!.charges).toEqual([{ kind: "fee", id: "router_fee", count: 1, usd: fee.raw.cost, usdExact: String(fee.raw.cost) }]);
    const stats = JSON.parse((await cachet(["stats", "--json"], { home: fee.home })).stdout);
    expect(Math.abs(stats.total.costUsd - (fee.cost.provider_cost_usd as number))).toBeLessThan(1e-9);
    const statsText = (await cachet(["stats"], { home: fee.home })).stdout;
    expect(statsText).toContain(`$${feeRow.costUsd}`);
  }, 120_000);

  test("36: Gemini image output is priced per modality (image tokens at the image rate); the image is kept and sent back", async () => {
    const script = [{ text: "Here is the cat.", images: 1 }, { text: "A grey cat." }];
    const run = await emulatedRun("google/gemini-3-pro-image-preview", "case-prices", ["-o", 'generationConfig={"imageConfig":{"imageSize":"4K"}}'], script);
    const { raw, list } = run;
    const image = raw.candidatesTokensDetails.find((d: Raw) => d.modality === "IMAGE").tokenCount as number;
    const text = raw.candidatesTokensDetails.find((d: Raw) => d.modality === "TEXT").tokenCount as number;
    expect(image).toBe(2000);
    expect(text + image).toBe(raw.candidatesTokenCount);
    const expected = (raw.promptTokenCount * 2 + text * 12 + image * 120) / 1e6;
    await samePriceEverywhere(run, "google/gemini-3-pro-image-preview", raw, expected);
    const [imageView] = await treeSumsToCost(run.home);
    expect(imageView!.output.parts.map((p: Raw) => [p.category, p.tokens, p.usd])).toEqual([["output", text, (text * 12) / 1e6], ["output_image", image, (image * 120) / 1e6]]);
    const [event] = ofType(list, "image");
    expect(event).toMatchObject({ media_type: "image/png" });
    const stored = (await cachet(["export"], { home: run.home })).stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const answer = stored.find((e) => e.type === "message" && e.message.role === "assistant").message;
    expect(answer.content).toContainEqual({ type: "image", mediaType: "image/png", data: event!.data });
    const next = await cachet(["--emulate", "--json", "-c", "-m", "google/gemini-3-pro-image-preview", "what colour is it?"], { home: run.home, env: { CACHET_EMULATOR_SCRIPT: join(run.home, "script.json") } });
    expect(next.code).toBe(0);
    // The replayed image is input of the next request: the prompt grew by more than the new question.
    const nextRaw = ofType(events(next.stdout), "usage")[0]!.raw as Raw;
    expect(nextRaw.promptTokenCount).toBeGreaterThan(raw.promptTokenCount + 1000);
    // Text mode names the image on stderr; stdout holds only the answer text.
    const textRun = await cachet(["--emulate", "-m", "google/gemini-3-pro-image-preview", "draw a cat"], { home: run.home, env: { CACHET_EMULATOR_SCRIPT: join(run.home, "script.json") } });
    expect(textRun.code).toBe(0);
    expect(textRun.stdout).toBe("Here is the cat.\n");
    expect(textRun.stderr).toContain("image image/png, 68 bytes");
  }, 120_000);

  test("37A: xAI reports reasoning outside completion_tokens and total_tokens says so", async () => {
    const prices = `[prices."xai/grok-4"]\ninput = 1.25\ncache_read = 0.2\noutput = 2.5\n`;
    const script = [{ thinking: "The user asks about the release. I should list the changes one by one and keep it short.", text: "Faster start-up and a new cost report." }];
    const run = await emulatedRun("xai/grok-4", prices, [], script);
    const { raw } = run;
    const reasoning = raw.completion_tokens_details.reasoning_tokens as number;
    expect(reasoning).toBeGreaterThan(0);
    expect(raw.total_tokens).toBe(raw.prompt_tokens + raw.completion_tokens + reasoning);
    const cached = raw.prompt_tokens_details?.cached_tokens ?? 0;
    const expected = ((raw.prompt_tokens - cached) * 1.25 + cached * 0.2 + (raw.completion_tokens + reasoning) * 2.5) / 1e6;
    await samePriceEverywhere(run, "xai/grok-4", raw, expected);
  }, 120_000);

  test("37B: OpenAI reports reasoning inside completion_tokens and total_tokens says so", async () => {
    const prices = `[prices."openai/gpt-5"]\ninput = 1.25\ncache_read = 0.2\noutput = 2.5\n`;
    const script = [{ thinking: "The user asks about the release. I should list the changes one by one and keep it short.", text: "Faster start-up and a new cost report." }];
    const run = await emulatedRun("openai/gpt-5", prices, [], script);
    const { raw } = run;
    expect(raw.completion_tokens_details.reasoning_tokens).toBeGreaterThan(0);
    expect(raw.total_tokens).toBe(raw.prompt_tokens + raw.completion_tokens);
    const cached = raw.prompt_tokens_details?.cached_tokens ?? 0;
    const expected = ((raw.prompt_tokens - cached) * 1.25 + cached * 0.2 + raw.completion_tokens * 2.5) / 1e6;
    await samePriceEverywhere(run, "openai/gpt-5", raw, expected);
  }, 120_000);

  test("OpenRouter's emulated cost is billed at the model's published prices: it agrees with cachet's computed cost", async () => {
    const { cost, raw } = await emulatedRun("openrouter/anthropic/claude-sonnet-4.5", "", []);
    expect(raw.is_byok).toBe(false);
    expect(typeof cost.provider_cost_usd).toBe("number");
    expect(Math.abs((cost.provider_cost_usd as number) - (cost.cost_usd as number))).toBeLessThan(1e-9);
  }, 120_000);

  test("44: a stream cut after message_start keeps the usage reported so far (cache read and write included), priced as a flagged lower bound", async () => {
    const home = freshHome();
    writeFileSync(join(home, "config.toml"), `[prices."anthropic/claude-sonnet-4-6"]\ninput = 3\ncache_read = 0.3\ncache_write = 3.75\noutput = 15\n`);
    // A first turn long enough to be cached, so the cut second turn reads it and writes its own new part.
    const long = `${"The release notes list every change to the cost report, the cache planner and the plugins. ".repeat(200)}Summarise them.`;
    const first = await cachet(["--emulate", "-m", "anthropic/claude-sonnet-4-6", long], { home });
    expect(first.code).toBe(0);
    const run = await cachet(["--emulate", "--json", "-c", "-m", "anthropic/claude-sonnet-4-6", `${long} Now tell me a long story about it.`], { home, env: { CACHET_EMULATOR_FAULT: "cut" } });
    expect(run.code).not.toBe(0);
    const request = (await ledgerRows(home))[1]!;
    expect(request.status).not.toBe("ok");
    const raw = request.rawUsage as Raw;
    expect(raw.cache_read_input_tokens).toBeGreaterThan(0);
    expect(raw.cache_creation_input_tokens).toBeGreaterThan(0);
    // The output is at least what streamed: message_start reports 1, each text delta after it is one more at least.
    const output = request.usage.output as number;
    expect(output).toBeGreaterThan(raw.output_tokens);
    const expected = (raw.input_tokens * 3 + raw.cache_read_input_tokens * 0.3 + raw.cache_creation_input_tokens * 3.75 + output * 15) / 1e6;
    expect(Math.abs(request.costUsd - expected)).toBeLessThan(1e-9);
    expect(request.costEstimate).toContain("lower bound");
    expect(request.costEstimate).toContain(`output counted as ${output}`);
    // The run's own --json output: the usage it received and its cost, flagged with the reason.
    const runEvents = events(run.stdout);
    expect(ofType(runEvents, "usage")[0]!.raw).toEqual(raw);
    const runCost = ofType(runEvents, "cost")[0]!;
    expect(Math.abs((runCost.cost_usd as number) - expected)).toBeLessThan(1e-9);
    expect(runCost.reason).toContain("lower bound");
    const cost = await cachet(["cost"], { home });
    expect(cost.stdout.split("\n").find((l) => l.startsWith(request.id))).toContain(`~$${request.costUsd}`);
    const costJson = JSON.parse((await cachet(["cost", "--json"], { home })).stdout);
    expect(Math.abs(costJson.requests[1].costUsd - expected)).toBeLessThan(1e-9);
    const tree = await treeSumsToCost(home);
    expect(Math.abs(tree[1]!.costUsd - expected)).toBeLessThan(1e-9);
    // `cachet price` has only the usage object, not the stream: it prices the output as reported, below the ledger's.
    const reported = expected - ((output - raw.output_tokens) * 15) / 1e6;
    writeFileSync(join(home, "usage.json"), JSON.stringify(raw));
    const price = JSON.parse((await cachet(["price", "-m", "anthropic/claude-sonnet-4-6", "--usage", join(home, "usage.json"), "--partial", "--json"], { home })).stdout);
    expect(price).toMatchObject({ lower_bound: true, estimate: true });
    expect(Math.abs(price.cost_usd - reported)).toBeLessThan(1e-9);
    const text = (await cachet(["price", "-m", "anthropic/claude-sonnet-4-6", "--usage", join(home, "usage.json"), "--partial"], { home })).stdout;
    const total = text.split("\n").find((l) => l.startsWith("total"))!;
    expect(Math.abs(Number(total.split(/\s+/)[1]) - reported)).toBeLessThan(1e-9);
    expect(total).toEndWith("(at least)");
  }, 120_000);
});
