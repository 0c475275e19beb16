// The trigger of pi #5886's steering case: an asynchronous `input` handler that steers the agent
// after the run's last look at its queues. Notifications reach the agent as user messages
// (`pi.sendUserMessage`), steering it while it works. The extension's `input` handler holds a
// message that arrives while the agent works until the agent's turn is over (it does not cut
// into a turn), does some asynchronous work of its own (`options.awaits` awaits of settled
// promises, as a lookup through a few async layers takes), then sends the message on as a steer
// with `pi.sendUserMessage(.., { deliverAs: "steer" })` and reports the input handled. pi's
// `isStreaming` still says the run is on while it settles, so the message is queued as a steer;
// whether anything takes it is the release's.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

interface Notice {
  content: string;
}

interface Options {
  // How many awaits the handler's own work takes once the turn is over (settled promises: an
  // asynchronous lookup through a few layers), before it steers.
  awaits?: number;
}

export default function steerAtTurnEnd(pi: ExtensionAPI, options: Options = {}) {
  const awaits = options.awaits ?? 0;
  let working = false;
  const held: Array<() => void> = [];
  const forwarded = new Set<string>();
  pi.on("agent_start", () => {
    working = true;
  });
  pi.on("agent_end", () => {
    working = false;
    for (const release of held.splice(0)) release();
  });
  pi.on("input", async (event) => {
    if (!working || forwarded.delete(event.text)) {
      return { action: "continue" };
    }
    await new Promise<void>((release) => held.push(release));
    for (let i = 0; i < awaits; i++) await Promise.resolve();
    forwarded.add(event.text);
    pi.sendUserMessage(event.text, { deliverAs: "steer" });
    return { action: "handled" };
  });
  return (notice: Notice) => {
    pi.sendUserMessage(notice.content, working ? { deliverAs: "steer" } : undefined);
  };
}
