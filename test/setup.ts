/**
 * Test preload (bunfig.toml `[test] preload`): makes sure the embedded price
 * catalog exists, so `bun test` works on a fresh checkout without a build.
 */
import { existsSync } from "node:fs";
import { CATALOG_OUTPUT, generateCatalog } from "../build/catalog.ts";

if (!existsSync(CATALOG_OUTPUT)) await generateCatalog();
