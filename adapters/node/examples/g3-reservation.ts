// G3 inside gentle-agents' outbox.
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { installOutbox } from "./gentle/outbox";
import { createIdleWakeSender } from "./gentle/idle-wake-d62bc901";

export default function g3(pi: ExtensionAPI) {
  return installOutbox(pi, createIdleWakeSender(pi));
}
