// What the installed pi can do, read from the package itself rather than from its version
// number: the driver runs any pinned release whose AgentSession has one of the shapes below, and
// refuses one it cannot drive at `hello`, naming what is missing.
//
// The shapes, oldest first, as the published releases have them:
//   - "agent-prompt" (0.58): prompt() calls `agent.prompt` itself; agent events reach the
//     session on `_agentEventQueue`, which the agent does not await; a retryable error is
//     `_handleRetryableError` (gen058.mjs drives it);
//   - "run-agent-prompt" (0.76-0.87, 0.99): prompt() and a direct sendMessage start a run in
//     `_runAgentPrompt`; the agent awaits the session's listener. 0.99 adds the session run
//     flag `_isAgentRunActive`, `agent_settled` with its before-settle boundary, the model
//     runtime (`ModelRuntime`, an awaited auth check); 0.76-0.87 read the agent's
//     `state.isStreaming` and check auth synchronously on the model registry;
//   - "start-run" (1.x): runs start in `_startRun(trigger)`, which sets the run flag first, and
//     are prepared in `_prepareRun` (the compaction check, before_agent_start).
import fs from "node:fs";
import path from "node:path";

// pi's package was published under two names: @mariozechner up to 0.73, @earendil-works after.
const SCOPES = ["@earendil-works", "@mariozechner"];

/** The scope whose pi-coding-agent is installed in `modules`, or null. */
export function scopeOf(modules) {
  return SCOPES.find((s) => fs.existsSync(path.join(modules, s, "pi-coding-agent", "package.json"))) || null;
}

/**
 * The features of the imported pi: `piMod` (pi-coding-agent's index), `agentMod` (pi-agent-core's
 * index). Returns `{ runs, sessionFlag, modelRuntime, settled, images, ... }`, or throws an Error
 * whose message says what is missing.
 */
export function detect(version, piMod, agentMod) {
  const AgentSession = piMod.AgentSession;
  const Agent = agentMod && agentMod.Agent;
  const missing = [];
  if (typeof AgentSession !== "function") missing.push("pi-coding-agent's AgentSession export");
  if (typeof Agent !== "function") missing.push("pi-agent-core's Agent export");
  for (const name of ["createAgentSession", "SessionManager", "SettingsManager", "DefaultResourceLoader"]) {
    if (!piMod[name]) missing.push(`pi-coding-agent's ${name} export`);
  }
  if (missing.length) throw new Error(refusal(version, missing));
  const proto = AgentSession.prototype;
  const src = Function.prototype.toString.call(AgentSession);
  const agentSrc = Function.prototype.toString.call(Agent);
  const has = (name) => typeof proto[name] === "function";
  const f = {
    runs: has("_startRun") && has("_prepareRun") ? "start-run" : has("_runAgentPrompt") ? "run-agent-prompt" : "agent-prompt",
    // Class fields live on instances: their initializers are in the class's source.
    sessionFlag: src.includes("_isAgentRunActive"),
    modelRuntime: typeof piMod.ModelRuntime === "function" && typeof piMod.ModelRuntime.create === "function",
    modelRegistry: typeof piMod.ModelRegistry === "function" && typeof piMod.AuthStorage === "function",
    settled: src.includes("_isEmittingAgentSettled"),
    settleBoundary: has("_runBeforeSettleBoundary"),
    images: has("_normalizePromptImages"),
    eventQueue: src.includes("_agentEventQueue"),
    retryHandler: has("_handleRetryableError"),
    agentActiveRun: agentSrc.includes("activeRun"),
    // 0.99's loader takes `{ name, factory }` or a bare factory; older loaders a bare factory.
    namedFactories: Function.prototype.toString.call(piMod.DefaultResourceLoader.prototype.loadExtensionFactories || (() => {})).includes(".factory"),
  };
  if (!has("sendCustomMessage")) missing.push("AgentSession.sendCustomMessage (an extension's sendMessage)");
  if (!has("prompt")) missing.push("AgentSession.prompt");
  if (f.runs === "agent-prompt") {
    // The 0.58 shape: gen058.mjs observes the agent's queue and drives its retry timer.
    if (!f.eventQueue) missing.push("AgentSession._agentEventQueue (0.58's event queue), or a run start (_runAgentPrompt, _startRun)");
    if (!f.retryHandler) missing.push("AgentSession._handleRetryableError (0.58's retry)");
    if (!f.modelRegistry) missing.push("ModelRegistry and AuthStorage exports");
  } else {
    if (!f.agentActiveRun) missing.push("Agent.activeRun (which run the agent holds)");
    if (!f.modelRuntime && !f.modelRegistry) missing.push("ModelRuntime, or ModelRegistry and AuthStorage (the auth check)");
    if (!f.modelRuntime && typeof piMod.ModelRegistry.prototype.hasConfiguredAuth !== "function") {
      missing.push("ModelRegistry.hasConfiguredAuth (prompt()'s auth check)");
    }
  }
  if (missing.length) throw new Error(refusal(version, missing));
  return f;
}

function refusal(version, missing) {
  return `pi ${version} cannot be driven: its package lacks ${missing.join("; ")}`;
}
