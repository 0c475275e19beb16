// G2: wake an idle host through prompt(), deciding idleness with ctx.isIdle() and no reservation.
// BGamboa13/gentle-shell lib/idle-wake.ts @949bd4ae, as `docs/hosts/gentle-agents.md` gives it.
//
// The race (P-4): pi keeps isIdle() true while a prompt prepares (steps 0-11), so a second send in
// that window wakes again, and two prompts reach Agent.prompt.
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";

type SendOptions = { deliverAs?: "steer" | "followUp"; triggerTurn?: boolean };
type CustomMessage = { customType: string; content: unknown; display?: boolean; details?: unknown };
export type IdleWakeSender = (message: CustomMessage, options: SendOptions) => void;

export function createIdleWakeSender(pi: ExtensionAPI): IdleWakeSender {
  let latest: ExtensionContext | undefined;
  const remember = (_event: unknown, ctx: ExtensionContext): void => {
    latest = ctx;
  };
  pi.on("session_start", remember);
  pi.on("agent_start", remember);
  pi.on("turn_end", remember);
  pi.on("agent_end", remember);

  // A missing or stale ctx reads as not idle: the host path, never nextTurn (P-8).
  const hostIdle = (): boolean => {
    try {
      return latest?.isIdle() === true;
    } catch {
      return false;
    }
  };

  return (message, options) => {
    if (hostIdle()) {
      pi.sendMessage(message, { deliverAs: "nextTurn" });
      pi.sendUserMessage(" ");
      return;
    }
    pi.sendMessage(message, options);
  };
}
