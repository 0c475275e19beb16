// A wake logic that leans on everything the realm virtualises, for tests/external.rs: Date.now,
// setTimeout/clearTimeout, setInterval, queueMicrotask, await, Math.random, crypto.randomUUID, a
// global it writes, and console output. If any of them escaped the simulation (a real clock, a
// random seed, a global carried from one run into the next), a seed would not give the same
// trace alone and after other seeds, or twice.
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";

type Message = { customType: string; content: string };

declare global {
  // eslint-disable-next-line no-var
  var clockworkRuns: number | undefined;
}

export default function clockwork(pi: ExtensionAPI) {
  // Reset must undo this: every run starts with clockworkRuns === 1.
  globalThis.clockworkRuns = (globalThis.clockworkRuns ?? 0) + 1;
  const extra = (globalThis.clockworkRuns - 1) * 1000;
  let ctx: ExtensionContext | undefined;
  let held: Message[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let lastWake = -Infinity;
  const nonce = crypto.randomUUID();

  pi.on("session_start", (_e, c: ExtensionContext) => {
    ctx = c;
  });
  pi.on("agent_end", async (_e, c: ExtensionContext) => {
    ctx = c;
    await Promise.resolve();
    // After the await, still inside the handler: this call is part of agent_end.
    if (held.length > 0) flush();
  });
  pi.on("agent_settled", () => {
    queueMicrotask(() => {
      if (held.length > 0) arm();
    });
  });

  // A timer set while loading: it goes out with the first event.
  setTimeout(() => console.log("clockwork: loaded at", Date.now()), 1);

  let ticker: ReturnType<typeof setInterval> | undefined;
  function tick() {
    if (ticker === undefined) {
      ticker = setInterval(() => {
        if (Date.now() - lastWake > 5_000 && held.length > 0) arm();
      }, 2_000);
    }
  }

  function flush() {
    for (const m of held) pi.sendMessage(m, { triggerTurn: false });
    held = [];
    if (ticker !== undefined) {
      clearInterval(ticker);
      ticker = undefined;
    }
  }

  function arm() {
    if (timer !== undefined) clearTimeout(timer);
    const jitter = Math.floor(Math.random() * 40) + extra;
    timer = setTimeout(() => {
      timer = undefined;
      let idle = false;
      try {
        idle = ctx?.isIdle() === true;
      } catch {
        idle = false;
      }
      if (!idle) return;
      flush();
      lastWake = Date.now();
      console.log(`clockwork ${nonce}: wake at ${new Date().toISOString()}`);
      pi.sendUserMessage(" ");
    }, 50 + jitter);
  }

  return (message: Message) => {
    held.push(message);
    tick();
    arm();
  };
}
