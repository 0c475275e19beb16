// wakesim's real pi driver: runs pi's own AgentSession (from the pinned npm package) under the
// simulation, speaking the remote-host protocol (docs/remote-host.md) on stdin/stdout.
//
// What is real: AgentSession, Agent and its loop, the extension runner, pi's extension loader
// (jiti) loading the wake logic's file, the session manager (in memory), settings (in memory),
// retries and their backoff. What wakesim provides, each resolving after a virtual delay drawn
// through `choose`:
//   - the model: `streamSimple` replies with text or a tool call (`wakesim_tool`), after a drawn
//     model delay; a retryable error when the `retries` fault fires;
//   - the auth check of prompt() step 8 (`checkAuth`), which fails when `auth_error` fires;
//   - the input handlers' await (a probe extension's `input` handler, registered after the wake
//     logic's), which claims the prompt when `input_swallows_prompt` fires;
//   - before_agent_start (the probe adds the harness marker to the system prompt; its await is
//     the handlers' delay); the tool's execution; the before-settle boundary (`extra_continues`).
// Time is virtual (../lib/vclock.mjs). Observations are read from pi's real state: the run flag
// `_isAgentRunActive`, `Agent.activeRun`, `_isEmittingAgentSettled` (accessors on the instances),
// `agent.prompt`/`agent.continue` (starters), the messages entering the context (message_end),
// and what each model request carries.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AsyncLocalStorage } from "node:async_hooks";
import module from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

import * as vclock from "../lib/vclock.mjs";
import * as peers from "./peers.mjs";
import * as gen058 from "./gen058.mjs";
import { watchField } from "./watch.mjs";
import * as features from "./features.mjs";
import * as wire from "../lib/wire.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const DRIVER = "wakesim-pi-driver/0.1.0";
const HARNESS = "[wakesim harness]";
// `[wakesim m<id+1>]`, or a fake peer's tag `[wakesim <tag>]` that it bound to an id (peers.mjs).
const MARKER = /\[wakesim ([a-z]+)(\d+)\]/g;

// Faults in the model's order (src/host/pi/config.rs `PiFault::ALL`): the plan draws them in it.
const FAULTS = [
  "input_swallows_prompt",
  "auth_error",
  "pre_prompt_compaction",
  "retries",
  "extra_continues",
  "compaction_continue",
  "manual_compaction",
  "tree_summarization",
  "session_replacement",
  "user_prompts",
  "prompt_compaction_fails",
];
const TIMED = new Set(["manual_compaction", "tree_summarization", "session_replacement", "user_prompts"]);
// Faults this driver injects through pi's own entry points. The others are refused at `hello`
// (a scenario must not believe it exercised them).
const SUPPORTED = new Set(["input_swallows_prompt", "auth_error", "retries", "extra_continues", "user_prompts"]);

const DEFAULT_OPTIONS = {
  completion: { deliverAs: "steer", triggerTurn: true },
  notification: { deliverAs: "steer", triggerTurn: true },
  orchestrator: { deliverAs: "followUp", triggerTurn: true },
};

// ---------------------------------------------------------------------------------------------
// A sandbox for everything pi reads or writes (HOME, its agent dir, TMPDIR, the cwd): set before
// pi is imported, removed at exit.

const sandbox = fs.mkdtempSync(path.join(os.tmpdir(), "wakesim-pi-"));
for (const d of ["home", "agent", "tmp", "work"]) fs.mkdirSync(path.join(sandbox, d));
// jiti (pi's extension loader) keeps its transpile cache in TMPDIR: kept beside the pinned
// packages (git-ignored, keyed by each file's source hash), so a published extension's hundreds
// of TypeScript files are transpiled once per machine, not once per driver.
try {
  const jitiCache = path.join(process.env.WAKESIM_HOST_CACHE || path.join(here, "..", ".cache"), "jiti");
  fs.mkdirSync(jitiCache, { recursive: true });
  fs.symlinkSync(jitiCache, path.join(sandbox, "tmp", "jiti"));
} catch {
  // Without the shared cache jiti transpiles into the sandbox; nothing else changes.
}
process.on("exit", () => fs.rmSync(sandbox, { recursive: true, force: true }));
const env = {
  HOME: path.join(sandbox, "home"),
  PI_CODING_AGENT_DIR: path.join(sandbox, "agent"),
  TMPDIR: path.join(sandbox, "tmp"),
  PI_OFFLINE: "1",
  PI_TELEMETRY: "0",
};
for (const k of Object.keys(process.env)) {
  if (/^(ANTHROPIC|OPENAI|GEMINI|GOOGLE|AWS|AZURE|MISTRAL|GROQ|XAI|OPENROUTER|PI_)/.test(k)) delete process.env[k];
}
Object.assign(process.env, env);
const workDir = path.join(sandbox, "work");
process.chdir(workDir);

// Console output of pi or of an extension must not reach stdout (the protocol).
for (const m of ["log", "info", "debug", "warn", "error", "trace"]) {
  console[m] = (...args) => process.stderr.write(args.map(String).join(" ") + "\n");
}

vclock.install();
// Always strict: a run that creates a real async resource (real I/O, a real timer) would not
// replay the same, so it fails as a driver error naming the resource and its stack.
vclock.strict();

// V8's compile cache (Node 22) roughly halves importing pi in every driver after the first;
// it lives beside the pinned packages, git-ignored, and holds nothing a run depends on.
try {
  module.enableCompileCache?.(path.join(process.env.WAKESIM_HOST_CACHE || path.join(here, "..", ".cache"), "node-compile"));
} catch {
  // Without the cache the driver starts slower; nothing else changes.
}

// ---------------------------------------------------------------------------------------------
// hello: import the pinned pi once.

const hello = wire.receive();
if (hello.type !== "hello") wire.fatal(`expected hello, got ${hello.type}`);
if (hello.protocol !== 1) wire.fatal(`protocol ${hello.protocol} is not spoken here (1 is)`);
if (hello.host !== "pi") wire.fatal(`this driver runs pi, not ${hello.host}`);
const version = String(hello.host_version);
// Any pinned version (hosts/pi/<version>/): its package name and what its AgentSession can do
// are read from the installed package (features.mjs), not from a table of versions. Installed by
// hosts/launch.mjs into the cache directory (beside the pins, for a driver started by hand).
const modules = process.env.WAKESIM_HOST_MODULES || path.join(here, version, "node_modules");
const scope = features.scopeOf(modules);
if (!scope) wire.fatal(`pi ${version} is not installed in ${modules} (hosts/launch.mjs installs a pinned version)`);
const pkg = (name) => pathToFileURL(path.join(modules, scope, name)).href;

const wake = hello.wake || {};
const scenario = hello.scenario;
const limits = hello.limits;

let piMod, piAi, agentMod;
try {
  piMod = await import(pkg("pi-coding-agent/dist/index.js"));
  piAi = await import(pkg("pi-ai/dist/index.js"));
  agentMod = await import(pkg("pi-agent-core/dist/index.js"));
} catch (e) {
  wire.fatal(`cannot import pi ${version} from ${modules}: ${e && e.stack ? e.stack : e}`);
}
let F;
try {
  F = features.detect(version, piMod, agentMod);
} catch (e) {
  wire.fatal(e.message);
}
// A release without a before-settle boundary (0.58, 0.76-0.87: no agent_before_settle) cannot
// take extra continues there.
if (!F.settleBoundary) SUPPORTED.delete("extra_continues");
for (const f of scenario.faults) {
  if (!SUPPORTED.has(f.name)) {
    wire.fatal(`fault ${f.name} is not injected on the real pi ${version} host yet (supported: ${[...SUPPORTED].join(", ")})`);
  }
}
// The 0.58 shape (gen058.mjs): no session run flag, runs start at Agent.prompt, the auth check is
// the model registry's, the agent's stream function is its own.
const OLD = F.runs === "agent-prompt";
// No model runtime (0.58, 0.76-0.87): the model registry checks auth, the agent's stream
// function calls the model, and the run flag is the agent's `state.isStreaming`.
const REGISTRY = !F.modelRuntime;
const loaderMod = await import(pkg("pi-coding-agent/dist/core/extensions/loader.js"));
const { createAgentSession, SessionManager, SettingsManager, ModelRuntime, DefaultResourceLoader, AuthStorage, ModelRegistry } = piMod;
const { createAssistantMessageEventStream } = piAi;

// The extension file is loaded by pi's loader through a small wrapper module written into the
// sandbox: pi drops a factory's return value, so the wrapper keeps it (the `send` function of the
// factory convention), or the named export, or the pi API for `pi.events`.
const extFile = wake.extension;
if (!extFile || !fs.existsSync(extFile)) wire.fatal(`extension ${extFile} not found`, "load");
const deliver = wake.deliver || "factory";
// `peer:NAME`: content reaches the extension through its own transport, driven by a fake peer.
const peer = deliver.startsWith("peer:") ? await peers.load(deliver.slice(5), { sandbox, workDir: path.join(sandbox, "work") }) : null;
const wrapper = path.join(sandbox, "wakesim-extension.ts");
fs.writeFileSync(
  wrapper,
  [
    `import * as mod from ${JSON.stringify(extFile)};`,
    `const slot = (globalThis as any).__wakesim;`,
    `export default async function wakesimWrapped(pi: any) {`,
    `  slot.pi = pi;`,
    `  const factory = (mod as any).default;`,
    `  if (typeof factory !== "function") throw new Error(${JSON.stringify(extFile)} + ": its default export is not a function (an extension factory)");`,
    `  const ret = await factory(pi, slot.options);`,
    `  slot.factoryReturn = ret;`,
    `  slot.module = mod;`,
    `}`,
    ``,
  ].join("\n")
);
const preWrapper = path.join(sandbox, "wakesim-pre-probe.ts");
fs.writeFileSync(preWrapper, `export default function wakesimPreProbe(pi: any) { (globalThis as any).__wakesim.preProbe(pi); }\n`);
const slot = { options: JSON.parse(JSON.stringify(wake.options || {})), preProbe: (pi) => preProbe(pi) };
globalThis.__wakesim = slot;

// One model runtime serves every run: building it reads the (empty) sandbox's auth and model
// files, and nothing a run does changes it (its auth and stream are replaced per run below).
const modelRuntime = REGISTRY
  ? null
  : await ModelRuntime.create({
      authPath: path.join(sandbox, "agent", "auth.json"),
      modelsPath: null,
      allowModelNetwork: false,
    });
// Without a model runtime: an in-memory auth storage and a model registry without a models file.
const modelRegistry = REGISTRY ? new ModelRegistry(AuthStorage.inMemory({}), path.join(sandbox, "agent", "models.json")) : null;

wire.send({ type: "hello", protocol: 1, driver: DRIVER, host: `${scope}/pi-coding-agent@${version}` });

// ---------------------------------------------------------------------------------------------
// One run.

const als = new AsyncLocalStorage();

/** Per-run state the observers and services share. */
let R = null;

/** The session's run flag: `_isAgentRunActive`; before 0.99 the agent's `isStreaming` (no flag of its own). */
function runActive(s) {
  return F.sessionFlag ? s._isAgentRunActive : s.agent.state.isStreaming;
}

function state() {
  const s = R.session;
  if (!s) return "IDLE";
  if (runActive(s)) return "RUNNING";
  if (s._isEmittingAgentSettled) return "SETTLING";
  if (s.isCompacting) return "COMPACTING";
  if (R.livePrompts > 0) return "PREPARING";
  return "IDLE";
}

const t = () => vclock.time();
const obs = (ev, fields, actor = "host") => wire.obs(t(), actor, state(), ev, fields);
// Where pi is installed is the machine's (the cache directory under $HOME), and an extension may
// name it in a message: the trace says `hosts/pi/<version>/node_modules` wherever pi lives, so a
// run's bytes do not depend on the machine or the cache directory.
const placed = path.join("hosts", "pi", version, "node_modules");
const unplaced = (text) => (typeof text === "string" && text.includes(modules) ? text.split(modules).join(placed) : text);
const note = (text, actor = "host") => wire.note(t(), actor, state(), unplaced(text));
const mark = (window) => obs("mark", { window });

function faultOn(name) {
  return R.faults.get(name) || null;
}

/** Does the opportunity-fault fire now? Draws only when it is on for the seed (the model's `fires`). */
function fires(name) {
  const f = R.faults.get(name);
  if (!f || f.fired >= f.max || R.quiescent) return false;
  if (wire.chance(f.num, f.den, name)) {
    f.fired++;
    return true;
  }
  return false;
}

/** The per-seed plan, drawn as the model's `PiHost::plan` draws it (same order, labels, bounds). */
function plan() {
  const faults = new Map();
  const byName = new Map(scenario.faults.map((f) => [f.name, f]));
  for (const name of FAULTS) {
    const f = byName.get(name);
    const share = f ? f.share : [0, 1];
    if (!wire.chance(share[0], share[1], "fault on")) continue;
    let [num, den] = f.rate;
    if (num !== 0 && num < den) {
      const level = wire.choose(3, "fault rate");
      den = den * (1 << (3 - 1 - level));
    }
    faults.set(name, { num, den, max: f.max, fired: 0 });
  }
  const p = scenario.producers;
  const kinds = p.kinds;
  let mask = 1;
  if (kinds.length > 1) mask = wire.choose((1 << kinds.length) - 1, "producer kinds") + 1;
  const kindsOn = kinds.filter((_, i) => mask & (1 << i));
  const n = p.messages.min + wire.choose(p.messages.max - p.messages.min + 1, "messages");
  let at = wire.instant(p.start_ms.min, p.start_ms.max, "first message");
  const completed = new Array(p.subagents).fill(false);
  const lastAt = new Array(p.subagents + 1).fill(null);
  const messages = [];
  for (let i = 0; i < n; i++) {
    if (i > 0) at += wire.instant(p.spacing_ms.min, p.spacing_ms.max, "spacing");
    if (at >= limits.active_ms) break;
    const kind = kindsOn[wire.choose(kindsOn.length, "kind")];
    let source;
    if (kind === "orchestrator") source = p.subagents;
    else {
      const open = [];
      for (let s = 0; s < p.subagents; s++) if (!completed[s]) open.push(s);
      if (open.length === 0) continue;
      source = open[wire.choose(open.length, "subagent")];
    }
    if (kind === "completion") completed[source] = true;
    if (lastAt[source] !== null && lastAt[source] >= at) at = lastAt[source] + 1;
    lastAt[source] = at;
    messages.push({ at, kind, source });
  }
  const timed = [];
  for (const name of FAULTS) {
    if (!TIMED.has(name)) continue;
    const f = faults.get(name);
    if (!f || f.max === 0) continue;
    const count = 1 + wire.choose(f.max, "occurrences");
    for (let i = 0; i < count; i++) {
      timed.push({ name, at: wire.instant(1, Math.max(limits.active_ms - 1, 1), "fault time"), attempts: 0 });
    }
  }
  const mix = {
    type: "mix",
    faults: FAULTS.filter((n) => faults.has(n)).map((n) => [n, faults.get(n).num, faults.get(n).den]),
    producers: kindsOn,
  };
  wire.send(mix);
  return { faults, messages, timed };
}

function sourceName(kind, source) {
  return kind === "orchestrator" ? "orchestrator" : `subagent ${String.fromCharCode(97 + (source % 26))}`;
}

/** The producer ids a piece of content carries, by their markers. */
function carried(content) {
  const text = typeof content === "string" ? content : JSON.stringify(content);
  const ids = [];
  for (const m of text.matchAll(MARKER)) {
    if (m[1] === "m") ids.push(Number(m[2]) - 1);
    else if (R.tags.has(m[1] + m[2]) && !ids.includes(R.tags.get(m[1] + m[2]))) ids.push(R.tags.get(m[1] + m[2]));
  }
  return ids;
}

function userText(message) {
  const c = message.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c)) return c.map((p) => (p && p.type === "text" ? p.text : "")).join("");
  return "";
}

/**
 * The entry of a request's context that sits between a tool call and its result (TOOL-PAIRING),
 * or null: an assistant message's tool calls must be followed by their results before anything
 * else. An entry counts only when a result of one of those calls comes after it (a call whose
 * results never came is a different matter).
 */
function interleaved(messages) {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role !== "assistant" || !Array.isArray(m.content)) continue;
    const open = new Set(m.content.filter((c) => c && c.type === "toolCall").map((c) => c.id));
    let j = i + 1;
    while (open.size && j < messages.length && messages[j].role === "toolResult") open.delete(messages[j++].toolCallId);
    if (!open.size || j >= messages.length) continue;
    if (messages.slice(j + 1).some((n) => n.role === "toolResult" && open.has(n.toolCallId))) return messages[j];
  }
  return null;
}

/** The scripted model: pi's `streamSimple`, with replies and delays drawn by wakesim. */
function makeStream() {
  const timing = scenario.timing;
  return (model, context, _options) => {
    const stream = createAssistantMessageEventStream();
    const system = piAi.getCurrentSystemPrompt ? piAi.getCurrentSystemPrompt(context.messages) : JSON.stringify(context);
    const summarizing = context.messages.some((m) => m.role === "user" && /summar/i.test(userText(m))) && false;
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
    if ((own ? R.toolsByRun.get(run) : R.toolsLeft) > 0) {
      if (own) R.toolsByRun.set(run, R.toolsByRun.get(run) - 1);
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
    vclock.sleep(ms).then(() => {
      if (retry) {
        const message = { ...base, content: [], stopReason: "error", errorMessage: "529 overloaded_error: Overloaded (wakesim retries fault)" };
        stream.push({ type: "start", partial: { ...message } });
        stream.push({ type: "error", reason: "error", error: message });
        stream.end();
        return;
      }
      if (toolCall) {
        const call = { type: "toolCall", id: `call_${R.requests}`, name: "wakesim_tool", arguments: {} };
        const message = { ...base, content: [call], stopReason: "toolUse" };
        stream.push({ type: "start", partial: { ...base, content: [], stopReason: "toolUse" } });
        stream.push({ type: "toolcall_start", contentIndex: 0, partial: { ...message } });
        stream.push({ type: "toolcall_end", contentIndex: 0, toolCall: call, partial: { ...message } });
        stream.push({ type: "done", reason: "toolUse", message });
        stream.end();
        return;
      }
      const text = { type: "text", text: "ok" };
      const message = { ...base, content: [text], stopReason: "stop" };
      stream.push({ type: "start", partial: { ...base, content: [], stopReason: "stop" } });
      stream.push({ type: "text_start", contentIndex: 0, partial: { ...message } });
      stream.push({ type: "text_delta", contentIndex: 0, delta: "ok", partial: { ...message } });
      stream.push({ type: "text_end", contentIndex: 0, content: "ok", partial: { ...message } });
      stream.push({ type: "done", reason: "stop", message });
      stream.end();
    });
    return stream;
  };
}

/** A handler delay: the model's "handlers" draw after (or before) an extension event. */
async function handlers() {
  const h = scenario.timing.handler_ms;
  await vclock.sleep(wire.delay(h.min, h.max, "handlers"));
}

/**
 * wakesim's probe extensions: the services pi awaits that wakesim provides, the harness, and the
 * handler delays of run events. The model awaits handlers once before `agent_start`'s hook (after
 * the run starts) and once after each run event's hook; pi awaits every extension's handler in
 * load order, so a probe loaded before the wake logic (`preProbe`) and one loaded after it
 * (`probe`) put those awaits where the model has them.
 */
function preProbe(pi) {
  pi.on("agent_start", handlers);
}

function probe(pi) {
  const timing = scenario.timing;
  pi.on("input", async () => {
    // A handler that claims the prompt does so at once (the model's step 3); one that lets it
    // through is awaited for a step delay before step 5.
    if (fires("input_swallows_prompt")) {
      note("prompt claimed by an input handler (fault): no run, no event", "fault");
      return { action: "handled" };
    }
    await vclock.sleep(wire.delay(timing.step_ms.min, timing.step_ms.max, "await"));
    return { action: "continue" };
  });
  pi.on("before_agent_start", async (event) => {
    await handlers();
    return { systemPrompt: `${event.systemPrompt}\n${HARNESS}` };
  });
  pi.on("agent_start", handlers);
  pi.on("turn_end", handlers);
  pi.on("agent_end", handlers);
  pi.on("agent_settled", handlers);
  if (faultOn("extra_continues")) {
    pi.on("agent_before_settle", async (event) => {
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
      await vclock.sleep(d);
      return { content: [{ type: "text", text: "done" }], details: {} };
    },
  });
}

/**
 * Tool-calling turns of an inner run, drawn when the agent takes it (the model's `start_run`).
 * `run`, when given (pi 0.58), keeps the count for that run's requests: 0.58 can run a second
 * agent loop beside the first (a direct run started while `isStreaming` reads false under a
 * running loop), and each loop's replies follow its own draw, as each model run's do.
 */
function drawToolTurns(run) {
  const tt = scenario.timing.tool_turns;
  R.toolsLeft = tt.min + wire.choose(tt.max - tt.min + 1, "tool turns");
  if (run !== undefined) R.toolsByRun.set(run, R.toolsLeft);
}


function instrument(session) {
  if (OLD) gen058.instrument(session, { obs, note, als, R: () => R, drawToolTurns, carried });
  else instrumentRuns(session);
  instrumentCalls(session);
}

/** pi 0.76 and later: the run flag, the agent run, settling, starters and runs. */
function instrumentRuns(session) {
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
  agent.prompt = (...args) => {
    const who = als.getStore() || {};
    const accepted = !agent.activeRun;
    if (who.prompt !== undefined) obs("starter", { who: "prompt", n: who.prompt, accepted });
    else obs("starter", { who: "direct", n: who.run, accepted });
    if (!accepted) note(`Agent.prompt rejects: "Agent is already processing a prompt."`);
    else drawToolTurns();
    return origPrompt(...args);
  };
  const origContinue = agent.continue.bind(agent);
  agent.continue = (...args) => {
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
    session._startRun = (trigger, onStarted) => {
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
    session._prepareRun = async (trigger) => {
      // The compaction check's await, where pi 1.x has it: first in `_prepareRun`.
      const timing = scenario.timing;
      await vclock.sleep(wire.delay(timing.step_ms.min, timing.step_ms.max, "await"));
      const messages = await origPrepare(trigger);
      const ids = messages.slice(1).flatMap((m) => carried(m.content));
      const who = als.getStore()?.prompt;
      note(`${who !== undefined ? `P${who}` : `R${als.getStore()?.run}`} takes nextTurn [${ids.map((i) => `m${i + 1}`).join(" ")}]`);
      return messages;
    };
  } else {
    const origRun = session._runAgentPrompt.bind(session);
    session._runAgentPrompt = (messages) => {
      const run = ++R.runs;
      const store = als.getStore() || {};
      const fromPrompt = Array.isArray(messages) && store.prompt !== undefined && !store.promptStarted;
      if (fromPrompt) {
        store.promptStarted = true;
        R.livePrompts--;
        const ids = messages.slice(1).flatMap((m) => carried(m.content));
        note(`P${store.prompt} step 12 takes nextTurn [${ids.map((i) => `m${i + 1}`).join(" ")}] and starts its run`);
      } else {
        note(`direct run R${run} (sendMessage triggerTurn)`);
      }
      return als.run({ prompt: fromPrompt ? store.prompt : undefined, run }, () => origRun(messages));
    };
  }
}

/** Every version: prompts, the wake logic's calls and the session's events. */
function instrumentCalls(session) {
  // prompt(): numbered per call (sendUserMessage and the user's), deferred ones keep theirs.
  const origSessionPrompt = session.prompt.bind(session);
  session.prompt = (text, options) => {
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
      (v) => {
        if (!store.promptStarted) {
          R.livePrompts--;
          store.promptStarted = true;
          if (fromWake) mark("wake-prompt-failed");
          note(`P${n} ends without a run`);
        }
        return v;
      },
      (e) => {
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
  session.sendCustomMessage = (message, options) => {
    const ids = carried(message?.content ?? "");
    const what = ids.length ? ids.map((i) => `m${i + 1}`).join(" ") : `${message?.customType ?? "a message"}`;
    const opts = [options?.deliverAs && `deliverAs: ${options.deliverAs}`, options?.triggerTurn !== undefined && `triggerTurn: ${options.triggerTurn}`]
      .filter(Boolean)
      .join(", ");
    note(`sendMessage(${what}${opts ? `, {${opts}}` : ""})`, "wake");
    return origCustom(message, options);
  };
  const origUser = session.sendUserMessage.bind(session);
  session.sendUserMessage = (content, options) => {
    const ids = carried(content);
    const what = ids.length ? ids.map((i) => `m${i + 1}`).join(" ") : JSON.stringify(typeof content === "string" ? content : "…");
    note(`sendUserMessage(${what}${options?.deliverAs ? `, {deliverAs: ${options.deliverAs}}` : ""}) = P${R.prompts + 1}`, "wake");
    return origUser(content, options);
  };

  // Messages entering the context the model reads, and the run's events.
  session.subscribe((ev) => {
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
    if (ev.type === "message_end" && OLD) R.appendedBySession(ev.message);
    else if (ev.type === "message_end") {
      const m = ev.message;
      if (m.role === "user" || m.role === "custom") {
        for (const id of carried(m.content)) obs("appended", { msg: id });
      }
    }
  });
}

/** pi 0.99 and 1.x: the services of the model runtime pi awaits, wakesim's. */
function services099() {
  modelRuntime.hasConfiguredAuth = () => false;
  // prompt() awaits the auth check (step 8), then `_checkCompaction` (step 9, only with an
  // assistant message before it), then image normalization (step 11). Each is an await of a
  // service, in the model's order: auth, the compaction check, images (the model's `await` draws
  // at steps 5-8, 8-9 and 11). The compaction check's await is taken inside the auth service when
  // pi would skip it, so every prompt has the model's four awaits.
  modelRuntime.checkAuth = async () => {
    const timing = scenario.timing;
    const fail = fires("auth_error");
    await vclock.sleep(wire.delay(timing.step_ms.min, timing.step_ms.max, "await"));
    if (fail) return undefined;
    // pi 0.99's compaction check follows the auth check inside prompt(); pi 1.x moved it into
    // `_prepareRun`, after the run flag is set (taken there, below).
    if (F.runs === "run-agent-prompt") await vclock.sleep(wire.delay(timing.step_ms.min, timing.step_ms.max, "await"));
    return { type: "api_key", source: "wakesim" };
  };
  modelRuntime.streamSimple = makeStream();
  modelRuntime.getAuth = async () => ({ auth: { apiKey: "wakesim" }, env: {} });
}

async function runOnce() {
  R = {
    session: null,
    faults: new Map(),
    quiescent: false,
    requests: 0,
    runs: 0,
    prompts: 0,
    livePrompts: 0,
    deferredPrompts: [],
    toolsLeft: 0,
    toolsByRun: new Map(),
    idle: null,
    lastWakeAt: null,
    produced: 0,
    tags: new Map(),
  };
  vclock.begin();
  const planned = plan();
  R.faults = planned.faults;

  // Build the session (real file I/O of the loader may be awaited: real timers meanwhile).
  vclock.end();
  slot.factoryReturn = undefined;
  slot.pi = undefined;
  // pi 0.58's loader keeps no module cache of its own (jiti's is off there).
  if (wake.fresh_modules) loaderMod.clearExtensionCache?.();
  peer?.reset();
  // pi's retry settings from the scenario's `retry_ms` (the model computes the same backoff:
  // `min` is baseDelayMs, `max` maxAgentDelayMs, which 0.58 does not have). maxRetries is the
  // fault's own bound, so pi never gives up on a retry the fault asked for.
  const retries = scenario.faults.find((f) => f.name === "retries");
  const settingsManager = SettingsManager.inMemory({
    compaction: { enabled: false },
    retry: {
      enabled: true,
      maxRetries: Math.max(retries ? retries.max : 0, 1),
      baseDelayMs: scenario.timing.retry_ms.min,
      maxAgentDelayMs: scenario.timing.retry_ms.max,
    },
  });
  const resourceLoader = new DefaultResourceLoader({
    cwd: workDir,
    agentDir: path.join(sandbox, "agent"),
    settingsManager,
    noSkills: true,
    noPromptTemplates: true,
    noThemes: true,
    noContextFiles: true,
    systemPrompt: "You are the agent under wakesim.",
    additionalExtensionPaths: [preWrapper, wrapper],
    // Loaders before 0.99 take the factories themselves.
    extensionFactories: F.namedFactories ? [{ name: "wakesim-probe", factory: probe }] : [probe],
  });
  await resourceLoader.reload();
  const loaded = resourceLoader.getExtensions();
  if (loaded.errors && loaded.errors.length) {
    const e = new Error(`the extension failed to load: ${loaded.errors.map((e) => `${e.path}: ${e.error}`).join("; ")}`);
    e.wakesimKind = "load";
    throw e;
  }
  const model = {
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
  // Auth (prompt() step 8) and the model are wakesim's services (the runtime is built once).
  if (!REGISTRY) services099();


  vclock.begin();
  const { session } = await createAgentSession({
    cwd: workDir,
    agentDir: path.join(sandbox, "agent"),
    model,
    thinkingLevel: "off",
    ...(REGISTRY ? { modelRegistry, authStorage: modelRegistry.authStorage } : { modelRuntime }),
    settingsManager,
    resourceLoader,
    sessionManager: SessionManager.inMemory(workDir),
    noTools: "builtin",
  });
  R.session = session;
  instrument(session);
  if (OLD) {
    // pi 0.58 has no image normalization step: no await there.
    const timing = scenario.timing;
    const stepDelay = () => wire.delay(timing.step_ms.min, timing.step_ms.max, "await");
    gen058.services(session, modelRegistry, { fires, stepDelay, sleep: vclock.sleep, stream: makeStream() });
  } else if (REGISTRY) {
    // 0.76-0.87: prompt()'s auth check is the registry's synchronous `hasConfiguredAuth` (no
    // await: the fault fails it at once), and the agent's stream function asks the registry for
    // the request's key before it calls the model: both wakesim's, the model scripted.
    modelRegistry.hasConfiguredAuth = () => !fires("auth_error");
    modelRegistry.isUsingOAuth = () => false;
    session.agent.streamFn = makeStream();
  }
  if (!OLD && F.images) {
    const origImages = session._normalizePromptImages.bind(session);
    session._normalizePromptImages = async (images) => {
      const timing = scenario.timing;
      await vclock.sleep(wire.delay(timing.step_ms.min, timing.step_ms.max, "await"));
      return origImages(images);
    };
  }

  let send = null;
  if (deliver === "factory") {
    send = slot.factoryReturn;
    if (typeof send !== "function") {
      throw new Error(
        `${extFile}: its factory returned ${slot.factoryReturn === null ? "null" : typeof slot.factoryReturn}, not send(message, options); name another way in with deliver = "export:NAME" or "event:NAME"`
      );
    }
  } else if (deliver.startsWith("export:")) {
    const name = deliver.slice(7);
    send = slot.module && slot.module[name];
    if (typeof send !== "function") throw new Error(`${extFile}: no exported function ${name}`);
  } else if (peer) {
    send = null;
  } else if (deliver.startsWith("event:")) {
    const name = deliver.slice(6);
    send = (message) => slot.pi.events.emit(name, message);
  }

  obs("idle", { idle: true });
  R.idle = true;
  note("session 1 starts");
  await session.bindExtensions({});

  // Producer messages and timed faults on virtual timers.
  const peerRun = peer?.begin({ pi: slot.pi, session, messages: planned.messages, note: (text) => note(text, "wake"), tag: (tag, id) => R.tags.set(tag, id) });
  // The session stays up: a pi session in use is a process whose input keeps it up until the user
  // leaves, while a run ends when nothing ref'd is pending. A peer whose extension keeps only
  // unref()ed timers on its delivery path names how long after the last planned message its
  // user stays (`STAY_UP_MS`); the driver holds the session up that long (vclock.hold).
  if (peerRun && peer.STAY_UP_MS > 0 && planned.messages.length) {
    vclock.hold(planned.messages.reduce((a, m) => Math.max(a, m.at), 0) + peer.STAY_UP_MS);
  }
  for (const m of planned.messages) {
    setTimeout(() => {
      const id = wire.produce(t(), m.kind, m.source, { state: state() });
      const name = `m${id + 1}`;
      // Between inner runs: 0.99's run flag on with no agent run; 0.58's retry gap (idle).
      if (F.sessionFlag ? session._isAgentRunActive && !session.agent.activeRun : session.isRetrying && !session.isStreaming) mark("message-between-inner-runs");
      if (session._isEmittingAgentSettled) mark("message-while-settling");
      if (session.isCompacting) mark("message-while-compacting");
      if (R.lastWakeAt !== null) {
        const since = t() - R.lastWakeAt;
        if ((wake.constants_ms || []).some((c) => Math.abs(since - c) <= 1)) mark("at-constant-boundary");
      }
      note(`${name} → extension (${m.kind} from ${sourceName(m.kind, m.source)})`, "wake");
      if (peerRun) {
        peerRun.arrive(m, { id, name, marker: `[wakesim ${name}]` });
        return;
      }
      const message = {
        customType: `wakesim.${m.kind}`,
        content: `${m.kind} from ${sourceName(m.kind, m.source)} [wakesim ${name}]`,
        display: true,
        details: { id: name, kind: m.kind, source: sourceName(m.kind, m.source) },
      };
      const r = send(message, { ...DEFAULT_OPTIONS[m.kind] });
      if (r && typeof r.then === "function") r.catch((e) => note(`send threw: ${e && e.message}`, "wake"));
    }, m.at);
  }
  for (const f of planned.timed) {
    const fire = () => {
      if (R.quiescent) return;
      if (f.name === "user_prompts") {
        if (R.livePrompts > 0 || R.deferredPrompts.length > 0) {
          if (++f.attempts < 40) setTimeout(fire, 500);
          return;
        }
        const steer = session.isStreaming;
        note(`the user types a prompt${steer ? " (steer)" : ""}`, "user");
        session.prompt("the user's prompt", steer ? { streamingBehavior: "steer" } : {}).catch(() => {});
      }
    };
    setTimeout(fire, f.at);
  }

  const afterStep = () => {
    const quiet =
      !runActive(session) &&
      !session.agent.activeRun &&
      !session.isCompacting &&
      R.livePrompts === 0 &&
      !session._isEmittingAgentSettled &&
      (session._deferredSettledActions || []).length === 0 &&
      !session.isRetrying;
    if (quiet !== R.idle) {
      R.idle = quiet;
      obs("idle", { idle: quiet });
    }
  };
  const result = await vclock.loop({
    activeMs: limits.active_ms,
    horizonMs: limits.active_ms + limits.quiesce_ms_max,
    stepsMax: limits.steps_max,
    order: (n) => wire.order(n),
    afterStep,
    onActiveEnd: () => {
      R.quiescent = true;
    },
  });
  const end = { type: "end", t: t(), cause: result.cause, steps: result.steps };
  vclock.end();
  const escapes = vclock.takeEscapes();
  if (escapes.length) throw new Error(`the run escaped virtual time, so it would not replay the same (a real timer, I/O or thread-pool job completes at a wall-clock moment):\n${escapes.join("\n")}`);
  try {
    session.dispose?.();
  } catch {
    // A session that cannot dispose cleanly changes nothing in the run already reported.
  }
  wire.send(end);
}

process.on("unhandledRejection", (e) => {
  // pi's fire-and-forget sends report failures on the extension error channel; a rejection that
  // reaches here is pi's own, and does not change the run.
  process.stderr.write(`unhandled rejection: ${e && e.stack ? e.stack : e}\n`);
});

for (;;) {
  const m = wire.receive();
  if (m.type !== "run") wire.fatal(`expected run, got ${m.type}`);
  try {
    await runOnce();
  } catch (e) {
    if (e && e.wakesimKind) wire.fatal(e.message, e.wakesimKind);
    wire.fatal(`the run failed in the driver: ${e && e.stack ? e.stack : e}`);
  }
}
