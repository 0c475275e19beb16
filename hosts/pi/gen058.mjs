// pi 0.58.3 (`@mariozechner/pi-coding-agent`, the older host of the reference's H-5) under the
// real pi driver: what differs from 0.99.1 in its AgentSession, and how the driver observes it.
//
// Read from the installed package (dist/core/agent-session.js, pi-agent-core dist/agent.js):
//   - no session run flag: `isStreaming` and the extension's `ctx.isIdle()` (`!isStreaming`) read
//     the agent's `state.isStreaming`, which `Agent._runLoop` sets and `agent_end` clears. So the
//     host reads idle between an inner run that ended in a retryable error and its continue();
//   - prompt() calls `agent.prompt(messages)` itself (no `_runAgentPrompt`, no `agent_settled`,
//     no before-settle boundary): its steps are the input handlers, the streaming check, the
//     model registry's `getApiKey`, the compaction check, `nextTurn` taken, before_agent_start,
//     then `agent.prompt`;
//   - sendMessage with `triggerTurn` on an idle agent calls `agent.prompt(message)` directly;
//   - agent events reach extensions through `_agentEventQueue`, which the agent does not await:
//     `agent_end` handlers run after `isStreaming` is already false;
//   - a retryable error (`_handleRetryableError`, on `agent_end`): backoff `baseDelayMs × 2^(n-1)`
//     (no cap), then `agent.continue()` from a `setTimeout(…, 0)`.
// Observed here: `run_flag` and `agent_run` both follow `state.isStreaming` (the model's 0.58
// emits both), starters at `agent.prompt`/`agent.continue`, runs numbered at each start.

import { watchField } from "./watch.mjs";

/** pi's objects (its session, agent, messages): not typed here. @typedef {any} PiObject */
/**
 * What the driver hands a version's part (driver.mjs).
 * @typedef {object} DriverContext
 * @property {(ev: string, fields?: Record<string, unknown>) => void} obs
 * @property {(text: string) => void} note
 * @property {import("node:async_hooks").AsyncLocalStorage<Record<string, any>>} als
 * @property {() => Record<string, any>} R the run's state
 * @property {(run: number) => void} drawToolTurns
 * @property {(content: unknown) => number[]} carried
 */

/**
 * The run flag, starters and runs of a 0.58 session. `cx`: `obs`, `note`, `als` (the driver's
 * async-local store: `{ prompt, promptStarted }` inside a prompt, `{ run }` inside a run), `R()`
 * (the run's state: `runs`, `livePrompts`), `drawToolTurns`, `carried` (the producer ids in
 * content).
 */
export function instrument(/** @type {PiObject} */ session, /** @type {DriverContext} */ cx) {
  const agent = session.agent;
  const { obs, note, als } = cx;
  // A message enters the context the model reads when the agent emits its message_end: the
  // session's own listeners (and its subscribers) run later, on its event queue, after the
  // extensions' handlers, by which time the agent may have sent the request.
  // A message the session appends itself (sendMessage without triggerTurn on an idle agent) is
  // emitted to the session's subscribers only: the driver's subscriber observes those
  // (`appendedBySession`), and skips what the agent already reported.
  const seen = new WeakSet();
  agent.subscribe((/** @type {PiObject} */ ev) => {
    if (ev.type !== "message_end") return;
    seen.add(ev.message);
    appended(ev.message);
  });
  cx.R().appendedBySession = (/** @type {PiObject} */ m) => {
    if (!seen.has(m)) appended(m);
  };
  /** @param {PiObject} m */
  function appended(m) {
    if (m.role === "user" || m.role === "custom") for (const id of cx.carried(m.content)) obs("appended", { msg: id });
  }
  watchField(agent.state, "isStreaming", (v, old) => {
    if (!!v === !!old) return;
    obs("agent_run", { on: !!v });
    obs("run_flag", { on: !!v });
  });

  // A retry's continue() belongs to the run whose agent_end scheduled it (the queue's handler
  // runs in that run's async context); the timer that calls it does not carry the context.
  /** @type {(number | undefined)[]} */
  const continues = [];
  const origRetry = session._handleRetryableError.bind(session);
  session._handleRetryableError = async (/** @type {PiObject} */ message) => {
    const run = als.getStore()?.run;
    const did = await origRetry(message);
    if (did) continues.push(run);
    return did;
  };

  const origPrompt = agent.prompt.bind(agent);
  agent.prompt = (/** @type {PiObject} */ input, /** @type {PiObject} */ images) => {
    const R = cx.R();
    const run = ++R.runs;
    const store = als.getStore() || {};
    const fromPrompt = Array.isArray(input) && store.prompt !== undefined && !store.promptStarted;
    const accepted = !agent.state.isStreaming;
    if (fromPrompt) {
      store.promptStarted = true;
      R.livePrompts--;
      const ids = input.slice(1).flatMap((/** @type {PiObject} */ m) => cx.carried(m.content));
      note(`P${store.prompt} takes nextTurn [${ids.map((/** @type {number} */ i) => `m${i + 1}`).join(" ")}] and calls Agent.prompt`);
      obs("starter", { who: "prompt", n: store.prompt, accepted });
    } else {
      note(`direct run R${run} (sendMessage triggerTurn)`);
      obs("starter", { who: "direct", n: run, accepted });
    }
    if (!accepted) note(`Agent.prompt rejects: "Agent is already processing a prompt."`);
    else cx.drawToolTurns(run);
    return als.run({ prompt: fromPrompt ? store.prompt : undefined, run }, () => origPrompt(input, images));
  };

  const origContinue = agent.continue.bind(agent);
  agent.continue = () => {
    const run = continues.length ? continues.shift() : als.getStore()?.run;
    const accepted = !agent.state.isStreaming;
    note(`R${run} continue() from its retry timer`);
    obs("starter", { who: "continue", n: run, accepted });
    if (accepted) cx.drawToolTurns(run);
    else note(`Agent.continue rejects: "Agent is already processing."`);
    return als.run({ run }, () => origContinue());
  };
}

/**
 * The services pi 0.58 awaits that wakesim provides: the auth check of prompt() (the model
 * registry's `getApiKey`, failing when `auth_error` fires; pi then throws "No API key found"),
 * followed by the compaction check's await as on 0.99; the agent's per-request key (no await);
 * the model (`streamFn`).
 */
/**
 * @param {PiObject} session @param {PiObject} registry
 * @param {{fires: (fault: string) => boolean, stepDelay: () => number,
 *   sleep: (ms: number) => Promise<void>, stream: Function}} services
 */
export function services(session, registry, { fires, stepDelay, sleep, stream }) {
  registry.getApiKey = async () => {
    const fail = fires("auth_error");
    await sleep(stepDelay());
    if (fail) return undefined;
    await sleep(stepDelay());
    return "wakesim";
  };
  registry.getApiKeyForProvider = async () => "wakesim";
  registry.isUsingOAuth = () => false;
  session.agent.streamFn = stream;
}
