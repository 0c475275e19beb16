// A first wake logic to test: deliver every message as a follow-up that starts a turn.
// wakesim's Node adapter calls the default export with a pi-shaped facade and calls the function it
// returns once per produced message (docs/guide/your-wake-logic.md).
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

export default function myWake(pi: ExtensionAPI) {
  return (message: unknown) => {
    pi.sendMessage(message as never, { deliverAs: "followUp", triggerTurn: true });
  };
}
