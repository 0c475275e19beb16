// The real pi driver's instruments on pi's own classes (driver.mjs): what it observes of a built
// session is read from pi's real state as pi changes it, through accessors and wrappers on the
// instances, never from a model of pi:
//   - the run flag (`_isAgentRunActive`; before 0.99 the agent's `state.isStreaming`),
//     `Agent.activeRun` and `_isEmittingAgentSettled`, as accessors (watch.mjs);
//   - the starters `agent.prompt`/`agent.continue` (who calls them, whether the agent takes
//     them), and where runs start (`_runAgentPrompt`, or `_startRun`/`_prepareRun` on 1.x),
//     numbered as the model numbers them;
//   - prompt() calls (numbered, deferred ones keeping theirs), the wake logic's sendMessage and
//     sendUserMessage (narrated with what they carry), the run's events and the messages entering
//     the context the model reads (message_end).
// pi 0.58's shape is gen058.mjs's. Nothing here draws except through the driver's
// `drawToolTurns` (when the agent takes a run) and the compaction check's await on 1.x.

import * as wire from "../lib/wire.mjs";
import * as gen058 from "./gen058.mjs";
import { watchField } from "./watch.mjs";
import { names } from "./content.mjs";

/** pi's objects (its session, agent, messages): not typed here. @typedef {any} PiObject */
/** @typedef {import("./services.mjs").Driver} Driver */

/**
 * The narration of the wake logic's `sendMessage`: the producer messages it carries (or its
 * custom type) and the options it names.
 * @param {number[]} ids @param {PiObject} message @param {PiObject} options @returns {string}
 */
export function sendMessageNote(ids, message, options) {
  const what = ids.length ? names(ids) : `${message?.customType ?? "a message"}`;
  const opts = [options?.deliverAs && `deliverAs: ${options.deliverAs}`, options?.triggerTurn !== undefined && `triggerTurn: ${options.triggerTurn}`]
    .filter(Boolean)
    .join(", ");
  return `sendMessage(${what}${opts ? `, {${opts}}` : ""})`;
}

/**
 * The narration of the wake logic's `sendUserMessage`: what it carries (or its text), its
 * `deliverAs`, and `P<n>`, the prompt it becomes.
 * @param {number[]} ids @param {unknown} content @param {PiObject} options @param {number} n
 * @returns {string}
 */
export function sendUserMessageNote(ids, content, options, n) {
  const what = ids.length ? names(ids) : JSON.stringify(typeof content === "string" ? content : "…");
  return `sendUserMessage(${what}${options?.deliverAs ? `, {deliverAs: ${options.deliverAs}}` : ""}) = P${n}`;
}

/** Every instrument on a freshly built session. @param {PiObject} session @param {Driver} cx */
export function instrument(session, cx) {
  if (cx.OLD) gen058.instrument(session, cx);
  else instrumentRuns(session, cx);
  instrumentCalls(session, cx);
}

/** pi 0.76 and later: the run flag, the agent run, settling, starters and runs.
 * @param {PiObject} session @param {Driver} cx */
function instrumentRuns(session, cx) {
  const { F, als, obs, note, carried, drawToolTurns } = cx;
  const agent = session.agent;
  if (F.sessionFlag) {
    watchField(session, "_isAgentRunActive", (v) => obs("run_flag", { on: !!v }));
    watchField(agent, "activeRun", (v, old) => {
      if (v && !old) obs("agent_run", { on: true });
      else if (!v && old) obs("agent_run", { on: false });
    });
  } else {
    // Before 0.99 the session's flag is the agent's `isStreaming`, which the agent sets and
    // clears in the same synchronous steps as its `activeRun` (`runWithLifecycle`, `finishRun`):
    // no code runs between the two, so both are observed at the flag's change, as on 0.58.
    watchField(agent.state, "isStreaming", (v, old) => {
      if (!!v === !!old) return;
      obs("agent_run", { on: !!v });
      obs("run_flag", { on: !!v });
    });
  }
  watchField(session, "_isEmittingAgentSettled", (v) => {
    if (v) obs("settled");
  });

  // Starters: who calls agent.prompt / agent.continue, and whether the agent takes it.
  const origPrompt = agent.prompt.bind(agent);
  agent.prompt = (/** @type {unknown[]} */ ...args) => {
    const who = als.getStore() || {};
    const accepted = !agent.activeRun;
    if (who.prompt !== undefined) obs("starter", { who: "prompt", n: who.prompt, accepted });
    else obs("starter", { who: "direct", n: who.run, accepted });
    if (!accepted) note(`Agent.prompt rejects: "Agent is already processing a prompt."`);
    else drawToolTurns();
    return origPrompt(...args);
  };
  const origContinue = agent.continue.bind(agent);
  agent.continue = (/** @type {unknown[]} */ ...args) => {
    const who = als.getStore() || {};
    const accepted = !agent.activeRun;
    obs("starter", { who: "continue", n: who.run, accepted });
    if (accepted) drawToolTurns();
    return origContinue(...args);
  };

  // Runs are numbered as the model numbers them. pi 0.99 starts a run in `_runAgentPrompt`
  // (prompt() passes an array of messages at step 12, a direct sendMessage one message); pi 1.x
  // in `_startRun(trigger)`, which sets the run flag before the compaction check and
  // before_agent_start (`_prepareRun`), and takes nextTurn there.
  if (F.runs === "start-run") {
    const origStart = session._startRun.bind(session);
    session._startRun = (/** @type {PiObject} */ trigger, /** @type {PiObject} */ onStarted) => {
      const R = cx.R();
      const run = ++R.runs;
      const store = als.getStore() || {};
      const fromPrompt = trigger?.messageType === "user" && store.prompt !== undefined && !store.promptStarted;
      if (fromPrompt) {
        store.promptStarted = true;
        R.livePrompts--;
        note(`P${store.prompt} starts its run (the run flag is set before before_agent_start)`);
      } else {
        note(`direct run R${run} (sendMessage triggerTurn)`);
      }
      return als.run({ prompt: fromPrompt ? store.prompt : undefined, run }, () => origStart(trigger, onStarted));
    };
    const origPrepare = session._prepareRun.bind(session);
    session._prepareRun = async (/** @type {PiObject} */ trigger) => {
      // The compaction check's await, where pi 1.x has it: first in `_prepareRun`.
      const timing = cx.scenario.timing;
      await cx.sleep(wire.delay(timing.step_ms.min, timing.step_ms.max, "await"));
      const messages = await origPrepare(trigger);
      const ids = messages.slice(1).flatMap((/** @type {PiObject} */ m) => carried(m.content));
      const who = als.getStore()?.prompt;
      note(`${who !== undefined ? `P${who}` : `R${als.getStore()?.run}`} takes nextTurn [${names(ids)}]`);
      return messages;
    };
  } else {
    const origRun = session._runAgentPrompt.bind(session);
    session._runAgentPrompt = (/** @type {PiObject} */ messages) => {
      const R = cx.R();
      const run = ++R.runs;
      const store = als.getStore() || {};
      const fromPrompt = Array.isArray(messages) && store.prompt !== undefined && !store.promptStarted;
      if (fromPrompt) {
        store.promptStarted = true;
        R.livePrompts--;
        const ids = messages.slice(1).flatMap((/** @type {PiObject} */ m) => carried(m.content));
        note(`P${store.prompt} step 12 takes nextTurn [${names(ids)}] and starts its run`);
      } else {
        note(`direct run R${run} (sendMessage triggerTurn)`);
      }
      return als.run({ prompt: fromPrompt ? store.prompt : undefined, run }, () => origRun(messages));
    };
  }
}

/** Every version: prompts, the wake logic's calls and the session's events.
 * @param {PiObject} session @param {Driver} cx */
function instrumentCalls(session, cx) {
  const { OLD, als, obs, note, mark, t, carried } = cx;
  // prompt(): numbered per call (sendUserMessage and the user's), deferred ones keep theirs.
  const origSessionPrompt = session.prompt.bind(session);
  session.prompt = (/** @type {PiObject} */ text, /** @type {PiObject} */ options) => {
    const R = cx.R();
    /** @type {number} */
    let n;
    // A prompt deferred while agent_settled handlers ran comes back through prompt() from its
    // deferred action: it keeps its number (the model's deferred prompt).
    const store0 = als.getStore();
    if (store0 && store0.deferredPrompt !== undefined) {
      n = store0.deferredPrompt;
      store0.deferredPrompt = undefined;
    } else {
      n = ++R.prompts;
    }
    const fromWake = options?.source === "extension";
    if (session._isEmittingAgentSettled) {
      R.deferredPrompts.push(n);
      note(`P${n} deferred until agent_settled handlers return`);
      const p = origSessionPrompt(text, options);
      const actions = session._deferredSettledActions;
      const act = actions[actions.length - 1];
      actions[actions.length - 1] = () => {
        R.deferredPrompts.splice(R.deferredPrompts.indexOf(n), 1);
        return als.run({ deferredPrompt: n }, act);
      };
      return p;
    }
    if (fromWake && R.livePrompts > 0) mark("wake-while-preparing");
    if (fromWake) R.lastWakeAt = t();
    R.livePrompts++;
    if (R.livePrompts >= 2) mark("concurrent-prompts");
    const store = { prompt: n, promptStarted: false };
    const p = als.run(store, () => origSessionPrompt(text, options));
    return p.then(
      (/** @type {unknown} */ v) => {
        if (!store.promptStarted) {
          R.livePrompts--;
          store.promptStarted = true;
          if (fromWake) mark("wake-prompt-failed");
          note(`P${n} ends without a run`);
        }
        return v;
      },
      (/** @type {PiObject} */ e) => {
        if (!store.promptStarted) {
          R.livePrompts--;
          store.promptStarted = true;
          if (fromWake) mark("wake-prompt-failed");
        }
        note(`P${n} rejects: "${e && e.message ? e.message.split("\n")[0] : e}"`);
        throw e;
      }
    );
  };

  // The wake logic's calls into the session, narrated with what they carry.
  const origCustom = session.sendCustomMessage.bind(session);
  session.sendCustomMessage = (/** @type {PiObject} */ message, /** @type {PiObject} */ options) => {
    note(sendMessageNote(carried(message?.content ?? ""), message, options), "wake");
    return origCustom(message, options);
  };
  const origUser = session.sendUserMessage.bind(session);
  session.sendUserMessage = (/** @type {unknown} */ content, /** @type {PiObject} */ options) => {
    note(sendUserMessageNote(carried(content), content, options, cx.R().prompts + 1), "wake");
    return origUser(content, options);
  };

  // Messages entering the context the model reads, and the run's events.
  session.subscribe((/** @type {PiObject} */ ev) => {
    const R = cx.R();
    switch (ev.type) {
      case "agent_start":
        note(`R${als.getStore()?.run ?? R.runs} agent_start`);
        break;
      case "turn_end":
        note(`R${als.getStore()?.run ?? R.runs} turn_end`);
        break;
      case "agent_end":
        note(`R${als.getStore()?.run ?? R.runs} agent_end`);
        break;
      case "agent_settled":
        note("agent_settled");
        break;
      case "auto_retry_start":
        note(`retryable error: retry ${ev.attempt} after ${ev.delayMs} ms`);
        break;
      default:
        break;
    }
    // pi 0.58's session listeners run after the agent moved on: gen058.mjs observes the agent,
    // and here only what the session appended itself.
    if (ev.type === "message_end" && OLD) /** @type {(m: PiObject) => void} */ (R.appendedBySession)(ev.message);
    else if (ev.type === "message_end") {
      const m = ev.message;
      if (m.role === "user" || m.role === "custom") {
        for (const id of carried(m.content)) obs("appended", { msg: id });
      }
    }
  });
}
