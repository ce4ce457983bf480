/**
 * `daemon status` and `daemon stop` as a client: one CONTROL request on the
 * socket, one CONTROL_REPLY back.
 */
import type { Socket } from "bun";
import { type Control, FRAME, json, jsonFrame, pidPath, PROTOCOL_VERSION, type Status } from "./protocol.ts";
import { Wire } from "./wire.ts";

/**
 * How long a control request waits for the daemon's reply, ms: a live daemon answers at once, even while it runs a
 * command; one that does not in this time is stopped (SIGSTOP) or hung.
 */
export const REPLY_WAIT_MS = 3000;

/** The daemon's socket connected but no reply came within {@link REPLY_WAIT_MS}. */
export class DaemonUnanswered extends Error {
  /**
   * @param pid the pid the daemon wrote when it bound the socket (src/daemon/protocol.ts pidPath), undefined when
   *   that file is missing or names no running process
   */
  constructor(readonly pid: number | undefined) {
    super(
      pid === undefined
        ? "cachet daemon: the daemon does not answer (stopped or hung?); end its process (`cachet daemon run` with this CACHET_HOME)"
        : `cachet daemon: pid ${pid} does not answer (stopped or hung?); \`kill ${pid}\` ends it`,
    );
  }
}

/**
 * Asks the daemon at `path` for its status, or to stop. Undefined when no
 * daemon answers there (no socket file, or a stale one).
 * @param op "stop" resolves only once the daemon's process has exited (its side of the connection closed)
 * @throws DaemonUnanswered when the socket connects but no reply comes within {@link REPLY_WAIT_MS}
 */
export async function ask(path: string, op: Control["op"]): Promise<Status | undefined> {
  let reply: Status | undefined;
  let replied!: () => void;
  const answered = new Promise<void>((resolve) => (replied = resolve));
  let closed!: () => void;
  const ended = new Promise<void>((resolve) => (closed = resolve));
  let wire: Wire | undefined;
  try {
    await Bun.connect({
      unix: path,
      socket: {
        open(socket) {
          wire = new Wire(
            socket as Socket<unknown>,
            (frame) => {
              if (frame.type !== FRAME.CONTROL_REPLY) return;
              reply = json<Status>(frame.payload);
              replied();
            },
            () => {
              replied();
              closed();
            },
          );
        },
        data: (_socket, chunk) => wire?.onData(chunk),
        drain: () => wire?.onDrain(),
        close: () => wire?.onClose(),
        error: () => wire?.onClose(),
      },
    });
  } catch {
    return undefined;
  }
  wire?.send(jsonFrame(FRAME.CONTROL, { protocol: PROTOCOL_VERSION, op } satisfies Control));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = await Promise.race([answered.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), REPLY_WAIT_MS)))]);
  clearTimeout(timer);
  if (late) {
    void wire?.end();
    throw new DaemonUnanswered(recordedPid(path));
  }
  await ended;
  return reply;
}

/** The running process the daemon at `path` said it is, if any. */
function recordedPid(path: string): number | undefined {
  try {
    const pid = Number.parseInt(process.getBuiltinModule("node:fs").readFileSync(pidPath(path), "utf8"), 10);
    if (!(pid > 0)) return undefined;
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}
