// A stand-in for gentle-shell's extensions/gentle-agents.ts, which is not on a registry and could
// not be obtained here (see README "Published pi extensions on the real host"). It has the shape
// the documented command expects of the real file: a checkout directory holding
// `extensions/gentle-agents.ts`, a pi extension factory as its default export, background
// completions arriving on its own transport (here the extension event bus,
// `gentle-agents:completion`), and gentle-agents' completion queue (lib/agents-completion-delivery
// in gentle-shell): a completion that lands while the parent runs is enqueued and flushed when
// the run settles; one that lands while idle wakes the parent with a followUp and triggerTurn.
// `WAKESIM_GENTLE_SHELL=tests/data/gentle-standin wakesim run examples/real-pi-gentle/` runs it.

type Completion = { id: string; text: string };

export default function gentleAgentsStandIn(pi: any) {
  let pending: Completion[] = [];
  let idle = true;

  const deliver = (c: Completion) => {
    pi.sendMessage(
      { customType: "gentle-agents.completion", content: c.text, display: true, details: { id: c.id } },
      { deliverAs: "followUp", triggerTurn: true },
    );
  };

  pi.on("agent_start", () => {
    idle = false;
  });
  pi.on("agent_settled", (_event: unknown, ctx: any) => {
    idle = ctx.isIdle();
    if (!idle) return;
    const taken = pending;
    pending = [];
    for (const c of taken) deliver(c);
  });

  pi.events.on("gentle-agents:completion", (message: any) => {
    const c = { id: String(message?.details?.id ?? ""), text: String(message?.content ?? "") };
    if (idle) deliver(c);
    else pending.push(c);
  });
}
