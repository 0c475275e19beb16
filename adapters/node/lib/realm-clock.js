// The realm's virtual time and randomness (a part of the realm prelude, realm.js; evaluated in the
// module's vm context by realm-load.mjs): `Date`, `performance`, the timers and
// `queueMicrotask` follow the simulation, and `Math.random` and `crypto` give the same sequence
// in every run (mulberry32). A timer is a call to the simulator (`set_timeout`, `clear_timeout`,
// `queue_microtask`), fired by its `timer` event (`fire`).
//
// The clock keeps nothing of its own between runs: what a run changes (the time, the timers,
// the next timer id, the random state) lives in the run's state object, which the realm makes
// afresh at each reset and this part reads through `state()`.

// The type checker reads this file as a module (the package is `"type": "module"`): its typedefs
// are exported to the prelude's other files, and theirs imported here.
/** @typedef {import("./realm.js").Fn} Fn */
/** @typedef {import("./realm.js").Msg} Msg */
/** A virtual timer as the run's state holds it (the clock's `Timeout`).
 * @typedef {object} VirtualTimer
 * @property {number} _id the wire id while it is armed
 * @property {boolean} _live armed and not yet fired
 * @property {() => void} _cancel */
/** A queued microtask as the run's state holds it. @typedef {{micro: Fn}} QueuedMicrotask */
/**
 * What the clock reads and writes of the run's state (realm.js `RunState`).
 * @typedef {object} ClockRun
 * @property {number} now virtual time, ms
 * @property {Map<number, VirtualTimer | QueuedMicrotask>} timers wire id -> timer record
 * @property {number} nextTimerId
 * @property {number} rngState Math.random's state (mulberry32)
 */
/**
 * What the realm hands its clock.
 * @typedef {object} ClockHost
 * @property {() => ClockRun} state the current run's state
 * @property {(obj: Msg) => void} call buffer a call to the simulator
 * @property {number} epochMs what `Date.now()` answers at virtual time 0
 */
/**
 * The clock: what the realm installs as its globals, and the `timer` event's `fire`.
 * @typedef {object} RealmClock
 * @property {((...args: any[]) => any) & {now(): number}} VirtualDate the realm's `Date`:
 *   `new Date()`, `Date()` and `Date.now()` read the virtual clock
 * @property {{now(): number, timeOrigin: number}} performance
 * @property {(ms: unknown) => number} delayOf
 * @property {(fn: Fn, ms: unknown, ...args: unknown[]) => object} setTimeout
 * @property {(fn: Fn, ms: unknown, ...args: unknown[]) => object} setInterval
 * @property {(t: unknown) => void} clearTimeout
 * @property {(fn: Fn) => void} queueMicrotask
 * @property {(id: number) => void} fire
 * @property {() => number} random
 * @property {{getRandomValues<T extends {length: number, [i: number]: number}>(a: T): T, randomUUID(): string}} crypto
 */

(/** @param {ClockHost} clockHost @returns {RealmClock} */ function wakesimRealmClock(clockHost) {
  "use strict";

  const { state, call, epochMs } = clockHost;
  const TIMEOUT_MAX = 2147483647;
  const RealDate = Date;

  function virtualNow() {
    return epochMs + state().now;
  }

  /** @param {any[]} args */
  function VirtualDate(...args) {
    if (!new.target) return new RealDate(virtualNow()).toString();
    return Reflect.construct(RealDate, args.length ? args : [virtualNow()], new.target);
  }
  VirtualDate.prototype = RealDate.prototype;
  VirtualDate.now = virtualNow;
  VirtualDate.parse = RealDate.parse;
  VirtualDate.UTC = RealDate.UTC;
  Object.defineProperty(RealDate.prototype, "constructor", { value: VirtualDate, writable: true, configurable: true });

  const performance = Object.freeze({ now: () => state().now, timeOrigin: epochMs });

  /** A timer's delay as Node takes it: whole ms, at least 0.
   * @param {unknown} ms @returns {number} */
  function delayOf(ms) {
    const n = Math.floor(Number(ms));
    if (!(n >= 0)) return 0;
    // Node runs a delay beyond the 32-bit range at once (after a warning).
    return n > TIMEOUT_MAX ? 1 : n;
  }

  class Timeout {
    /** @param {Fn} fn @param {unknown[]} args @param {number} ms @param {boolean} repeat */
    constructor(fn, args, ms, repeat) {
      this._fn = fn;
      this._args = args;
      this._ms = ms;
      this._repeat = repeat;
      this._id = 0;
      this._live = false;
      this._cleared = false;
    }
    _arm() {
      const run = state();
      this._id = run.nextTimerId++;
      this._live = true;
      this._cleared = false;
      run.timers.set(this._id, this);
      call({ type: "set_timeout", timer: this._id, ms: this._ms });
    }
    _cancel() {
      this._cleared = true;
      if (!this._live) return;
      this._live = false;
      state().timers.delete(this._id);
      call({ type: "clear_timeout", timer: this._id });
    }
    ref() {
      return this;
    }
    unref() {
      return this;
    }
    hasRef() {
      return true;
    }
    refresh() {
      this._cancel();
      this._arm();
      return this;
    }
    close() {
      this._cancel();
      return this;
    }
    [Symbol.toPrimitive]() {
      return this._id;
    }
  }

  /** @param {unknown} fn @param {string} name @returns {asserts fn is Fn} */
  function checkFn(fn, name) {
    if (typeof fn !== "function") throw new TypeError(`${name}: the callback must be a function`);
  }

  /** @param {Fn} fn @param {unknown} ms @param {unknown[]} args */
  function setTimeout(fn, ms, ...args) {
    checkFn(fn, "setTimeout");
    const t = new Timeout(fn, args, delayOf(ms), false);
    t._arm();
    return t;
  }

  /** @param {Fn} fn @param {unknown} ms @param {unknown[]} args */
  function setInterval(fn, ms, ...args) {
    checkFn(fn, "setInterval");
    const t = new Timeout(fn, args, Math.max(1, delayOf(ms)), true);
    t._arm();
    return t;
  }

  /** @param {unknown} t */
  function clearTimeout(t) {
    if (t instanceof Timeout) {
      t._cancel();
    } else if (t != null) {
      const rec = state().timers.get(Number(t));
      if (rec instanceof Timeout) rec._cancel();
    }
  }

  /** @param {Fn} fn */
  function queueMicrotask(fn) {
    checkFn(fn, "queueMicrotask");
    const run = state();
    const id = run.nextTimerId++;
    run.timers.set(id, { micro: fn });
    call({ type: "queue_microtask", timer: id });
  }

  /** The `timer` event: run the timer or microtask `id` (nothing if it was cleared).
   * @param {number} id */
  function fire(id) {
    const run = state();
    const t = run.timers.get(id);
    if (!t) return;
    run.timers.delete(id);
    if (!(t instanceof Timeout)) {
      /** @type {QueuedMicrotask} */ (t).micro();
      return;
    }
    t._live = false;
    try {
      t._fn(...t._args);
    } finally {
      if (t._repeat && !t._cleared && !t._live) {
        t._arm();
      }
    }
  }

  // A deterministic Math.random and crypto: the same sequence in every run (mulberry32).
  function random() {
    const run = state();
    run.rngState = (run.rngState + 0x6d2b79f5) | 0;
    let x = run.rngState;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  }

  const crypto = Object.freeze({
    /** @template {{length: number, [i: number]: number}} T @param {T} a @returns {T} */
    getRandomValues(a) {
      for (let i = 0; i < a.length; i++) a[i] = Math.floor(random() * 2 ** 32);
      return a;
    },
    randomUUID() {
      const h = [];
      for (let i = 0; i < 16; i++) h.push(Math.floor(random() * 256));
      h[6] = (h[6] & 0x0f) | 0x40;
      h[8] = (h[8] & 0x3f) | 0x80;
      const s = h.map((b) => b.toString(16).padStart(2, "0")).join("");
      return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
    },
  });

  return { VirtualDate, performance, delayOf, setTimeout, setInterval, clearTimeout, queueMicrotask, fire, random, crypto };
});
