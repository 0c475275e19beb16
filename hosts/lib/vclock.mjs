// Virtual time for a real host under simulation (docs/remote-host.md).
//
// The host's own code reads time and sets timers through the globals: `Date`, `performance.now`,
// `setTimeout`/`setInterval`/`setImmediate` and their clears. While a run is on, each of them
// answers to a virtual clock that only this module advances, one timer at a time, so a run is a
// pure function of the choices wakesim hands out. Between runs (while the host is imported and a
// session is built, which may await real file I/O) the real timers are used.
//
// The loop fires the earliest timer; when several are due at the same virtual instant, wakesim
// chooses which goes first (`order`). After each callback it lets the real event loop drain every
// microtask and `process.nextTick` (one real `setImmediate` turn): a promise chain runs to its
// next virtual await before anything else happens, as in Node. Timers that are `unref()`ed do not
// keep a run alive, as they do not keep Node alive.

import crypto from "node:crypto";
import { performance } from "node:perf_hooks";

export const real = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
  setImmediate: globalThis.setImmediate,
  clearImmediate: globalThis.clearImmediate,
  Date: globalThis.Date,
  performanceNow: performance.now.bind(performance),
};

// 2026-01-01T00:00:00Z: the virtual epoch, as the Node adapter's.
export const EPOCH_MS = 1767225600000;

let virtualOn = false;
let now = 0;
let seq = 0;
/** Pending virtual timers by id. */
const timers = new Map();

class VTimer {
  constructor(id) {
    this._id = id;
  }
  ref() {
    const t = timers.get(this._id);
    if (t) t.ref = true;
    return this;
  }
  unref() {
    const t = timers.get(this._id);
    if (t) t.ref = false;
    return this;
  }
  hasRef() {
    const t = timers.get(this._id);
    return t ? t.ref : false;
  }
  refresh() {
    const t = timers.get(this._id);
    if (t) {
      t.at = now + t.ms;
      t.seq = ++seq;
    }
    return this;
  }
  close() {
    timers.delete(this._id);
    return this;
  }
  [Symbol.toPrimitive]() {
    return this._id;
  }
}

function add(fn, ms, args, interval, immediate) {
  if (typeof fn !== "function") throw new TypeError("The \"callback\" argument must be of type function");
  let d = Number(ms);
  if (!Number.isFinite(d) || d < 1) d = immediate ? 0 : 0;
  d = Math.floor(d);
  const id = ++seq;
  timers.set(id, { id, at: now + d, seq: id, ms: d, fn, args, interval, ref: true });
  return new VTimer(id);
}

function clear(handle) {
  if (handle == null) return;
  const id = typeof handle === "object" ? handle._id : Number(handle);
  timers.delete(id);
}

const vSetTimeout = (fn, ms, ...args) => (virtualOn ? add(fn, ms, args, false, false) : real.setTimeout(fn, ms, ...args));
const vSetInterval = (fn, ms, ...args) => (virtualOn ? add(fn, Math.max(1, Number(ms) || 1), args, true, false) : real.setInterval(fn, ms, ...args));
const vSetImmediate = (fn, ...args) => (virtualOn ? add(fn, 0, args, false, true) : real.setImmediate(fn, ...args));
const vClear = (realClear) => (h) => {
  if (h instanceof VTimer || typeof h === "number") clear(h);
  else realClear(h);
};

class VDate extends real.Date {
  constructor(...args) {
    if (args.length === 0) super(EPOCH_MS + now);
    else super(...args);
  }
  static now() {
    return EPOCH_MS + now;
  }
}

// Randomness of the host and of the extension: a fixed-seed generator (mulberry32) reset at
// every run, so ids and jitter are the same in every run of a seed and a run never reads a
// random source of its own. Decisions wakesim explores are drawn through `choose`, not here.
let rngState = 0;
function nextRandom() {
  rngState = (rngState + 0x6d2b79f5) | 0;
  let t = rngState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
function randomUUID() {
  const b = new Uint8Array(16);
  for (let i = 0; i < 16; i++) b[i] = Math.floor(nextRandom() * 256);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Replace the globals once, before the host is imported (modules may keep references). */
export function install() {
  Math.random = nextRandom;
  crypto.randomUUID = randomUUID;
  if (globalThis.crypto && globalThis.crypto !== crypto) {
    try {
      globalThis.crypto.randomUUID = randomUUID;
    } catch {
      // A read-only webcrypto: node:crypto's is replaced, which pi imports.
    }
  }
  globalThis.setTimeout = vSetTimeout;
  globalThis.setInterval = vSetInterval;
  globalThis.setImmediate = vSetImmediate;
  globalThis.clearTimeout = vClear(real.clearTimeout);
  globalThis.clearInterval = vClear(real.clearInterval);
  globalThis.clearImmediate = vClear(real.clearImmediate);
  globalThis.Date = VDate;
  performance.now = () => now;
}

/** Start a run: virtual time 0, no timers. */
export function begin() {
  rngState = 0x5eed;
  timers.clear();
  now = 0;
  seq = 0;
  virtualOn = true;
}

/** End a run: drop its timers, back to real timers for the set-up of the next one. */
export function end() {
  timers.clear();
  virtualOn = false;
}

export function time() {
  return now;
}

/** One real event-loop turn: every microtask and nextTick queued so far runs. */
export function settle() {
  return new Promise((resolve) => real.setImmediate(resolve));
}

/** Virtual sleep: resolves `ms` virtual ms from now (a microtask when 0). */
export function sleep(ms) {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve) => add(resolve, ms, [], false, false));
}

/**
 * Run the virtual loop until nothing keeps the run alive, the horizon passes or the step budget
 * runs out. `order(n)` picks among `n` timers due at the same instant; `afterStep()` runs after
 * each callback and its microtasks; `onActiveEnd()` once, when virtual time first reaches
 * `activeMs` (producers and faults stop).
 */
export async function loop({ activeMs, horizonMs, stepsMax, order, afterStep, onActiveEnd }) {
  let steps = 0;
  let quiescent = false;
  await settle();
  afterStep();
  for (;;) {
    let first = null;
    let anyRef = false;
    for (const t of timers.values()) {
      if (t.ref) anyRef = true;
      if (first === null || t.at < first.at || (t.at === first.at && t.seq < first.seq)) first = t;
    }
    if (!anyRef) {
      if (!quiescent) {
        quiescent = true;
        now = Math.max(now, activeMs);
        onActiveEnd();
        await settle();
        afterStep();
        continue;
      }
      return { cause: "quiet", steps };
    }
    if (!quiescent && first.at >= activeMs) {
      quiescent = true;
      now = Math.max(now, activeMs);
      onActiveEnd();
      await settle();
      afterStep();
      continue;
    }
    if (first.at > horizonMs) {
      now = horizonMs;
      return { cause: "horizon", steps };
    }
    if (steps >= stepsMax) return { cause: "steps", steps };
    // Same-instant ready set, in scheduling order; wakesim picks.
    const ready = [];
    for (const t of timers.values()) if (t.at === first.at) ready.push(t);
    ready.sort((a, b) => a.seq - b.seq);
    const pick = ready.length > 1 ? ready[order(ready.length)] : ready[0];
    now = pick.at;
    steps++;
    if (pick.interval) {
      pick.at = now + pick.ms;
      pick.seq = ++seq;
    } else {
      timers.delete(pick.id);
    }
    try {
      pick.fn(...pick.args);
    } catch (e) {
      // An uncaught exception in a timer callback: Node would crash the process. The host's
      // own code does not throw here; report it as the driver's error.
      throw e;
    }
    await settle();
    afterStep();
  }
}
