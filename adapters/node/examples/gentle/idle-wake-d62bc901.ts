// G3: G2 plus a wake reservation with lazy expiry.
// BGamboa13/gentle-shell lib/idle-wake.ts @d62bc901, as `docs/hosts/gentle-agents.md` gives it.
//
// The first idle send reserves the turn; later idle sends only queue as nextTurn and ride the
// pending prompt. agent_start and session_start release the reservation; otherwise it expires after
// WAKE_RESERVATION_MS, but only when the next send looks. A wake prompt that fails without a run
// holds the reservation, and what was queued meanwhile waits (P-5).
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";

export const WAKE_RESERVATION_MS = 60_000;

type SendOptions = { deliverAs?: "steer" | "followUp"; triggerTurn?: boolean };
type CustomMessage = { customType: string; content: unknown; display?: boolean; details?: unknown };
export type IdleWakeSender = (message: CustomMessage, options: SendOptions) => void;

export interface IdleWakeOptions {
  /** Injectable clock for tests. */
  now?: () => number;
}

export function createIdleWakeSender(pi: ExtensionAPI, { now = Date.now }: IdleWakeOptions = {}): IdleWakeSender {
  let latest: ExtensionContext | undefined;
  let reservedAt: number | undefined;

  pi.on("session_start", (_event, ctx: ExtensionContext) => {
    latest = ctx;
    reservedAt = undefined;
  });
  pi.on("agent_start", (_event, ctx: ExtensionContext) => {
    latest = ctx;
    reservedAt = undefined;
  });
  pi.on("turn_end", (_event, ctx: ExtensionContext) => {
    latest = ctx;
  });
  pi.on("agent_end", (_event, ctx: ExtensionContext) => {
    latest = ctx;
  });

  const hostIdle = (): boolean => {
    try {
      return latest?.isIdle() === true;
    } catch {
      return false;
    }
  };

  return (message, options) => {
    if (!hostIdle()) {
      pi.sendMessage(message, options);
      return;
    }
    pi.sendMessage(message, { deliverAs: "nextTurn" });
    if (reservedAt !== undefined && now() - reservedAt < WAKE_RESERVATION_MS) {
      return;
    }
    reservedAt = now();
    pi.sendUserMessage(" ");
  };
}
