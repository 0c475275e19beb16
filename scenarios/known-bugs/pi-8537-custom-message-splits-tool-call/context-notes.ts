// The trigger of pi #8537: an extension that adds what happens around the agent as context
// without interrupting it. While the agent works, a notice is recorded with
// `pi.sendMessage(.., { triggerTurn: false })`, the documented way to add a custom message the
// agent reads on its next request; while it is idle, the notice is sent as a user message,
// which starts a turn through prompt() (and before_agent_start).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

interface Notice {
  customType: string;
  content: string;
  display: boolean;
  details?: unknown;
}

export default function contextNotes(pi: ExtensionAPI) {
  let working = false;
  pi.on("agent_start", () => {
    working = true;
  });
  pi.on("agent_end", () => {
    working = false;
  });
  return (notice: Notice) => {
    if (!working) {
      pi.sendUserMessage(notice.content);
      return;
    }
    pi.sendMessage(
      { customType: "notes.context", content: notice.content, display: true, details: notice.details },
      { triggerTurn: false }
    );
  };
}
