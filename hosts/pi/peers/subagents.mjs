// Fake peer of `pi-subagents` (0.67.0): the background runner processes the extension spawns.
//
// How content enters the extension (its source, src/): a background subagent run is launched by
// `spawnRunner` (runs/background/async-execution.ts): it writes the run's config
// (`async-cfg-<id>.json`, holding the run's `sessionId`, `completionOwnerId`, `asyncDir` and
// `resultPath`), spawns `node [preload] jiti-cli subagent-runner.ts <config>`, then writes the
// start-up barrier `runner-startup-proceed.json` (token = the config's `launchBarrierToken`).
// The runner (runs/background/subagent-runner.ts `runConfiguredSubagent`) waits for that file,
// removes it, runs its child session, writes `status.json` and the result file, and exits. The
// parent's result watcher (runs/background/result-watcher.ts) sees the result file through
// `fs.watch` on its results directory (and a 60 s scan), schedules each file in a coalescer (0 ms), checks
// ownership (`sessionId` = the session's, `completionOwnerId` = this process's), and hands the
// completion to notify.ts, whose batcher sends one `subagent-notify` message with `triggerTurn`.
//
// What is fake: the runner processes, their pids, and the kernel's watch events on the
// extension's own directories. Runs are launched through the extension's own RPC channel on
// `pi.events` (`subagents:rpc:v1:request`, method `spawn`, async), which other extensions use:
// one run per planned message, at session start, its task carrying the tag `[wakesim sK]`.
// `child_process.spawn` of `subagent-runner.ts` is answered by a fake child (every other spawn
// goes to the real one). At the planned message's instant the fake runner does what the real
// one does at its end: it takes the start-up barrier (the proceed file with its token), writes
// `status.json` (`complete`; `failed` for an `orchestrator` message; `stopped` for a
// `notification`, its child stopped from outside) and the result file (`sessionId` and
// `completionOwnerId` from its config, its summary carrying the tag), then exits 0 (1 when
// failed); the result file's `fs.watch` event arrives at the same virtual
// instant, as a timer (its order among that instant's timers is wakesim's same-instant choice).
// The runner's writer stages the file under `result-pending/` and renames it into place; the
// peer writes it with one rename too, so the watcher sees the same final file.

import childProcess from "node:child_process";
import { EventEmitter } from "node:events";
import fs from "node:fs";
import workerThreads from "node:worker_threads";
import module from "node:module";
import os from "node:os";
import path from "node:path";

// Above Linux's PID_MAX_LIMIT (2^22): never a real process.
const PID_BASE = 1 << 30;
const live = new Map(); // pid → FakeRunner
/** @typedef {import("../peers.mjs").PeerRun} PeerRun @typedef {import("../peers.mjs").Planned} Planned */
/** @typedef {import("../peers.mjs").Arrival} Arrival */

/** @type {FakeRunner[]} spawned fake runners, in spawn order */
const runners = [];
const watchers = new Map(); // watched path → listener
let nextPid = 0;
// How long the session stays up after the last planned run ends (read by the driver's rule,
// driver.mjs): one rescan interval of the result watcher (60 s), so every unref()ed timer of
// the delivery path (the coalescer, the retry delay, the batcher's debounce and max wait) and one
// rescan can fire.
export const STAY_UP_MS = 60_000;

/** The extension's temporary root (`PI_SUBAGENTS_TEMP_ROOT` or `<tmpdir>/pi-subagents-<scope>`). */
/** @param {unknown} p */
function ownedPath(p) {
  const target = path.resolve(String(p));
  const root = process.env.PI_SUBAGENTS_TEMP_ROOT;
  if (root) return target === path.resolve(root) || target.startsWith(path.resolve(root) + path.sep);
  const rel = path.relative(os.tmpdir(), target);
  return !rel.startsWith("..") && !path.isAbsolute(rel) && rel.split(path.sep)[0].startsWith("pi-subagents-");
}

/** @param {unknown} p */
function canonical(p) {
  try {
    return fs.realpathSync.native(String(p));
  } catch {
    return path.resolve(String(p));
  }
}

class FakeRunner extends EventEmitter {
  /** @param {number} pid @param {string} cfgPath */
  constructor(pid, cfgPath) {
    super();
    this.pid = pid;
    this.cfgPath = cfgPath;
    /** @type {object | null} a runner's pipes: none (the extension reads its files) */
    this.stdin = null;
    /** @type {object | null} */
    this.stdout = null;
    /** @type {object | null} */
    this.stderr = null;
    /** @type {number | null} */
    this.exitCode = null;
    /** @type {string | null} */
    this.signalCode = null;
    /** @type {any} its config, once bound to a planned run */
    this.cfg = null;
  }
  unref() {
    return this;
  }
  ref() {
    return this;
  }
  kill(signal = "SIGTERM") {
    this.end(null, signal);
    return true;
  }
  /** @param {number | null} code @param {string | null} signal */
  end(code, signal) {
    if (this.exitCode !== null || this.signalCode !== null) return;
    this.exitCode = code;
    this.signalCode = signal;
    live.delete(this.pid);
    this.emit("exit", code, signal);
    this.emit("close", code, signal);
  }
}

/** @param {string} file @param {unknown} data */
function writeJson(file, data) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(data, null, 2), { mode: 0o600 });
  fs.renameSync(tmp, file);
}

export function install() {
  const realSpawn = childProcess.spawn;
  /** @type {any} */ (childProcess).spawn = (/** @type {any} */ command, /** @type {any} */ args, /** @type {any} */ options) => {
    const list = Array.isArray(args) ? args : [];
    if (!list.some((a) => typeof a === "string" && /[\\/]subagent-runner\.ts$/.test(a))) return realSpawn(command, args, options);
    const runner = new FakeRunner(PID_BASE + ++nextPid, list[list.length - 1]);
    live.set(runner.pid, runner);
    runners.push(runner);
    return runner;
  };
  const realKill = process.kill.bind(process);
  process.kill = (pid, signal) => {
    const n = Math.abs(Number(pid));
    if (n < PID_BASE) return realKill(pid, signal);
    const child = live.get(n);
    if (!child) {
      const e = /** @type {NodeJS.ErrnoException} */ (new Error("kill ESRCH"));
      e.code = "ESRCH";
      throw e;
    }
    if (signal !== 0) child.end(null, typeof signal === "string" ? signal : "SIGTERM");
    return true;
  };
  const realWatch = fs.watch;
  /** @type {any} */ (fs).watch = (/** @type {any} */ p, /** @type {any[]} */ ...rest) => {
    if (!ownedPath(p)) return realWatch(p, .../** @type {[any]} */ (rest));
    const target = canonical(p);
    const listener = rest.find((r) => typeof r === "function");
    /** @type {any} */
    const w = new EventEmitter();
    w.close = () => {
      if (watchers.get(target) === listener) watchers.delete(target);
    };
    w.ref = () => w;
    w.unref = () => w;
    if (listener) watchers.set(target, listener);
    return w;
  };
  // pi-subagents' retention housekeeping (a timer 60 s after session start) scans its async and
  // results directories in a worker thread, whose reply lands at a wall-clock moment: a run that
  // starts one would not replay the same, and the driver refuses it. Those directories are the
  // run's fresh sandbox, which holds nothing retained, so the worker's answer is known: an empty
  // discovery. This worker answers it at once (a microtask), in virtual time; any other worker is
  // a real one.
  const RealWorker = workerThreads.Worker;
  /** @type {any} */ (workerThreads).Worker = function Worker(/** @type {any} */ url, /** @type {any} */ options) {
    if (!/async-retention-discovery-worker\.mjs$/.test(String(url))) return new RealWorker(url, options);
    /** @type {any} */
    const w = new EventEmitter();
    w.postMessage = (/** @type {any} */ m) => {
      if (m && m.type === "discover") {
        const reply = { type: "result", passId: m.passId, discoveryDurationMs: 0, rawReads: 0, sourceExhausted: {}, runCandidates: [], resultCandidates: [], cursorOps: [] };
        queueMicrotask(() => w.emit("message", reply));
      }
    };
    w.terminate = () => Promise.resolve(0);
    w.ref = () => w;
    w.unref = () => w;
    return w;
  };
  module.syncBuiltinESMExports();
}

export function reset() {
  live.clear();
  runners.length = 0;
  watchers.clear();
  nextPid = 0;
  const root = process.env.PI_SUBAGENTS_TEMP_ROOT;
  if (root) {
    fs.rmSync(root, { recursive: true, force: true });
    return;
  }
  for (const name of fs.readdirSync(os.tmpdir())) {
    if (name.startsWith("pi-subagents-")) fs.rmSync(path.join(os.tmpdir(), name), { recursive: true, force: true });
  }
}

/** @param {PeerRun} run */
export function begin(run) {
  /** @typedef {{tag: string, reply: any, runner: FakeRunner | null}} Launch */
  /** @type {Map<Planned, Launch>} planned message → its launch */
  const launched = new Map();
  run.messages.forEach((m, k) => {
    const tag = `s${k + 1}`;
    /** @type {Launch} */
    const entry = { tag, reply: null, runner: null };
    launched.set(m, entry);
    const requestId = `wakesim-${k + 1}`;
    const off = run.pi.events.on(`subagents:rpc:v1:reply:${requestId}`, (/** @type {any} */ reply) => {
      entry.reply = reply;
      if (typeof off === "function") off();
    });
    run.pi.events.emit("subagents:rpc:v1:request", {
      version: 1,
      requestId,
      method: "spawn",
      params: { agent: "worker", task: `background task ${k + 1} [wakesim ${tag}]`, async: true },
      source: { extension: "wakesim" },
    });
    // The RPC handler awaits before it launches: the reply and the spawned runner are bound
    // when they appear (the runner by the tag in its config's task).
  });
  if (run.messages.length) run.note(`${run.messages.length} background subagent run(s) requested over pi-subagents' RPC`);
  // Every timer of pi-subagents' delivery path is unref()ed: the session stays up STAY_UP_MS
  // after the last planned run ends (the driver holds it, driver.mjs).
  const runnerFor = (/** @type {Launch} */ entry) => {
    if (entry.runner) return entry.runner;
    for (const r of runners) {
      if ([...launched.values()].some((e) => e.runner === r)) continue;
      let cfg;
      try {
        cfg = JSON.parse(fs.readFileSync(r.cfgPath, "utf-8"));
      } catch {
        continue;
      }
      const task = JSON.stringify(cfg);
      if (task.includes(`[wakesim ${entry.tag}]`)) {
        entry.runner = r;
        r.cfg = cfg;
        return r;
      }
    }
    return null;
  };
  return {
    /** @param {Planned} m @param {Pick<Arrival, "id" | "name">} arrival */
    arrive(m, { id, name }) {
      const entry = launched.get(m);
      if (!entry) throw new Error(`subagents peer: ${name} was not planned at begin()`);
      run.tag(entry.tag, id);
      const runner = runnerFor(entry);
      if (!runner) {
        // The refusal's text names the checkout's absolute paths: cut to what does not depend on
        // where the repository lives (a trace is the same on every machine).
        const refusal = entry.reply && !entry.reply.success ? String(entry.reply.error && entry.reply.error.message).replace(/\S*\/hosts\//g, "hosts/") : "";
        const why = entry.reply ? (entry.reply.success ? "no runner was spawned" : `spawn refused: ${refusal}`) : "the spawn request has no reply yet";
        run.note(`subagent run ${entry.tag.slice(1)} (${name}) cannot end: ${why}`);
        return;
      }
      const cfg = runner.cfg;
      // The runner's start-up barrier: the parent's proceed file with the launch token.
      const proceed = path.join(cfg.asyncDir, "runner-startup-proceed.json");
      let authorized = false;
      try {
        const p = JSON.parse(fs.readFileSync(proceed, "utf-8"));
        authorized = p.action === "proceed" && p.token === cfg.launchBarrierToken;
      } catch {
        authorized = false;
      }
      if (!authorized) {
        run.note(`subagent run ${entry.tag.slice(1)} (${name}): the runner was never authorized to start; it exits 1`);
        runner.end(1, null);
        return;
      }
      fs.rmSync(proceed, { force: true });
      // completion: the run completes (exit 0); orchestrator: it fails (exit 1); notification: its
      // child is stopped from outside (a stop request or a signal), and the runner writes a
      // `stopped` result (subagent-runner.ts: `stopped || signalTerminated ? "stopped"`), exit 0.
      const stopped = m.kind === "notification";
      const failed = m.kind !== "completion";
      const now = Date.now();
      const state = stopped ? "stopped" : failed ? "failed" : "complete";
      const statusPath = path.join(cfg.asyncDir, "status.json");
      /** @type {any} */
      let status = {};
      try {
        status = JSON.parse(fs.readFileSync(statusPath, "utf-8"));
      } catch {
        status = {};
      }
      const summary = `${stopped ? "stopped" : failed ? "failed" : "done"}: background task ${entry.tag.slice(1)} [wakesim ${entry.tag}]`;
      writeJson(statusPath, {
        ...status,
        runId: cfg.id,
        state,
        lastUpdate: now,
        endedAt: now,
        ...(failed ? { error: summary } : {}),
        steps: (status.steps || []).map((/** @type {any} */ s) => ({ ...s, status: stopped ? "stopped" : failed ? "failed" : "complete", endedAt: now })),
      });
      const result = {
        id: cfg.id,
        agent: "worker",
        mode: "single",
        success: !failed,
        state,
        summary,
        ...(stopped ? { stopped: true, error: summary } : {}),
        results: [{ agent: "worker", output: summary, outputState: "present", success: !failed, ...(failed ? { error: summary } : {}), ...(stopped ? { stopped: true } : {}) }],
        exitCode: failed && !stopped ? 1 : 0,
        timestamp: now,
        durationMs: now - (status.startedAt || now),
        cwd: cfg.cwd,
        asyncDir: cfg.asyncDir,
        sessionId: cfg.sessionId,
        completionOwnerId: cfg.completionOwnerId,
      };
      writeJson(cfg.resultPath, result);
      const code = failed && !stopped ? 1 : 0;
      run.note(`subagent run ${entry.tag.slice(1)} (${name}) writes its ${state} result and exits ${code}`);
      runner.end(code, null);
      const dir = canonical(path.dirname(cfg.resultPath));
      setTimeout(() => {
        const listener = watchers.get(dir);
        if (listener) listener("rename", path.basename(cfg.resultPath));
      }, 0);
    },
  };
}
