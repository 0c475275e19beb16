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
//
// Every other source of time or randomness a host or extension can reach is replaced too (below,
// `install`): `node:timers` and `node:timers/promises`, `AbortSignal.timeout`, `process.hrtime`
// (and `.bigint`), `process.uptime`, `performance.timeOrigin`, `Date()` called as a function, and
// node:crypto's and webcrypto's random sources (`randomUUID`, `getRandomValues`, `randomBytes`,
// `randomFill(Sync)`, `randomInt`). A builtin's named ESM exports (`import { randomUUID } from
// "crypto"`, as pi's session manager does) are copies made at start-up: `syncBuiltinESMExports`
// makes them see the replacements. `strict()` (every driver calls it: a run that escapes is
// never replayable, so it is refused by default) turns any real async resource a run creates (a
// real timer, file I/O, a socket, a thread-pool job) into a driver error naming its stack: such
// a resource completes at a wall-clock moment, so where it lands among the virtual steps would
// depend on the machine's load.

import crypto from "node:crypto";
import asyncHooks from "node:async_hooks";
import module from "node:module";
import nodeTimers from "node:timers";
import timersPromises from "node:timers/promises";
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
  sleep: timersPromises.setTimeout,
  immediate: timersPromises.setImmediate,
  abortTimeout: AbortSignal.timeout.bind(AbortSignal),
  hrtime: process.hrtime,
  uptime: process.uptime,
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
  /** @param {any[]} args */
  constructor(...args) {
    if (args.length === 0) super(EPOCH_MS + now);
    else super(.../** @type {[any]} */ (args));
  }
  static now() {
    return EPOCH_MS + now;
  }
}
// `Date()` without `new` is the current time as a string (a class cannot be called).
const VDateCallable = new Proxy(VDate, { apply: () => new real.Date(EPOCH_MS + now).toString() });

// Promise timers (`node:timers/promises`), on the virtual clock while a run is on.
function abortError(signal) {
  const e = /** @type {NodeJS.ErrnoException} */ (new Error("The operation was aborted", { cause: signal?.reason }));
  e.name = "AbortError";
  e.code = "ABORT_ERR";
  return e;
}
function vPromiseTimer(ms, value, options, immediate) {
  const signal = options?.signal;
  if (signal?.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    let h = null;
    const onAbort = () => {
      clear(h);
      reject(abortError(signal));
    };
    h = add(
      () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(value);
      },
      immediate ? 0 : ms,
      [],
      false,
      immediate
    );
    if (options?.ref === false) h.unref();
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
const vSleep = (ms, value, options) => (virtualOn ? vPromiseTimer(ms, value, options, false) : real.sleep(ms, value, options));
const vImmediateP = (value, options) => (virtualOn ? vPromiseTimer(0, value, options, true) : real.immediate(value, options));
function vAbortTimeout(ms) {
  if (!virtualOn) return real.abortTimeout(ms);
  const c = new AbortController();
  // As Node's: the timer does not keep the process (here: the run) alive.
  add(() => c.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError")), ms, [], false, false).unref();
  return c.signal;
}
function vHrtime(prev) {
  const ns = BigInt(now) * 1_000_000n;
  let s = Number(ns / 1_000_000_000n);
  let n = Number(ns % 1_000_000_000n);
  if (Array.isArray(prev)) {
    s -= prev[0];
    n -= prev[1];
    if (n < 0) {
      s -= 1;
      n += 1_000_000_000;
    }
  }
  return [s, n];
}
vHrtime.bigint = () => BigInt(now) * 1_000_000n;

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
function fill(view, offset = 0, size = view.byteLength - offset) {
  const bytes = new Uint8Array(view.buffer, view.byteOffset + offset, size);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(nextRandom() * 256);
  return view;
}
function getRandomValues(view) {
  if (!ArrayBuffer.isView(view) || view instanceof Float32Array || view instanceof Float64Array || view instanceof DataView) {
    throw new TypeError("The data argument must be an integer-type TypedArray");
  }
  if (view.byteLength > 65536) throw new RangeError("The ArrayBufferView's byte length exceeds the number of bytes of entropy available");
  return fill(view);
}
function randomBytes(size, cb) {
  const buf = fill(Buffer.alloc(size));
  if (typeof cb === "function") {
    process.nextTick(cb, null, buf);
    return undefined;
  }
  return buf;
}
function randomFillSync(buf, offset = 0, size) {
  const view = buf instanceof ArrayBuffer ? new Uint8Array(buf) : buf;
  const start = offset * 1;
  fill(view, start, size === undefined ? view.byteLength - start : size);
  return buf;
}
function randomFill(buf, ...rest) {
  const cb = rest.pop();
  randomFillSync(buf, ...rest);
  process.nextTick(cb, null, buf);
}
function randomInt(a, b, cb) {
  let min = 0;
  let max = a;
  if (typeof b === "number") {
    min = a;
    max = b;
  } else cb = b;
  const n = min + Math.floor(nextRandom() * (max - min));
  if (typeof cb === "function") {
    process.nextTick(cb, null, n);
    return undefined;
  }
  return n;
}
function randomUUID() {
  const b = new Uint8Array(16);
  fill(b);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * Own data properties of `obj`. node:crypto's `getRandomValues` is a fixed getter that calls
 * webcrypto's, whose own property is replaced: it is left as it is.
 */
function put(obj, values) {
  for (const [k, v] of Object.entries(values)) {
    const d = Object.getOwnPropertyDescriptor(obj, k);
    if (d && !d.configurable) continue;
    Object.defineProperty(obj, k, { value: v, writable: true, configurable: true, enumerable: true });
  }
}

/** Replace the globals once, before the host is imported (modules may keep references). */
export function install() {
  Math.random = nextRandom;
  put(crypto, { randomUUID, getRandomValues, randomBytes, randomFillSync, randomFill, randomInt, pseudoRandomBytes: randomBytes });
  // webcrypto (`globalThis.crypto`, `crypto.webcrypto`): its methods live on the prototype; own
  // properties of the instance shadow them.
  for (const web of new Set([globalThis.crypto, crypto.webcrypto])) {
    if (web) put(web, { randomUUID, getRandomValues });
  }
  const timerFns = {
    setTimeout: vSetTimeout,
    setInterval: vSetInterval,
    setImmediate: vSetImmediate,
    clearTimeout: vClear(real.clearTimeout),
    clearInterval: vClear(real.clearInterval),
    clearImmediate: vClear(real.clearImmediate),
  };
  Object.assign(globalThis, timerFns);
  Object.assign(nodeTimers, timerFns);
  timersPromises.setTimeout = vSleep;
  timersPromises.setImmediate = vImmediateP;
  AbortSignal.timeout = vAbortTimeout;
  globalThis.Date = /** @type {DateConstructor} */ (/** @type {unknown} */ (VDateCallable));
  performance.now = () => now;
  Object.defineProperty(performance, "timeOrigin", { value: EPOCH_MS, configurable: true, enumerable: true });
  process.hrtime = /** @type {NodeJS.HRTime} */ (/** @type {unknown} */ (vHrtime));
  process.uptime = () => now / 1000;
  // The named ESM exports of node:crypto and node:timers(/promises) follow the replacements.
  module.syncBuiltinESMExports();
}

// Strict mode: a real async resource created while a run is on is an escape from virtual time.
// Promises, nextTicks and microtasks are the run's own; settle()'s immediates are the loop's.
const OWN = new Set(["PROMISE", "TickObject", "Microtask"]);
let inSettle = false;
let escapes = null;
export function strict() {
  escapes = [];
  asyncHooks
    .createHook({
      init(_id, type) {
        if (!virtualOn || OWN.has(type) || (type === "Immediate" && inSettle)) return;
        if (escapes.length < 5) escapes.push(`${type} at virtual ${now} ms:${(new Error().stack ?? "").split("\n").slice(3, 9).join("\n")}`);
      },
    })
    .enable();
}
/** Escapes seen since the last call (strict mode, which every driver turns on), or none. */
export function takeEscapes() {
  if (!escapes || escapes.length === 0) return [];
  const e = escapes;
  escapes = [];
  return e;
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
  inSettle = true;
  try {
    return new Promise((resolve) => real.setImmediate(resolve));
  } finally {
    inSettle = false;
  }
}

/**
 * The session stays up for `ms` more virtual ms. A pi session in use is a process that stays up:
 * its TUI or RPC input is a ref'd handle until the user leaves. A run has no user to leave, so it
 * ends when nothing ref'd is pending (as Node exits); an extension whose housekeeping timers are
 * all `unref()`ed (a result watcher's coalescer, a batcher's debounce, a periodic rescan) would
 * then lose the run before they fire. The hold is that input handle, closed `ms` from now: one
 * ref'd no-op timer, released as one step of the loop, exactly as a ref'd `setTimeout` of the
 * same length set at this instant (so it orders among same-instant timers as one would).
 */
export function hold(ms) {
  if (!virtualOn) throw new Error("vclock.hold() outside a run");
  add(() => {}, ms, [], false, false);
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
