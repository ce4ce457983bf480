/**
 * A separate process for the store's concurrency and crash tests
 * (turn-lock.test.ts). Usage:
 *   bun test-child.ts turns SESSION TAG COUNT START   from epoch ms START, run COUNT locked turns, each a user and an assistant message
 *   bun test-child.ts crash SESSION             append a question and a partial answer, say "ready", then wait to be killed
 *   bun test-child.ts hold SESSION              take the turn lease, say "ready", then wait to be killed
 *   bun test-child.ts fresh NAME START          from epoch ms START, open the store (whichever process comes first creates it) and store one turn in a new session NAME
 * The store is the one CACHET_HOME points to.
 */
import { openStore } from "./store.ts";

const [mode, sessionId, tag, count, start] = process.argv.slice(2);
// Every process starts opening the store at the same moment, so creation and migration race.
if (mode === "fresh") await Bun.sleep(Math.max(0, Number(tag) - Date.now()));
const store = openStore();

if (mode === "turns") {
  await Bun.sleep(Math.max(0, Number(start) - Date.now()));
  for (let i = 0; i < Number(count); i++) {
    const release = await store.acquireTurn(sessionId!, { waitMs: 60_000 });
    const before = store.loadSession(sessionId!).messages;
    if (before.length % 2 !== 0 || (before.length > 0 && before.at(-1)!.role !== "assistant")) {
      throw new Error(`turn ${tag}-${i} saw a half-stored turn: ${before.length} messages`);
    }
    store.appendMessage(sessionId!, { id: `${tag}-u${i}`, role: "user", content: [{ type: "text", text: `question ${i} from ${tag}` }] });
    // Give the other process a chance to interleave if the lock did not hold.
    await Bun.sleep(Math.random() * 4);
    store.appendMessage(sessionId!, { id: `${tag}-a${i}`, role: "assistant", content: [{ type: "text", text: `answer ${i} to ${tag}, after ${before.length}` }] });
    release();
    // Think time between turns, as a script would have, so both processes contend for the lock.
    await Bun.sleep(15);
  }
} else if (mode === "crash") {
  store.appendMessage(sessionId!, { id: "crash-u", role: "user", content: [{ type: "text", text: "tell me a long story" }] });
  store.appendMessage(sessionId!, { id: "crash-a", role: "assistant", content: [], incomplete: true });
  store.updatePartial(sessionId!, "crash-a", [{ type: "text", text: "Once upon a" }], true);
  process.stdout.write("ready\n");
  await Bun.sleep(60_000);
} else if (mode === "hold") {
  await store.acquireTurn(sessionId!);
  process.stdout.write("ready\n");
  await Bun.sleep(60_000);
} else if (mode === "fresh") {
  const id = store.createSession({ model: "anthropic/claude-sonnet-4-5", name: sessionId! }).id;
  const release = await store.acquireTurn(id);
  store.appendMessage(id, { id: `${sessionId}-u`, role: "user", content: [{ type: "text", text: `question from ${sessionId}` }] });
  store.appendMessage(id, { id: `${sessionId}-a`, role: "assistant", content: [{ type: "text", text: `answer to ${sessionId}` }] });
  release();
} else {
  throw new Error(`unknown mode ${mode}`);
}
