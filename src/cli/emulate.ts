/**
 * `cachet emulate [--port N] [--host 127.0.0.1]`: serves the provider
 * emulator until SIGINT/SIGTERM. The first stdout line is the root URL.
 */
import { defineCommand } from "citty";
import { globalArgs } from "./_args.ts";
import { settleStdout, stdout } from "../stdout.ts";

export default defineCommand({
  meta: { name: "emulate", description: "Serve the provider emulator on loopback" },
  args: {
    ...globalArgs,
    port: { type: "string", description: "TCP port (0 picks a free one)", default: "0" },
    host: { type: "string", description: "Interface to listen on", default: "127.0.0.1" },
  },
  async run({ args }) {
    const { checkListenFlags } = await import("../listen.ts");
    const { port, host } = await checkListenFlags(args.port, args.host);
    const { startEmulator } = await import("../emulator/index.ts");
    const emulator = await startEmulator({ port, host });
    // Listened for before the URL is out: a caller that stops the server as soon as it read the URL gets a clean stop.
    const stopped = new Promise<void>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    stdout().write(`${emulator.url}\n`);
    // A caller reads the URL line to find the server: if it never arrived, serving on would only hang that caller.
    await settleStdout("output").catch(async (error: unknown) => {
      await emulator.stop();
      throw error;
    });
    const { info } = await import("../log.ts");
    await info(`emulator serving on ${emulator.url} (Anthropic /v1/messages, OpenAI /v1/chat/completions and /v1/responses, Gemini /v1beta/models/...); Ctrl-C stops it`);
    await stopped;
    await emulator.stop();
  },
});
