// For tests/adapter_ahead.rs, the Node side of tests/data/adapters/ahead.py: quiet handlers, and
// now and then (when Date.now() % 97 === 5, about one in a hundred) one that is not, as
// options.mode says: "calls" sends a message; "query" sends one, then asks isIdle() and goes on
// whatever it answers or throws (in an event sent ahead the realm abandons the query: the handler
// catches that and carries on); "throws" throws.
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";

type Message = { customType: string; content: string };

export default function ahead(pi: ExtensionAPI, options: { mode?: string }) {
  const mode = options.mode ?? "calls";
  const odd = (_e: unknown, ctx: ExtensionContext) => {
    if (Date.now() % 97 !== 5) return;
    if (mode === "throws") throw new Error("the handler threw on purpose");
    pi.sendMessage({ customType: "ahead", content: "odd", display: true }, { deliverAs: "followUp" });
    if (mode === "query") {
      let idle = false;
      try {
        idle = ctx.isIdle();
      } catch {
        idle = false;
      }
      if (idle) pi.sendUserMessage("idle after the odd send", { deliverAs: "followUp" });
    }
  };
  pi.on("turn_end", odd);
  pi.on("agent_end", odd);
  pi.on("agent_settled", odd);
  return (message: Message) => {
    pi.sendUserMessage(message.content, { deliverAs: "followUp" });
  };
}
