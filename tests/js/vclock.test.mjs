// hosts/lib/vclock.mjs, virtual time for a real host: inside a run the globals answer to the
// virtual clock (timers fire in virtual-time order, one a step, same-instant ones in the order
// wakesim picks; Date and performance read virtual time), unref()ed timers do not keep a run
// alive and hold() does, the horizon and the step budget end a run, and the random sources
// restart at every run. Outside a run the real timers are used. The file is its own process
// (node --test), so install() patches only it.
import { test } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import timersPromises from "node:timers/promises";
import * as vclock from "../../hosts/lib/vclock.mjs";

vclock.install();

const noop = () => {};
/** Run `body` (which sets timers) in a virtual run; the loop's result and what the body logged. */
async function run(body, { activeMs = 1_000, horizonMs = 10_000, stepsMax = 1_000, order = () => 0 } = {}) {
  const log = [];
  let activeEnds = 0;
  vclock.begin();
  try {
    body(log);
    const out = await vclock.loop({ activeMs, horizonMs, stepsMax, order, afterStep: noop, onActiveEnd: () => activeEnds++ });
    return { ...out, log, activeEnds, now: vclock.time() };
  } finally {
    vclock.end();
  }
}

test("timers fire in virtual-time order and the clocks read virtual time", async () => {
  const out = await run((log) => {
    setTimeout(() => log.push(["b", Date.now() - vclock.EPOCH_MS, performance.now()]), 300);
    setTimeout(() => log.push(["a", Date.now() - vclock.EPOCH_MS]), 100);
    setImmediate(() => log.push(["now", vclock.time()]));
  });
  assert.deepEqual(out.log, [["now", 0], ["a", 100], ["b", 300, 300]]);
  assert.equal(out.cause, "quiet");
  assert.equal(out.steps, 3);
  assert.equal(out.activeEnds, 1);
});

test("same-instant timers go in the order wakesim picks", async () => {
  const counts = [];
  const out = await run(
    (log) => {
      for (const name of ["x", "y", "z"]) setTimeout(() => log.push(name), 50);
    },
    { order: (n) => (counts.push(n), n - 1) }
  );
  // The last of the ready ones each time: z, then y, then x (one left: no choice).
  assert.deepEqual(out.log, ["z", "y", "x"]);
  assert.deepEqual(counts, [3, 2]);
});

test("an unref'd timer does not keep a run alive; hold() does", async () => {
  const quiet = await run((log) => setTimeout(() => log.push("late"), 5_000).unref());
  assert.deepEqual(quiet.log, []);
  assert.equal(quiet.cause, "quiet");
  const held = await run((log) => {
    setTimeout(() => log.push("late"), 5_000).unref();
    vclock.hold(6_000);
  });
  assert.deepEqual(held.log, ["late"]);
});

test("an interval repeats until cleared; a cleared timer never fires", async () => {
  const out = await run((log) => {
    const h = setInterval(() => {
      log.push(vclock.time());
      if (log.length === 3) clearInterval(h);
    }, 200);
    clearTimeout(setTimeout(() => log.push("cleared"), 10));
  });
  assert.deepEqual(out.log, [200, 400, 600]);
});

test("the horizon and the step budget end a run", async () => {
  const far = await run((log) => setTimeout(() => log.push("never"), 50_000), { horizonMs: 20_000 });
  assert.equal(far.cause, "horizon");
  assert.equal(far.now, 20_000);
  assert.deepEqual(far.log, []);
  const busy = await run(() => setInterval(noop, 1), { stepsMax: 25, activeMs: 1e9, horizonMs: 1e9 });
  assert.equal(busy.cause, "steps");
  assert.equal(busy.steps, 25);
});

test("promise timers and virtual sleep follow the clock", async () => {
  const out = await run((log) => {
    timersPromises.setTimeout(150, "v").then((v) => log.push([v, vclock.time()]));
    vclock.sleep(40).then(() => log.push(["slept", vclock.time()]));
  });
  assert.deepEqual(out.log, [["slept", 40], ["v", 150]]);
});

test("random sources restart at every run", async () => {
  const draw = () => [Math.random(), crypto.randomUUID(), crypto.randomBytes(4).toString("hex")];
  vclock.begin();
  const first = draw();
  vclock.end();
  vclock.begin();
  const second = draw();
  vclock.end();
  assert.deepEqual(first, second);
  assert.match(first[1], /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

test("outside a run the real timers are used", async () => {
  // The clocks stay virtual (at the last run's time); the wall clock is vclock.real's.
  const t0 = vclock.real.Date.now();
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.ok(vclock.real.Date.now() - t0 >= 4, "a real 5 ms timeout takes real time");
  assert.throws(() => vclock.hold(10), /outside a run/);
});
