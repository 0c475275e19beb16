// The trigger of pi #5581 (and #8773, whose reporter wakes pi "when a monitor or background
// subagent completes" this way): a custom message with `triggerTurn: true` starts the agent's
// turn while it is idle. The reporter's other half, an extension with a `before_agent_start`
// hook that puts something into the system prompt, is wakesim's own probe: it adds the harness
// marker there, and the `harness` invariant checks that every model request carries it.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

interface Notice {
  customType: string;
  content: string;
  display: boolean;
  details?: unknown;
}

export default function monitorWake(pi: ExtensionAPI) {
  return (notice: Notice) => {
    pi.sendMessage(
      { customType: "monitor.done", content: notice.content, display: true, details: notice.details },
      { triggerTurn: true }
    );
  };
}
