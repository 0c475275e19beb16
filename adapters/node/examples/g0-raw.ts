// G0 inside gentle-agents' outbox. Scenario options: { completionsAs = "followUp" } gives the
// pre-#867 delivery.
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { installOutbox, type OutboxOptions } from "./gentle/outbox";
import { createRawSender } from "./gentle/raw-send.mjs";

export default function g0(pi: ExtensionAPI, options: OutboxOptions) {
  return installOutbox(pi, createRawSender(pi), options);
}
