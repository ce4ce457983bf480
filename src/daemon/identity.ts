/**
 * What a daemon client and server compare before a command runs: the package
 * version and the id of the code they were built from (one literal, rendered
 * at bundle time, shared by both).
 */
import { version } from "../../package.json";
import { buildId } from "./build-id.ts" with { type: "macro" };

/** The package version, e.g. "0.1.0". */
export const VERSION: string = version;

/** The build's id (src/daemon/build-id.ts). */
export const BUILD: string = buildId();
