// G0: the code before the fix, in plain JavaScript. sendMessage with triggerTurn as is: on an idle
// host pi runs the message directly with _runAgentPrompt, skipping the input handlers and
// before_agent_start (pi#5581): the woken turn runs without the harness (P-1), and during a
// compaction without a run it starts a run anyway (P-2).
export function createRawSender(pi) {
  return (message, options) => pi.sendMessage(message, options);
}
