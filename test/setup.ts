/**
 * Test preload (bunfig.toml `[test] preload`): makes sure the generated assets
 * (price catalog, tokenizer ranks) exist, so `bun test` works on a fresh checkout without a build; and keeps the
 * turns of the binaries tests start with this environment from starting a resident daemon each
 * (src/daemon/autostart.ts), unless a test sets CACHET_DAEMON_AUTOSTART itself. Also makes the directory of the JUnit
 * report bunfig.toml asks for: Bun writes the file but not its directory.
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { CATALOG_OUTPUT, generateCatalog } from "../build/catalog.ts";
import { TOKENIZER_OUTPUT, generateTokenizerData } from "../build/tokenizer-data.ts";

if (!existsSync(CATALOG_OUTPUT)) await generateCatalog();
if (!existsSync(TOKENIZER_OUTPUT)) await generateTokenizerData();

process.env.CACHET_DAEMON_AUTOSTART ??= "0";

mkdirSync(join(import.meta.dir, "..", ".test-results"), { recursive: true });
