// The services pi awaits that the real pi driver (driver.mjs) provides, each resolving after a
// virtual delay drawn through wakesim (the driver's virtual clock, ../lib/wire.mjs):
//   - the model: `streamSimple` (or, before pi 0.99, the agent's stream function) replies with
//     text or a tool call (`wakesim_tool`) after a drawn model delay; a retryable error when the
//     `retries` fault fires;
//   - the auth check of prompt() (the model runtime's `checkAuth`, or the model registry's),
//     which fails when `auth_error` fires, and the awaits of the compaction check and of image
//     normalization, where each release has them;
//   - the probe extensions: the input handlers' await (claiming the prompt when
//     `input_swallows_prompt` fires), the harness marker of before_agent_start, the handler
//     delays of run events, the before-settle boundary (`extra_continues`) and the tool.
// Every draw is made where the model makes it, in its order, with its labels: a reply, a delay
// or a fault decision is asked of wakesim at the moment pi's code reaches it.

import * as wire from "../lib/wire.mjs";
import * as gen058 from "./gen058.mjs";
import { interleaved, userText } from "./content.mjs";

/** pi's objects (its session, agent, runtime, modules): not typed here. @typedef {any} PiObject */

/**
 * The run's state the driver's parts share, made afresh for each run (driver.mjs `runOnce`).
 * @typedef {object} Run
 * @property {PiObject} session
 * @property {Map<string, {num: number, den: number, max: number, fired: number}>} faults the
 *   faults on for the seed, with their rates and how often each fired
 * @property {boolean} quiescent the active phase is over: no fault fires
 * @property {number} requests model requests so far
 * @property {number} runs runs started so far (the model's numbering)
 * @property {number} prompts prompt() calls numbered so far
 * @property {number} livePrompts prompts between their call and their run (or their end)
 * @property {number[]} deferredPrompts prompts deferred while agent_settled handlers run
 * @property {number} toolsLeft tool-calling turns left in the current inner run
 * @property {Map<number, number>} toolsByRun the same, per run (pi 0.58 runs two loops at once)
 * @property {boolean | null} idle the last `idle` observation
 * @property {number | null} lastWakeAt when the wake logic last called prompt()
 * @property {number} produced
 * @property {Map<string, number>} tags a fake peer's tags and the producer ids they stand for
 * @property {(message: PiObject) => void} [appendedBySession] pi 0.58 (gen058.mjs)
 */

/**
 * What the driver hands its parts (this module, instrument.mjs, gen058.mjs): what the installed
 * pi can do, the scenario, its own observers and the run's state.
 * @typedef {object} Driver
 * @property {Record<string, any>} F the installed pi's features (features.mjs `detect`)
 * @property {boolean} OLD the 0.58 shape (gen058.mjs)
 * @property {boolean} REGISTRY no model runtime (0.58, 0.76-0.87): the model registry checks auth
 * @property {Record<string, any>} scenario the scenario of `hello`
 * @property {PiObject} piAi pi-ai's index (the assistant message stream)
 * @property {PiObject} modelRuntime pi 0.99 and later: the one model runtime, else null
 * @property {PiObject} modelRegistry before 0.99: the one model registry, else null
 * @property {import("node:async_hooks").AsyncLocalStorage<Record<string, any>>} als `{ prompt,
 *   promptStarted }` inside a prompt, `{ run }` inside a run, `{ deferredPrompt }` in a
 *   deferred prompt's action
 * @property {() => Run} R the run's state
 * @property {() => number} t virtual time
 * @property {(ms: number) => Promise<void>} sleep a virtual sleep (../lib/vclock.mjs; passed in,
 *   so that the parts are checked and tested without the clock)
 * @property {(ev: string, fields?: Record<string, unknown>) => void} obs
 * @property {(text: string, actor?: string) => void} note
 * @property {(window: string) => void} mark
 * @property {(name: string) => boolean} fires does the opportunity-fault fire now (a draw)
 * @property {(name: string) => object | null} faultOn is the fault on for the seed
 * @property {(content: unknown) => number[]} carried the producer ids in content
 * @property {(run?: number) => void} drawToolTurns
 */

const HARNESS = "[wakesim harness]";

/** The scripted model as pi's session is given it: a fresh object for each session (pi may
 * keep or change what it is given). @returns {Record<string, unknown>} */
export function scriptedModel() {
  return {
    id: "wakesim-model",
    name: "wakesim scripted model",
    api: "wakesim",
    provider: "wakesim",
    baseUrl: "http://127.0.0.1:9",
    reasoning: false,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 200000,
    maxTokens: 8192,
  };
}

/**
 * The events of one scripted reply, as pi's assistant message stream carries them: a retryable
 * error, a tool call (`call_<req>` of `wakesim_tool`) or the text "ok". `base` is the message's
 * shared fields (role, model, usage, timestamp).
 * @param {"error" | "toolUse" | "stop"} kind @param {Record<string, unknown>} base
 * @param {number} req the request's number @returns {Record<string, unknown>[]}
 */
export function replyEvents(kind, base, req) {
  if (kind === "error") {
    const message = { ...base, content: [], stopReason: "error", errorMessage: "529 overloaded_error: Overloaded (wakesim retries fault)" };
    return [
      { type: "start", partial: { ...message } },
      { type: "error", reason: "error", error: message },
    ];
  }
  if (kind === "toolUse") {
    const call = { type: "toolCall", id: `call_${req}`, name: "wakesim_tool", arguments: {} };
    const message = { ...base, content: [call], stopReason: "toolUse" };
    return [
      { type: "start", partial: { ...base, content: [], stopReason: "toolUse" } },
      { type: "toolcall_start", contentIndex: 0, partial: { ...message } },
      { type: "toolcall_end", contentIndex: 0, toolCall: call, partial: { ...message } },
      { type: "done", reason: "toolUse", message },
    ];
  }
  const text = { type: "text", text: "ok" };
  const message = { ...base, content: [text], stopReason: "stop" };
  return [
    { type: "start", partial: { ...base, content: [], stopReason: "stop" } },
    { type: "text_start", contentIndex: 0, partial: { ...message } },
    { type: "text_delta", contentIndex: 0, delta: "ok", partial: { ...message } },
    { type: "text_end", contentIndex: 0, content: "ok", partial: { ...message } },
    { type: "done", reason: "stop", message },
  ];
}

/**
 * The driver's services over `cx`: the functions pi is handed or has replaced, made once per
 * driver (they read the run's state through `cx.R()` when pi calls them).
 * @param {Driver} cx
 */
export function services(cx) {
  const { F, scenario, piAi, als, obs, note, fires, faultOn, carried } = cx;
  const { createAssistantMessageEventStream } = piAi;

  /** The scripted model: pi's `streamSimple`, with replies and delays drawn by wakesim. */
  function makeStream() {
    const timing = scenario.timing;
    return (/** @type {PiObject} */ model, /** @type {PiObject} */ context, /** @type {unknown} */ _options) => {
      const R = cx.R();
      const stream = createAssistantMessageEventStream();
      const system = piAi.getCurrentSystemPrompt ? piAi.getCurrentSystemPrompt(context.messages) : JSON.stringify(context);
      const summarizing = context.messages.some((/** @type {PiObject} */ m) => m.role === "user" && /summar/i.test(userText(m))) && false;
      R.requests++;
      obs("request", { req: R.requests, harness: String(system).includes(HARNESS) || summarizing });
      const split = interleaved(context.messages);
      if (split) obs("interleaved", { req: R.requests, msg: carried(split.content ?? "")[0] ?? null });
      // The tool-calling turns come first; the final turn of an inner run is where the model
      // decides a retryable error (after the run, in `post_run`): here it is that turn's reply.
      let toolCall = false;
      let retry = false;
      // Each run's own count (pi 0.58 can run two agent loops at once: `toolsByRun`).
      const run = als.getStore()?.run;
      const own = R.toolsByRun.has(run);
      if ((own ? /** @type {number} */ (R.toolsByRun.get(run)) : R.toolsLeft) > 0) {
        if (own) R.toolsByRun.set(run, /** @type {number} */ (R.toolsByRun.get(run)) - 1);
        else R.toolsLeft--;
        toolCall = true;
      } else {
        retry = fires("retries");
      }
      const ms = wire.delay(timing.model_ms.min, timing.model_ms.max, "model");
      const base = {
        role: "assistant",
        api: model.api,
        provider: model.provider,
        model: model.id,
        usage: { input: 10, output: 10, cacheRead: 0, cacheWrite: 0, totalTokens: 20, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
        timestamp: Date.now(),
      };
      cx.sleep(ms).then(() => {
        // A tool call's id is the request count when the reply comes, not when it was asked (two
        // loops at once on pi 0.58 make them differ): the recorded runs have it so.
        for (const ev of replyEvents(retry ? "error" : toolCall ? "toolUse" : "stop", base, cx.R().requests)) stream.push(ev);
        stream.end();
      });
      return stream;
    };
  }

  /** A handler delay: the model's "handlers" draw after (or before) an extension event. */
  async function handlers() {
    const h = scenario.timing.handler_ms;
    await cx.sleep(wire.delay(h.min, h.max, "handlers"));
  }

  /**
   * wakesim's probe extensions: the services pi awaits that wakesim provides, the harness, and the
   * handler delays of run events. The model awaits handlers once before `agent_start`'s hook (after
   * the run starts) and once after each run event's hook; pi awaits every extension's handler in
   * load order, so a probe loaded before the wake logic (`preProbe`) and one loaded after it
   * (`probe`) put those awaits where the model has them.
   * @param {PiObject} pi
   */
  function preProbe(pi) {
    pi.on("agent_start", handlers);
  }

  /** @param {PiObject} pi */
  function probe(pi) {
    const timing = scenario.timing;
    pi.on("input", async () => {
      // A handler that claims the prompt does so at once (the model's step 3); one that lets it
      // through is awaited for a step delay before step 5.
      if (fires("input_swallows_prompt")) {
        note("prompt claimed by an input handler (fault): no run, no event", "fault");
        return { action: "handled" };
      }
      await cx.sleep(wire.delay(timing.step_ms.min, timing.step_ms.max, "await"));
      return { action: "continue" };
    });
    pi.on("before_agent_start", async (/** @type {PiObject} */ event) => {
      await handlers();
      return { systemPrompt: `${event.systemPrompt}\n${HARNESS}` };
    });
    pi.on("agent_start", handlers);
    pi.on("turn_end", handlers);
    pi.on("agent_end", handlers);
    pi.on("agent_settled", handlers);
    if (faultOn("extra_continues")) {
      pi.on("agent_before_settle", async (/** @type {PiObject} */ event) => {
        if (!fires("extra_continues")) return undefined;
        note("the before-settle boundary asks for another continue() (fault)", "fault");
        await handlers();
        // pi continues only with runnable context (its docs: chain an entry and return
        // `continue: true`); a bare `continue: true` after an assistant reply is refused as
        // "requested continuation without runnable model context", and the run settles.
        const entry = { type: "custom_message", customType: "wakesim.continue", content: "continue", display: false };
        return { entries: [...(event.entries || []), entry], continue: true };
      });
    }
    pi.registerTool({
      name: "wakesim_tool",
      label: "wakesim tool",
      description: "A tool call of the scripted model; it takes a drawn virtual time.",
      parameters: { type: "object", properties: {} },
      async execute() {
        const d = wire.delay(timing.tool_ms.min, timing.tool_ms.max, "tools");
        await cx.sleep(d);
        return { content: [{ type: "text", text: "done" }], details: {} };
      },
    });
  }

  /**
   * Tool-calling turns of an inner run, drawn when the agent takes it (the model's `start_run`).
   * `run`, when given (pi 0.58), keeps the count for that run's requests: 0.58 can run a second
   * agent loop beside the first (a direct run started while `isStreaming` reads false under a
   * running loop), and each loop's replies follow its own draw, as each model run's do.
   * @param {number} [run]
   */
  function drawToolTurns(run) {
    const R = cx.R();
    const tt = scenario.timing.tool_turns;
    R.toolsLeft = tt.min + wire.choose(tt.max - tt.min + 1, "tool turns");
    if (run !== undefined) R.toolsByRun.set(run, R.toolsLeft);
  }

  /** pi 0.99 and 1.x, before each session is built: the services of the model runtime pi awaits,
   * wakesim's (the runtime itself is built once). */
  function runtime() {
    if (cx.REGISTRY) return;
    const modelRuntime = cx.modelRuntime;
    modelRuntime.hasConfiguredAuth = () => false;
    // prompt() awaits the auth check (step 8), then `_checkCompaction` (step 9, only with an
    // assistant message before it), then image normalization (step 11). Each is an await of a
    // service, in the model's order: auth, the compaction check, images (the model's `await` draws
    // at steps 5-8, 8-9 and 11). The compaction check's await is taken inside the auth service when
    // pi would skip it, so every prompt has the model's four awaits.
    modelRuntime.checkAuth = async () => {
      const timing = scenario.timing;
      const fail = fires("auth_error");
      await cx.sleep(wire.delay(timing.step_ms.min, timing.step_ms.max, "await"));
      if (fail) return undefined;
      // pi 0.99's compaction check follows the auth check inside prompt(); pi 1.x moved it into
      // `_prepareRun`, after the run flag is set (taken there, below).
      if (F.runs === "run-agent-prompt") await cx.sleep(wire.delay(timing.step_ms.min, timing.step_ms.max, "await"));
      return { type: "api_key", source: "wakesim" };
    };
    modelRuntime.streamSimple = makeStream();
    modelRuntime.getAuth = async () => ({ auth: { apiKey: "wakesim" }, env: {} });
  }

  /** A built session: the services that live on it (or, before 0.99, on the model registry).
   * @param {PiObject} session */
  function session(session) {
    const modelRegistry = cx.modelRegistry;
    if (cx.OLD) {
      // pi 0.58 has no image normalization step: no await there.
      const timing = scenario.timing;
      const stepDelay = () => wire.delay(timing.step_ms.min, timing.step_ms.max, "await");
      gen058.services(session, modelRegistry, { fires, stepDelay, sleep: cx.sleep, stream: makeStream() });
    } else if (cx.REGISTRY) {
      // 0.76-0.87: prompt()'s auth check is the registry's synchronous `hasConfiguredAuth` (no
      // await: the fault fails it at once), and the agent's stream function asks the registry for
      // the request's key before it calls the model: both wakesim's, the model scripted.
      modelRegistry.hasConfiguredAuth = () => !fires("auth_error");
      modelRegistry.isUsingOAuth = () => false;
      session.agent.streamFn = makeStream();
    }
    if (!cx.OLD && F.images) {
      const origImages = session._normalizePromptImages.bind(session);
      session._normalizePromptImages = async (/** @type {PiObject} */ images) => {
        const timing = scenario.timing;
        await cx.sleep(wire.delay(timing.step_ms.min, timing.step_ms.max, "await"));
        return origImages(images);
      };
    }
  }

  return { preProbe, probe, drawToolTurns, runtime, session };
}
