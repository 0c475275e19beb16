// G1: idleness from an agent_start/agent_end counter (the design gentle-shell #1528 described, then
// abandoned). pi emits one agent_start/agent_end pair per inner run, so the counter reads 0 in the
// gap between two inner runs while the run goes on: the wake prompt then fails at step 5 and the
// message stays in nextTurn (P-3).
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

type SendOptions = { deliverAs?: "steer" | "followUp"; triggerTurn?: boolean };
type CustomMessage = { customType: string; content: unknown };

export function createCounterWakeSender(pi: ExtensionAPI) {
  let activeRuns = 0;
  pi.on("agent_start", () => {
    activeRuns += 1;
  });
  pi.on("agent_end", () => {
    activeRuns = Math.max(0, activeRuns - 1);
  });
  return (message: CustomMessage, options: SendOptions): void => {
    if (activeRuns === 0) {
      pi.sendMessage(message, { deliverAs: "nextTurn" });
      pi.sendUserMessage(" ");
      return;
    }
    pi.sendMessage(message, options);
  };
}
