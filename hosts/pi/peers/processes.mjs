// Fake peer of `@aliou/pi-processes` (0.12.0): background processes the extension manages.
//
// How content enters the extension (its source, extensions/processes/): a managed child process
// ends; the manager's `close` handler classifies the end, the notification service emits a payload
// on `pi.events` (`processes:notification`), and the delivery listener calls `pi.sendMessage` with
// the attention's options (notification-sender.ts): `turn` → `{ deliverAs: "steer", triggerTurn:
// true }`, `context` → `{ deliverAs: "nextTurn", triggerTurn: false }`. By default a success and a
// crash are `turn`, an outside kill is `context`.
//
// What is fake: the child processes. At session start each planned message's process is handed to
// the manager through the extension's own adoption channel (`processes:command:adopt`, which other
// extensions use to hand over a running child), as a fake `ChildProcess` (pid, stdout, stderr,
// `exit`/`close` events) in a fake process group: `process.kill(-pgid, sig)` of the manager's
// liveness tick and kills is answered for these pids only. At the message's instant the process
// ends: `completion` exits 0 (success), `notification` is killed by SIGTERM from outside (killed),
// `orchestrator` exits 1 (crash). Its name carries the tag `[wakesim jK]`, bound to the produced
// message's id when it ends, so the notification's content names the message.

import crypto from "node:crypto";
import { EventEmitter } from "node:events";
import module from "node:module";

// Above Linux's PID_MAX_LIMIT (2^22): never a real process.
const PID_BASE = 1 << 30;
const live = new Map(); // pid → FakeChild

class FakeStream extends EventEmitter {
  constructor() {
    super();
    this.destroyed = false;
  }
}

/** @typedef {import("../peers.mjs").PeerRun} PeerRun @typedef {import("../peers.mjs").Planned} Planned */
/** @typedef {import("../peers.mjs").Arrival} Arrival */

class FakeChild extends EventEmitter {
  /** @param {number} pid */
  constructor(pid) {
    super();
    this.pid = pid;
    this.stdout = new FakeStream();
    this.stderr = new FakeStream();
    this.stdin = null;
    this.exitCode = null;
    this.signalCode = null;
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
  /** The process ends: its output is flushed, then `exit` and `close`, as Node emits them.
   * @param {number | null} code @param {string | null} signal @param {string} [line] */
  end(code, signal, line) {
    if (this.exitCode !== null || this.signalCode !== null) return;
    if (line) this.stdout.emit("data", Buffer.from(`${line}\n`));
    this.exitCode = code;
    this.signalCode = signal;
    live.delete(this.pid);
    this.stdout.destroyed = true;
    this.stderr.destroyed = true;
    this.emit("exit", code, signal);
    this.emit("close", code, signal);
  }
}

export function install() {
  const realKill = process.kill.bind(process);
  process.kill = (pid, signal) => {
    const child = live.get(Math.abs(Number(pid)));
    if (Math.abs(Number(pid)) < PID_BASE) return realKill(pid, signal);
    if (!child) {
      const e = /** @type {NodeJS.ErrnoException} */ (new Error("kill ESRCH"));
      e.code = "ESRCH";
      throw e;
    }
    if (signal !== 0) child.end(null, typeof signal === "string" ? signal : "SIGTERM");
    return true;
  };
  // The manager names processes `proc_<4 hex>` from crypto.randomBytes: drawn from the run's
  // seeded Math.random instead, so names and ordering are the same in every run of a seed.
  const realRandomBytes = crypto.randomBytes;
  /** @type {any} */ (crypto).randomBytes = (/** @type {number} */ n, /** @type {any} */ cb) => {
    if (cb) return realRandomBytes(n, cb);
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = Math.floor(Math.random() * 256);
    return b;
  };
  module.syncBuiltinESMExports();
}

export function reset() {
  live.clear();
}

/** @param {PeerRun} run */
export function begin(run) {
  /** @type {Map<Planned, {child: FakeChild, tag: string, id: string}>} planned message → its process */
  const children = new Map();
  run.messages.forEach((m, k) => {
    const child = new FakeChild(PID_BASE + k + 1);
    live.set(child.pid, child);
    const tag = `j${k + 1}`;
    /** @type {any} the reply the handler gives (set in its callback) */
    let adopted = null;
    run.pi.events.emit("processes:command:adopt", {
      name: `job ${k + 1} [wakesim ${tag}]`,
      command: `wakesim-job ${k + 1}`,
      cwd: process.cwd(),
      child,
      startTime: Date.now(),
      reply: (/** @type {any} */ r) => {
        adopted = r;
      },
    });
    if (!adopted || !adopted.ok) {
      throw new Error(`pi-processes did not adopt job ${k + 1}: ${adopted ? adopted.error : "no reply on processes:command:adopt"}`);
    }
    children.set(m, { child, tag, id: adopted.info.id });
  });
  if (run.messages.length) run.note(`${run.messages.length} background job(s) adopted by pi-processes`);
  return {
    /** @param {Planned} m @param {Pick<Arrival, "id" | "name">} arrival */
    arrive(m, { id, name }) {
      const planned = children.get(m);
      if (!planned) throw new Error(`processes peer: ${name} was not planned at begin()`);
      const { child, tag } = planned;
      run.tag(tag, id);
      if (m.kind === "completion") {
        run.note(`job ${tag.slice(1)} (${name}) exits 0`);
        child.end(0, null, `done ${name}`);
      } else if (m.kind === "notification") {
        run.note(`job ${tag.slice(1)} (${name}) is killed by SIGTERM from outside`);
        child.end(null, "SIGTERM");
      } else {
        run.note(`job ${tag.slice(1)} (${name}) exits 1`);
        child.end(1, null, `failed ${name}`);
      }
    },
  };
}
