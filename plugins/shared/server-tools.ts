/**
 * Server tools (a tool the provider runs itself, `ToolDefinition.server`) on
 * a wire that has none of that kind: refused before anything is sent, so a
 * provider never receives a server tool disguised as a function it would
 * expect the client to run.
 */
import type { PluginServices, RequestContext } from "../../src/plugin/index.ts";

/**
 * @throws CachetError INPUT_INVALID naming the first server tool and the provider.
 */
export function refuseServerTools(context: RequestContext, services: PluginServices): void {
  const tool = context.prefix.tools.find((t) => t.server !== undefined);
  if (!tool) return;
  throw new services.CachetError("INPUT_INVALID", `tool "${tool.name}" is a server tool (type ${JSON.stringify(tool.server!.type)}) that provider "${context.provider}" does not run`, {
    hint: "server tools are sent as written to the provider that documents them (Anthropic web_search_20250305); drop it from --tools for this provider",
  });
}
