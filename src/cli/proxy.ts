/**
 * `cachet proxy [--port N] [--host 127.0.0.1] [--upstream URL | --emulate] [--provider P] [--keep-bodies]`:
 * a local recording proxy for any client. The first stdout line is the root
 * URL; it serves until SIGINT/SIGTERM, then finishes recording and exits 0.
 */
import { defineCommand } from "citty";
import { CachetError } from "../errors.ts";
import { globalArgs } from "./_args.ts";
import { settleStdout, stdout } from "../stdout.ts";

export default defineCommand({
  meta: { name: "proxy", description: "Record any client's LLM traffic: forward it unchanged and meter each request" },
  args: {
    port: { type: "string", description: "TCP port (0 picks a free one)", default: "0" },
    host: { type: "string", description: "Interface to listen on; anything but loopback is reachable from the network (a warning is printed)", default: "127.0.0.1" },
    upstream: { type: "string", description: "Base URL to forward to instead of the provider's (of --provider when given, else of every provider)" },
    emulate: { type: "boolean", description: "Forward to the built-in emulator (no key, no network)" },
    provider: { type: "string", description: "Provider serving the unprefixed paths of its protocol, e.g. deepseek for /v1/chat/completions" },
    "keep-bodies": { type: "boolean", description: "Also store request and response bodies (hashes are always stored)" },
    ...globalArgs,
  },
  async run({ args }) {
    if (args.emulate && args.upstream !== undefined) {
      throw new CachetError("BAD_FLAG", "--upstream and --emulate cannot be used together", { hint: "--emulate forwards to the built-in emulator; drop one of them" });
    }
    const [{ checkListenFlags, isLoopback }, { dollars }] = await Promise.all([import("../listen.ts"), import("../meter/money.ts")]);
    const { port, host } = await checkListenFlags(args.port, args.host);
    const log = await import("../log.ts");
    const { startProxy } = await import("../proxy/index.ts");
    const proxy = await startProxy({
      port,
      host,
      ...(args.upstream !== undefined ? { upstream: args.upstream } : {}),
      ...(args.provider !== undefined ? { provider: args.provider } : {}),
      emulate: args.emulate === true,
      keepBodies: args["keep-bodies"] === true,
      notice: (message) => void log.warn(message),
      onRecorded: (row, exchange) =>
        void log.verbose(
          `recorded ${row.id} session ${row.sessionId} ${row.provider}/${row.model} HTTP ${exchange.httpStatus ?? "-"} ${row.status} ${row.latencyMs ?? "-"} ms ${row.costUsd === null ? "cost unknown" : `${row.costEstimate ? "~" : ""}${dollars(row.costUsd)}${row.usageLowerBound ? " (at least)" : ""}`}`,
        ),
    });
    // Only once it listens: a proxy that failed to start exposes nothing, and its error is the one line.
    if (!(await isLoopback(host))) {
      await log.warn(`listening on ${host}, not loopback: any machine that reaches this port can send requests through it to the providers, and they are recorded here`);
    }
    // Handlers first: a caller may signal as soon as it has read the URL.
    const stopped = new Promise<void>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    stdout().write(`${proxy.url}\n`);
    // A caller reads the URL line to find the proxy: if it never arrived, serving on would only hang that caller.
    await settleStdout("output").catch(async (error: unknown) => {
      await proxy.stop();
      throw error;
    });
    await log.info(
      `proxy on ${proxy.url}${proxy.emulatorUrl ? " (forwarding to the built-in emulator)" : ""}: set ANTHROPIC_BASE_URL=${proxy.url}, OPENAI_BASE_URL=${proxy.url}/v1, the Gemini base URL to ${proxy.url}, or ${proxy.url}/PROVIDER for another provider; Ctrl-C stops it`,
    );
    await stopped;
    await proxy.stop();
    await log.info(`proxy stopped: ${proxy.recorded()} exchange(s) recorded; see \`cachet sessions --recorded\`, \`cachet stats --recorded --by client\``);
  },
});
