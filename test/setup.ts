/**
 * Test preload (bunfig.toml `[test] preload`): makes sure the generated assets
 * (price catalog, tokenizer ranks) exist, so `bun test` works on a fresh checkout without a build; and keeps the
 * turns of the binaries tests start with this environment from starting a resident daemon each
 * (src/daemon/autostart.ts), unless a test sets CACHET_DAEMON_AUTOSTART itself.
 */
import { existsSync } from "node:fs";
import { CATALOG_OUTPUT, generateCatalog } from "../build/catalog.ts";
import { TOKENIZER_OUTPUT, generateTokenizerData } from "../build/tokenizer-data.ts";

if (!existsSync(CATALOG_OUTPUT)) await generateCatalog();
if (!existsSync(TOKENIZER_OUTPUT)) await generateTokenizerData();

process.env.CACHET_DAEMON_AUTOSTART ??= "0";
