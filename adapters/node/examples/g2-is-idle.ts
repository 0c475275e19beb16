// G2 inside gentle-agents' outbox: the sender module runs as its PR wrote it.
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { installOutbox } from "./gentle/outbox";
import { createIdleWakeSender } from "./gentle/idle-wake-949bd4ae";

export default function g2(pi: ExtensionAPI) {
  return installOutbox(pi, createIdleWakeSender(pi));
}
