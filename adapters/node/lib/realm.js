// The realm prelude: evaluated inside the module's vm context (one per adapter process, by
// realm-load.mjs, with its parts: realm-clock.js, the virtual clock, timers and randomness;
// realm-content.js, what a send carries and how errors are written), it builds the `pi` facade,
// the run's state and the module loader, and returns the functions the adapter's main loop calls
// (`reset`, `dispatch`, `finish`).
//
// Everything here runs in the context's own realm. The adapter drains the microtask queue after
// each `dispatch` and `reset` (adapter.mjs: Node's own queue, or the context's at the end of each
// `runInContext`): an async handler runs to completion (or to a virtual timer) before its `done`
// is written.
//
// `host` is the bridge to the main realm: write(text), query(text) -> line, log(text),
// resolve(specifier, fromDir) -> {filename, dirname} | {builtin}, compile(filename) -> function,
// builtin(name) -> module.

/**
 * The bridge to the main realm (adapter.mjs).
 * @typedef {object} RealmHost
 * @property {(text: string) => void} write
 * @property {(text: string) => string} query write `text`, block for the answer line
 * @property {(text: string) => void} log
 * @property {(spec: string, fromDir: string) => Resolved} resolve
 * @property {(filename: string) => Function} compile
 * @property {(name: string) => unknown} builtin
 */
/** @typedef {{filename: string, dirname: string, builtin?: undefined} | {builtin: string, filename?: undefined, dirname?: undefined}} Resolved */
/** A message of the protocol, decoded. @typedef {Record<string, any>} Msg */
/** A handler or callback of the module's (any shape: the module is not typed here).
 * @typedef {(...args: any[]) => any} Fn */
// The type checker reads these files as modules (the package is `"type": "module"`): the parts'
// typedefs are imported by name.
/** @typedef {import("./realm-clock.js").ClockHost} ClockHost */
/** @typedef {import("./realm-clock.js").RealmClock} RealmClock */
/** @typedef {import("./realm-clock.js").VirtualTimer} VirtualTimer */
/** @typedef {import("./realm-clock.js").QueuedMicrotask} QueuedMicrotask */
/** @typedef {import("./realm-content.js").RealmContent} RealmContent */
/**
 * The prelude's parts, each the value of its script evaluated in the same context.
 * @typedef {object} RealmParts
 * @property {(clockHost: ClockHost) => RealmClock} clock realm-clock.js
 * @property {() => RealmContent} content realm-content.js
 */

(/** @param {RealmHost} host @param {RealmParts} parts */ function wakesimRealm(host, parts) {
  "use strict";

  const STALE_CTX =
    "This extension ctx is stale after session replacement or reload. Use the ctx passed to the current handler.";
  // Date.now() is this epoch plus virtual time: realistic dates, the same in every run.
  const EPOCH_MS = 1767225600000; // 2026-01-01T00:00:00Z
  const realMath = Math;

  /**
   * Everything one run changes, in one object made afresh at each reset (`freshRun`): nothing of
   * a run can leak into the next by a field a reset forgot.
   * @typedef {object} RunState
   * @property {number} now virtual time, ms
   * @property {number} session the ctx of the event being handled
   * @property {string[]} out calls buffered until the next query or `done`
   * @property {Map<string, Fn[]>} handlers `pi.on` registrations, by event
   * @property {Fn | null} deliverFn the module's send(message, options)
   * @property {Map<number, object>} ctxs the ctx objects handed out, by session
   * @property {Map<number, VirtualTimer | QueuedMicrotask>} timers wire id -> timer record
   * @property {number} nextTimerId
   * @property {unknown} pendingError what the handler (or its promise) threw
   * @property {string | null} inputAction the input event's answer
   * @property {boolean} loading the module's factory is running
   * @property {Map<string, {exports: any, filename: string, id: string, loaded: boolean}>} moduleCache
   * @property {number} rngState Math.random's state (mulberry32)
   * @property {boolean | null} hint the event's `idle` (null: the ctx is stale)
   * @property {number} hintCtx the ctx `hint` is about
   * @property {boolean} hintValid `hint` holds (until the handler's first send)
   * @property {boolean} speculative the event was sent ahead
   */

  /** @returns {RunState} */
  function freshRun() {
    return {
      now: 0,
      session: 1,
      out: [],
      handlers: new Map(),
      deliverFn: null,
      ctxs: new Map(),
      timers: new Map(),
      nextTimerId: 1,
      pendingError: null,
      inputAction: null,
      loading: false,
      moduleCache: new Map(),
      rngState: 0x5eed,
      hint: null,
      hintCtx: 0,
      hintValid: false,
      speculative: false,
    };
  }

  let run = freshRun();

  // ---------------------------------------------------------------------------------------------
  // Output: calls are buffered and written before the next query or with `done`.

  /** @param {Msg} obj */
  function call(obj) {
    run.out.push(JSON.stringify(obj) + "\n");
  }

  // The event's `idle`: what isIdle() on the event's ctx answers, until this handler's first send
  // (the only calls that can change it). While it holds, isIdle() is answered here and the
  // simulator checks the answer instead of sending one: a round trip less.

  /** The buffered calls, then `line`. @param {string} line @returns {string} */
  function flushWith(line) {
    if (run.out.length === 0) return line;
    run.out.push(line);
    const text = run.out.join("");
    run.out = [];
    return text;
  }

  // An event sent ahead (`spec`): the simulator goes on without waiting for this handler, and
  // re-runs the seed if it turns out to call anything. A query cannot be answered then: it is
  // written (the simulator sees a call: a mispredict) and the handler abandoned.
  const ABANDONED = "wakesim: handler abandoned (a query in an event sent ahead)";

  /** @param {Msg} obj @returns {Msg} */
  function query(obj) {
    if (run.speculative) {
      call(obj);
      throw new Error(ABANDONED);
    }
    const line = host.query(flushWith(JSON.stringify(obj) + "\n"));
    const answer = JSON.parse(line);
    if (answer.type !== "result") {
      throw new Error(`wakesim: expected a result from the simulator, got ${line}`);
    }
    return answer;
  }

  // What a send carries, what a sendUserMessage shows, how an error is written (realm-content.js).
  const { carriesOf, userTextOf, deliverAsOf, describeError, format } = parts.content();

  // ---------------------------------------------------------------------------------------------
  // The pi facade.

  function noop() {}

  // A fresh facade for every run, so a module that decorates it cannot carry that over.
  const makePi = () => ({
    /** @param {string} event @param {Fn} handler */
    on(event, handler) {
      if (typeof handler !== "function") throw new TypeError("pi.on: the handler must be a function");
      let list = run.handlers.get(event);
      if (!list) run.handlers.set(event, (list = []));
      list.push(handler);
    },
    /** @param {any} message @param {any} [options] */
    sendMessage(message, options) {
      run.hintValid = false;
      const customType = message && message.customType != null ? String(message.customType) : null;
      call({
        type: "send_message",
        custom_type: customType,
        carries: carriesOf(message),
        deliver_as: deliverAsOf(options, "pi.sendMessage"),
        trigger_turn: !!(options && options.triggerTurn),
      });
    },
    /** @param {unknown} content @param {any} [options] */
    sendUserMessage(content, options) {
      run.hintValid = false;
      call({
        type: "send_user_message",
        carries: carriesOf(content),
        deliver_as: deliverAsOf(options, "pi.sendUserMessage"),
        text: userTextOf(content),
      });
    },
    // Registrations that do not bear on waking: accepted and ignored.
    registerCommand: noop,
    registerTool: noop,
    registerShortcut: noop,
    registerFlag: noop,
    registerMessageRenderer: noop,
    appendEntry: noop,
  });

  const ui = new Proxy({}, { get: () => noop });

  /** @param {number} id */
  function ctxFor(id) {
    let c = run.ctxs.get(id);
    if (!c) {
      c = Object.freeze({
        isIdle() {
          if (run.loading) throw new Error("wakesim: ctx.isIdle() called while the module loads");
          if (run.hintValid && id === run.hintCtx) {
            call({ type: "is_idle", ctx: id, known: run.hint === null ? "stale_ctx" : run.hint });
            if (run.hint === null) throw new Error(STALE_CTX);
            return run.hint;
          }
          const r = query({ type: "is_idle", ctx: id });
          if (r.error === "stale_ctx") throw new Error(STALE_CTX);
          return r.value === true;
        },
        hasUI: false,
        ui,
      });
      run.ctxs.set(id, c);
    }
    return c;
  }

  // ---------------------------------------------------------------------------------------------
  // Virtual time: Date, performance.now(), timers and queueMicrotask all follow the simulation,
  // and Math.random and crypto give the same sequence in every run (realm-clock.js).

  const { VirtualDate, performance, setTimeout, setInterval, clearTimeout, queueMicrotask, fire, random, crypto } = parts.clock({
    state: () => run,
    call,
    epochMs: EPOCH_MS,
  });

  // stdout is the protocol: the module's console writes to stderr.
  const log = (/** @type {unknown[]} */ ...args) => host.log(format(args) + "\n");
  const console = Object.freeze({ log, info: log, warn: log, error: log, debug: log, trace: log });

  const process = Object.freeze({
    env: Object.freeze({}),
    platform: "wakesim",
    nextTick: (/** @type {Fn} */ fn, /** @type {unknown[]} */ ...args) => queueMicrotask(() => fn(...args)),
    cwd: () => "/",
  });

  /** The realm's global object, written by name. @type {Record<string, any>} */
  const g = globalThis;
  Object.assign(g, {
    setTimeout,
    setInterval,
    clearTimeout,
    clearInterval: clearTimeout,
    queueMicrotask,
    performance,
    crypto,
    console,
    process,
    Date: VirtualDate,
  });
  realMath.random = random;
  // The realm's globals as the prelude leaves them: each reset restores them, so a module that
  // writes globals cannot carry state from one run into the next.
  const baseline = new Map();
  for (const name of Object.getOwnPropertyNames(g)) {
    baseline.set(name, Object.getOwnPropertyDescriptor(g, name));
  }
  // The baseline's data properties, checked by a function with each name written out: a named
  // global read is a property-cell load (about a nanosecond), where `g[name]` with a computed
  // name takes V8's slow path (about 90 ns each, 60-odd names, every reset). It answers whether
  // every one still holds its baseline value (`Object.is`, so NaN holds).
  const dataNames = [...baseline].filter(([, d]) => "value" in d).map(([name]) => name);
  const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
  const dataValues = dataNames.map((name) => baseline.get(name).value);
  const allHold = dataNames.every((n) => identifier.test(n))
    ? new Function(
        "g",
        "v",
        "is",
        "return " + (dataNames.map((n, i) => `is(g.${n}, v[${i}])`).join(" && ") || "true") + ";"
      )
    : null;

  function restoreGlobals() {
    // Globals the module added go; the baseline's are put back where the module changed or
    // deleted them.
    for (const name of Object.getOwnPropertyNames(g)) {
      if (!baseline.has(name) && !name.startsWith("__wakesim")) delete g[name];
    }
    if (allHold !== null && allHold(g, dataValues, Object.is)) return;
    for (const [name, d] of baseline) {
      if ("value" in d && !Object.is(g[name], d.value)) Object.defineProperty(g, name, d);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Modules: CommonJS inside the realm (TypeScript and ES modules are transpiled by the host).

  /** @param {string} fromDir */
  function makeRequire(fromDir) {
    /** @param {unknown} spec @returns {any} */
    return function require(spec) {
      const r = host.resolve(String(spec), fromDir);
      if (r.builtin !== undefined) return host.builtin(r.builtin);
      const cached = run.moduleCache.get(r.filename);
      if (cached) return cached.exports;
      const module = { exports: {}, filename: r.filename, id: r.filename, loaded: false };
      run.moduleCache.set(r.filename, module);
      const fn = host.compile(r.filename);
      fn.call(module.exports, module.exports, makeRequire(r.dirname), module, r.filename, r.dirname);
      module.loaded = true;
      return module.exports;
    };
  }

  /** @type {Record<string, {deliverAs: string, triggerTurn: boolean}>} */
  const DEFAULT_OPTIONS = {
    completion: { deliverAs: "steer", triggerTurn: true },
    notification: { deliverAs: "steer", triggerTurn: true },
    orchestrator: { deliverAs: "followUp", triggerTurn: true },
  };

  // ---------------------------------------------------------------------------------------------
  // The adapter's entry points.

  // A fresh module instance: returns the `ready` line, or throws with why the module cannot run.
  /** @param {string} entry @param {string | null} exportName @param {unknown} options
   * @returns {string} */
  function reset(entry, exportName, options) {
    restoreGlobals();
    run = freshRun();
    realMath.random = random;
    const pi = makePi();
    run.loading = true;
    let exports;
    try {
      exports = makeRequire("/")(entry);
      let factory;
      if (exportName) {
        factory = exports[exportName];
      } else if (typeof exports === "function") {
        factory = exports;
      } else {
        factory = exports.default;
      }
      const what = exportName ? `export \`${exportName}\`` : "default export";
      if (typeof factory !== "function") {
        throw new Error(`${entry}: its ${what} is not a function (a factory taking pi)`);
      }
      const ret = factory(pi, JSON.parse(JSON.stringify(options || {})));
      if (typeof ret !== "function") {
        throw new Error(
          `${entry}: its ${what} returned ${ret === null ? "null" : typeof ret}, not a function: ` +
            "a wake module's factory takes pi and returns send(message, options), which wakesim " +
            "calls for each producer message"
        );
      }
      run.deliverFn = ret;
    } finally {
      run.loading = false;
    }
    // Calls the module made while loading (timers, say) go out with the first event.
    const events = ["message", "session_start"];
    for (const name of run.handlers.keys()) {
      const wire = name === "session_compact_failed" ? "session_compact" : name;
      if (!events.includes(wire)) events.push(wire);
    }
    return JSON.stringify({ type: "ready", events }) + "\n";
  }

  // Run the handlers of `name` one after another, awaiting those that return a promise.
  /** @param {string} name @param {Msg} event @param {object} ctx
   * @param {(r: any) => boolean} [onResult] */
  function runHandlers(name, event, ctx, onResult) {
    const list = run.handlers.get(name);
    if (!list) return;
    let i = 0;
    const step = () => {
      while (i < list.length) {
        const r = list[i++](event, ctx);
        if (r && typeof r.then === "function") {
          return r.then((/** @type {unknown} */ v) => {
            if (onResult && onResult(v)) return undefined;
            return step();
          });
        }
        if (onResult && onResult(r)) return undefined;
      }
      return undefined;
    };
    const p = step();
    if (p) {
      p.then(undefined, (/** @type {unknown} */ e) => {
        if (!run.pendingError) run.pendingError = e;
      });
    }
  }

  /** @param {string} line */
  function dispatch(line) {
    const ev = JSON.parse(line);
    run.now = ev.now;
    run.session = ev.ctx;
    run.hintCtx = ev.ctx;
    run.hint = ev.idle === undefined ? null : ev.idle;
    run.hintValid = ev.idle !== undefined;
    run.speculative = ev.spec === true;
    run.pendingError = null;
    run.inputAction = null;
    const ctx = ctxFor(run.session);
    try {
      switch (ev.event) {
        case "message": {
          const m = ev.message;
          const message = {
            customType: `wakesim.${m.kind}`,
            content: m.text,
            display: true,
            details: { id: m.name, kind: m.kind, source: m.source },
          };
          if (run.deliverFn === null) throw new Error("wakesim: an event before the module loaded");
          const r = run.deliverFn(message, { ...DEFAULT_OPTIONS[m.kind] });
          if (r && typeof r.then === "function") {
            r.then(undefined, (/** @type {unknown} */ e) => {
              if (!run.pendingError) run.pendingError = e;
            });
          }
          break;
        }
        case "timer":
          fire(ev.timer);
          break;
        case "input":
          run.inputAction = "continue";
          runHandlers(
            "input",
            { type: "input", text: "", source: ev.input.source, streamingBehavior: ev.input.streaming_behavior ?? undefined },
            ctx,
            (/** @type {any} */ r) => {
              if (r && r.action === "handled") {
                run.inputAction = "handled";
                return true;
              }
              return false;
            }
          );
          break;
        case "session_compact": {
          const name = ev.outcome === "failed" ? "session_compact_failed" : "session_compact";
          runHandlers(name, { type: name }, ctx);
          break;
        }
        default:
          runHandlers(ev.event, { type: ev.event }, ctx);
      }
    } catch (e) {
      if (!run.pendingError) run.pendingError = e;
    }
  }

  // After the context's microtasks ran: the buffered calls and `done`.
  function finish() {
    if (!run.inputAction && !run.pendingError) return flushWith('{"type":"done"}\n');
    /** @type {Msg} */
    const done = { type: "done" };
    if (run.inputAction) done.action = run.inputAction;
    if (run.pendingError) done.error = describeError(run.pendingError);
    return flushWith(JSON.stringify(done) + "\n");
  }

  return { reset, dispatch, finish };
});
