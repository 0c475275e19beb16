// G1 inside gentle-agents' outbox.
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { installOutbox } from "./gentle/outbox";
import { createCounterWakeSender } from "./gentle/counter-wake";

export default function g1(pi: ExtensionAPI) {
  return installOutbox(pi, createCounterWakeSender(pi));
}
