/**
 * The servers cachet starts on a user's `--port` and `--host` (`cachet
 * emulate`, `cachet proxy`): both flags checked before anything starts, and a
 * failure to listen read as one line naming the flag at fault, the same for
 * every such command (BAD_FLAG, exit 2).
 */
import { CachetError } from "./errors.ts";
import { decimalInteger } from "./flag-number.ts";

const HOST_HINT = "give a name or address of this machine: 127.0.0.1 (loopback, the default), localhost, ::1, or 0.0.0.0 for every interface";
const PORT_HINT = "pick another --port, or 0 for a free one";

/** `--port` read and `--host` checked: the address to listen on, brackets of an IPv6 literal removed. */
export interface ListenFlags {
  /** 0 to 65535; 0 picks a free port. */
  port: number;
  /** A name or a bare IP address (`::1`, never `[::1]`), as Bun.serve takes it and a URL is built from. */
  host: string;
}

/**
 * Reads `--port` and checks `--host`: a port from 0 to 65535 in decimal digits (src/flag-number.ts); a
 * host that is an IP address or a name that resolves (a path, a dotted quad
 * that is no IPv4 address and a name no resolver knows are refused here, where
 * Bun would report them as a taken port or with a file-system error). An IPv6
 * address may come in URL brackets (`[::1]`) and is returned bare; brackets
 * around anything else (`[127.0.0.1]`, `[localhost]`) are refused, as in a URL.
 * @returns the port and the host to listen on
 * @throws CachetError BAD_FLAG (exit 2) naming the flag
 */
export async function checkListenFlags(portText: string, host: string): Promise<ListenFlags> {
  const port = decimalInteger(portText);
  if (port === undefined || port > 65_535) {
    throw new CachetError("BAD_FLAG", `--port must be an integer from 0 to 65535 in decimal digits, got "${portText}"`, { hint: "use --port 0 for a free port" });
  }
  const { isIP } = await import("node:net");
  if (host.startsWith("[") && host.endsWith("]")) {
    const bare = host.slice(1, -1);
    if (isIP(bare) === 6) return { port, host: bare };
    throw new CachetError("BAD_FLAG", `--host ${host}: only an IPv6 address goes in brackets`, { hint: HOST_HINT });
  }
  if (isIP(host) !== 0) return { port, host };
  if (/^[\d.]+$/.test(host)) throw new CachetError("BAD_FLAG", `--host ${host} is not an IPv4 address`, { hint: HOST_HINT });
  // A host name is letters, digits, dots and dashes; anything else (a socket path, a URL, spaces) is no name.
  if (!/^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(host)) throw new CachetError("BAD_FLAG", `--host ${host} is not a host name or an IP address`, { hint: HOST_HINT });
  const { lookup } = await import("node:dns/promises");
  try {
    await lookup(host);
  } catch (error) {
    throw new CachetError("BAD_FLAG", `--host ${host}: no such host (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, { hint: HOST_HINT, cause: error });
  }
  return { port, host };
}

/**
 * The one-line error for a server that could not listen on `host`:`port`: a
 * taken port names --port; anything else (an address of another machine,
 * a name that does not resolve) names the host.
 * @param error what Bun.serve threw
 */
export function listenError(error: unknown, host: string, port: number): CachetError {
  const code = (error as NodeJS.ErrnoException).code;
  // Bun says EADDRINUSE for a host it cannot resolve too: with port 0 (any free port) it can only be the host.
  if (code === "EADDRINUSE" && port !== 0) return new CachetError("BAD_FLAG", `cannot listen on --port ${port}: the port is in use on ${host}`, { hint: PORT_HINT, cause: error });
  if (code === "EACCES" && port !== 0 && port < 1024) return new CachetError("BAD_FLAG", `cannot listen on --port ${port}: ports below 1024 need privileges`, { hint: PORT_HINT, cause: error });
  const why = code === "EADDRNOTAVAIL" ? "not an address of this machine" : code === "EADDRINUSE" ? "the address cannot be bound" : (error as Error).message;
  return new CachetError("BAD_FLAG", `cannot listen on --host ${host}: ${why}`, { hint: HOST_HINT, cause: error });
}

/**
 * Whether `host` (as {@link checkListenFlags} returns it: no brackets) only
 * listens on this machine: the name localhost in any case (host names are
 * case-insensitive, RFC 4343), any address of 127.0.0.0/8 and ::1 in any of
 * their spellings, including IPv4-mapped (`::ffff:127.0.0.1`). Names other
 * than localhost are not resolved: what they point at may change.
 */
export async function isLoopback(host: string): Promise<boolean> {
  const { BlockList, isIP } = await import("node:net");
  const family = isIP(host);
  if (family === 0) return /^localhost\.?$/i.test(host);
  const loopback = new BlockList();
  loopback.addSubnet("127.0.0.0", 8, "ipv4");
  loopback.addAddress("::1", "ipv6");
  return loopback.check(host, family === 6 ? "ipv6" : "ipv4");
}
