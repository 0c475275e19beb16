// wakesim's real pi driver: runs pi's own AgentSession (from the pinned npm package) under the
// simulation, speaking the remote-host protocol (docs/remote-host.md) on stdin/stdout.
//
// What is real: AgentSession, Agent and its loop, the extension runner, pi's extension loader
// (jiti) loading the wake logic's file, the session manager (in memory), settings (in memory),
// retries and their backoff. What wakesim provides, each resolving after a virtual delay drawn
// through `choose` (services.mjs): the model, the auth check, the input handlers' await, the
// handler delays of run events, the tool's execution, the before-settle boundary. Time is
// virtual (../lib/vclock.mjs). Observations are read from pi's real state (instrument.mjs; pi
// 0.58's shape in gen058.mjs): the run flag, `Agent.activeRun`, `_isEmittingAgentSettled`, the
// starters, the messages entering the context, and what each model request carries.
//
// This file: the sandbox pi runs in, `hello` (importing the pinned pi and the wake logic's
// extension), the per-seed plan, and the run loop: one fresh session per `run`, its producer
// messages and timed faults on virtual timers, its idle observations, its `end`.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AsyncLocalStorage } from "node:async_hooks";
import module from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

import * as vclock from "../lib/vclock.mjs";
import * as peers from "./peers.mjs";
import * as features from "./features.mjs";
import * as wire from "../lib/wire.mjs";
import { carried, sourceName } from "./content.mjs";
import { instrument } from "./instrument.mjs";
import { scriptedModel, services } from "./services.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const DRIVER = "wakesim-pi-driver/0.1.0";

/** An exception's stack, or the exception itself: what a driver error reports.
 * @param {any} e @returns {unknown} */
const stackOf = (e) => (e && e.stack ? e.stack : e);

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
  // (Node 22's; the type check reads Node 20's types.)
  /** @type {any} */ (module).enableCompileCache?.(path.join(process.env.WAKESIM_HOST_CACHE || path.join(here, "..", ".cache"), "node-compile"));
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
  wire.fatal(`cannot import pi ${version} from ${modules}: ${stackOf(e)}`);
}
let F;
try {
  F = features.detect(version, piMod, agentMod);
} catch (e) {
  wire.fatal(/** @type {Error} */ (e).message);
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
const slot = { options: JSON.parse(JSON.stringify(wake.options || {})), preProbe: (pi) => svc.preProbe(pi) };
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

/** Per-run state the observers and services share (made by each `run`, before anything reads it).
 * @type {import("./services.mjs").Run} */
let R = /** @type {any} */ (null);

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

// The driver's parts (services.mjs, instrument.mjs, gen058.mjs) reach the run through these.
/** @type {import("./services.mjs").Driver} */
const cx = {
  F,
  OLD,
  REGISTRY,
  scenario,
  piAi,
  modelRuntime,
  modelRegistry,
  als,
  R: () => R,
  t,
  sleep: vclock.sleep,
  obs,
  note,
  mark,
  fires,
  faultOn,
  carried: (content) => carried(content, R.tags),
  drawToolTurns: (run) => svc.drawToolTurns(run),
};
const svc = services(cx);

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
    extensionFactories: F.namedFactories ? [{ name: "wakesim-probe", factory: svc.probe }] : [svc.probe],
  });
  await resourceLoader.reload();
  const loaded = resourceLoader.getExtensions();
  if (loaded.errors && loaded.errors.length) {
    const e = /** @type {Error & {wakesimKind?: string}} */ (new Error(`the extension failed to load: ${loaded.errors.map((e) => `${e.path}: ${e.error}`).join("; ")}`));
    e.wakesimKind = "load";
    throw e;
  }
  // Auth (prompt() step 8) and the model are wakesim's services (the runtime is built once).
  svc.runtime();

  vclock.begin();
  const { session } = await createAgentSession({
    cwd: workDir,
    agentDir: path.join(sandbox, "agent"),
    model: scriptedModel(),
    thinkingLevel: "off",
    ...(REGISTRY ? { modelRegistry, authStorage: modelRegistry.authStorage } : { modelRuntime }),
    settingsManager,
    resourceLoader,
    sessionManager: SessionManager.inMemory(workDir),
    noTools: "builtin",
  });
  R.session = session;
  instrument(session, cx);
  svc.session(session);

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
  if (peer && peerRun && peer.STAY_UP_MS > 0 && planned.messages.length) {
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
  process.stderr.write(`unhandled rejection: ${stackOf(e)}\n`);
});

for (;;) {
  const m = wire.receive();
  if (m.type !== "run") wire.fatal(`expected run, got ${m.type}`);
  try {
    await runOnce();
  } catch (thrown) {
    const e = /** @type {any} */ (thrown);
    if (e && e.wakesimKind) wire.fatal(e.message, e.wakesimKind);
    wire.fatal(`the run failed in the driver: ${stackOf(e)}`);
  }
}
