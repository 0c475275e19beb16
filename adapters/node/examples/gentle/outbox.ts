// gentle-agents' delivery before the upstream redesign (Gentleman-Programming/gentle-shell,
// extensions/gentle-agents.ts, as `docs/hosts/gentle-agents.md` describes it), around a send function:
//
// - completions and notifications are queued, and flushed at once when no agent run is counted
//   active, else at turn_end, agent_end and agent_settled, each with {deliverAs: "steer",
//   triggerTurn: true} (steer since #867; `completionsAs: "followUp"` restores the older choice);
// - orchestrator messages go to the send function at once, as followUp;
// - session_start drops what the old session queued.
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

export type SendOptions = { deliverAs?: "steer" | "followUp" | "nextTurn"; triggerTurn?: boolean };
export type WakeMessage = { customType: string; content: string; details?: { kind?: string } };
export type Send = (message: WakeMessage, options: SendOptions) => void;

export interface OutboxOptions {
  completionsAs?: "steer" | "followUp";
}

export function installOutbox(pi: ExtensionAPI, send: Send, options: OutboxOptions = {}): Send {
  let activeAgentRuns = 0;
  let queue: WakeMessage[] = [];
  const itemOptions: SendOptions = { deliverAs: options.completionsAs ?? "steer", triggerTurn: true };

  const flush = (): void => {
    while (queue.length > 0) {
      send(queue.shift()!, itemOptions);
    }
  };

  pi.on("session_start", () => {
    queue = [];
  });
  pi.on("agent_start", () => {
    activeAgentRuns += 1;
  });
  pi.on("turn_end", flush);
  pi.on("agent_end", () => {
    activeAgentRuns = Math.max(0, activeAgentRuns - 1);
    flush();
  });
  pi.on("agent_settled", flush);

  return (message: WakeMessage, deliveryOptions: SendOptions): void => {
    if (message.details?.kind === "orchestrator") {
      send(message, deliveryOptions);
      return;
    }
    queue.push(message);
    if (activeAgentRuns === 0) flush();
  };
}
