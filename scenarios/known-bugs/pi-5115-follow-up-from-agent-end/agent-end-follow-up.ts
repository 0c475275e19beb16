// The trigger of pi PR #5115 (and #3014): an extension that queues a follow-up from its
// `agent_end` handler. This one collects notifications while the agent works and, when the run
// ends, asks the agent to look at them with `pi.sendUserMessage(.., { deliverAs: "followUp" })`
// (pi requires a delivery mode there: the run is still on while agent_end's handlers run). A
// notification that arrives while the agent is idle is sent at once, as a user message, so that
// its run goes through prompt() and before_agent_start.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

interface Notice {
  content: string;
}

export default function agentEndFollowUp(pi: ExtensionAPI) {
  let working = false;
  const inbox: string[] = [];
  pi.on("agent_start", () => {
    working = true;
  });
  pi.on("agent_end", () => {
    working = false;
    if (inbox.length === 0) return;
    const text = `New notifications:\n${inbox.splice(0).join("\n")}`;
    pi.sendUserMessage(text, { deliverAs: "followUp" });
  });
  return (notice: Notice) => {
    if (working) inbox.push(notice.content);
    else pi.sendUserMessage(notice.content);
  };
}
