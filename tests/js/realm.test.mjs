// adapters/node/lib/realm.js, the Node adapter's realm prelude, evaluated in a vm context as the
// adapter evaluates it (realm-load.mjs, with its parts), with a host that serves modules from
// memory and records what is written: a reset loads the module and reports its events; a message
// event calls its send, whose calls go out with `done`; the event's idle hint answers isIdle; a
// query in an event sent ahead abandons the handler; timers are host calls fired by `timer`
// events. Each reset starts a fresh run (handlers, timers, random sequence, the module's
// globals): nothing carries over.
import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import vm from "node:vm";
import { loadRealm } from "../../adapters/node/lib/realm-load.mjs";

/** A realm over in-memory modules (`files`: absolute path -> CommonJS source). */
function makeRealm(files, answers = []) {
  const context = vm.createContext({}, { name: "test", microtaskMode: "afterEvaluate" });
  const queries = [];
  const host = {
    write() {},
    query(text) {
      queries.push(text);
      const a = answers.shift();
      if (a === undefined) throw new Error(`no answer for ${text}`);
      return JSON.stringify(a);
    },
    log() {},
    resolve(spec, fromDir) {
      const filename = path.resolve(fromDir, spec);
      if (!(filename in files)) throw new Error(`no module ${filename}`);
      return { filename, dirname: path.dirname(filename) };
    },
    compile(filename) {
      return vm.compileFunction(files[filename], ["exports", "require", "module", "__filename", "__dirname"], {
        parsingContext: context,
        filename,
      });
    },
    builtin: () => ({}),
  };
  const realm = loadRealm(context, host);
  context.__wakesim_r = realm;
  // Entering the context drains its microtasks, as the adapter does for each event.
  const enter = (code) => vm.runInContext(code, context);
  return {
    reset: (options = {}) => {
      context.__wakesim_o = options;
      return JSON.parse(enter("__wakesim_r.reset('/wake.js', null, __wakesim_o)"));
    },
    event: (ev) => {
      context.__wakesim_l = JSON.stringify({ type: "event", now: 0, ctx: 1, ...ev });
      enter("__wakesim_r.dispatch(__wakesim_l)");
      return enter("__wakesim_r.finish()").trim().split("\n").map((l) => JSON.parse(l));
    },
    queries,
    context,
  };
}

const MSG = { kind: "completion", text: "job done [wakesim m2]", name: "job", source: "s" };

const SENDER = `
module.exports = function wake(pi, options) {
  pi.on("agent_end", (event, ctx) => {
    globalThis.leaked = (globalThis.leaked || 0) + 1;
    pi.sendMessage({ customType: "idle", content: String(ctx.isIdle()) }, { deliverAs: "followUp" });
  });
  return (message, opts) => {
    pi.sendMessage(message, opts);
    setTimeout(() => pi.sendUserMessage("later " + message.content + " " + Math.random()), 50);
  };
};
`;

test("a reset loads the module and reports its events", () => {
  const r = makeRealm({ "/wake.js": SENDER });
  assert.deepEqual(r.reset(), { type: "ready", events: ["message", "session_start", "agent_end"] });
});

test("a message event calls send; its calls go out with done", () => {
  const r = makeRealm({ "/wake.js": SENDER });
  r.reset();
  const out = r.event({ event: "message", message: MSG });
  assert.deepEqual(out, [
    { type: "send_message", custom_type: "wakesim.completion", carries: [1], deliver_as: "steer", trigger_turn: true },
    { type: "set_timeout", timer: 1, ms: 50 },
    { type: "done" },
  ]);
  const fired = r.event({ event: "timer", timer: 1, now: 50 });
  assert.equal(fired[0].type, "send_user_message");
  assert.deepEqual(fired[0].carries, [1]);
});

test("the event's idle hint answers isIdle; without it the host is asked", () => {
  const r = makeRealm({ "/wake.js": SENDER }, [{ type: "result", value: false }]);
  r.reset();
  const hinted = r.event({ event: "agent_end", idle: true });
  assert.deepEqual(hinted[0], { type: "is_idle", ctx: 1, known: true });
  assert.equal(r.queries.length, 0);
  const asked = r.event({ event: "agent_end" });
  assert.deepEqual(JSON.parse(r.queries[0]), { type: "is_idle", ctx: 1 });
  assert.deepEqual(asked.at(-1), { type: "done" });
});

test("a query in an event sent ahead abandons the handler", () => {
  const r = makeRealm({ "/wake.js": SENDER });
  r.reset();
  const out = r.event({ event: "agent_end", spec: true });
  assert.deepEqual(out[0], { type: "is_idle", ctx: 1 });
  assert.match(out[1].error, /handler abandoned/);
  assert.equal(r.queries.length, 0);
});

test("each reset starts a fresh run", () => {
  const r = makeRealm({ "/wake.js": SENDER });
  const runOnce = () => {
    r.reset();
    r.event({ event: "message", message: MSG });
    r.event({ event: "agent_end", idle: false });
    return r.event({ event: "timer", timer: 1, now: 50 })[0];
  };
  const first = runOnce();
  // The same timer id, the same random draw; the module's global is gone; one handler, not two.
  assert.deepEqual(runOnce(), first);
  r.reset();
  assert.equal(r.context.leaked, undefined);
  const out = r.event({ event: "agent_end", idle: true });
  assert.equal(out.filter((l) => l.type === "send_message").length, 1);
});

test("a factory that returns no send function is refused at reset", () => {
  const r = makeRealm({ "/wake.js": "module.exports = () => 42;" });
  assert.throws(() => r.reset(), /returned number, not a function/);
});

test("deliverAs is checked", () => {
  const r = makeRealm({ "/wake.js": "module.exports = (pi) => (m) => pi.sendMessage(m, { deliverAs: 'later' });" });
  r.reset();
  const out = r.event({ event: "message", message: MSG });
  assert.match(out.at(-1).error, /deliverAs must be/);
});
