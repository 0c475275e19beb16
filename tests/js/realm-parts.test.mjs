// The Node adapter's realm prelude parts on their own, each evaluated in a fresh vm context as
// the adapter evaluates it (adapters/node/lib/realm-load.mjs `evaluate`):
//   - realm-content.js: the producer ids a send carries (each once, in order), a
//     sendUserMessage's text (text parts joined, lone surrogates replaced, cut at 200 UTF-8
//     bytes with the ellipsis on a character boundary), `deliverAs` checked, an error's frames
//     without the prelude's, console lines;
//   - realm-clock.js, over a stand-in run state: Date and performance read the virtual clock;
//     a timer is a `set_timeout` call, cleared by `clear_timeout` (by object or by id), fired once
//     by `fire` (an interval re-armed under a new id); a microtask is a call fired the same way;
//     Node's delay rules; Math.random's sequence is a function of the run's state alone.
import { test } from "node:test";
import assert from "node:assert/strict";
import vm from "node:vm";
import { evaluate } from "../../adapters/node/lib/realm-load.mjs";

const EPOCH_MS = 1767225600000;

/** A value made in the realm as this realm's (its arrays and objects have the realm's
 * prototypes, which a strict deep comparison tells apart). */
const plain = (x) => JSON.parse(JSON.stringify(x));

function content() {
  return evaluate(vm.createContext({}), "realm-content.js")();
}

/** The clock over a stand-in run state; `calls` are what it writes to the simulator. */
function clock() {
  const run = { now: 0, timers: new Map(), nextTimerId: 1, rngState: 0x5eed };
  const calls = [];
  const context = vm.createContext({});
  const c = evaluate(context, "realm-clock.js")({ state: () => run, call: (o) => calls.push(o), epochMs: EPOCH_MS });
  return { c, run, calls, context };
}

test("carriesOf: markers in order, each id once, through any wrapping", () => {
  const { carriesOf } = content();
  const plainCarries = (x) => plain(carriesOf(x));
  assert.deepEqual(plainCarries("a [wakesim m3] b [wakesim m1] [wakesim m3]"), [2, 0]);
  assert.deepEqual(plainCarries({ content: [{ text: "[wakesim m2]" }] }), [1]);
  assert.deepEqual(plainCarries("[wakesim m0] nothing"), []);
  const cyclic = { content: "[wakesim m9]" };
  cyclic.self = cyclic;
  // JSON cannot write it: its `content` is read instead.
  assert.deepEqual(plainCarries(cyclic), [8]);
  assert.deepEqual(plainCarries(42), []);
});

test("userTextOf: a string or text parts, cut at 200 UTF-8 bytes on a character boundary", () => {
  const { userTextOf, cutText } = content();
  assert.equal(userTextOf("hi"), "hi");
  assert.equal(userTextOf([{ type: "text", text: "a" }, { type: "image" }, { type: "text", text: "b" }]), "a\nb");
  assert.equal(userTextOf([{ type: "image" }]), null);
  assert.equal(userTextOf({ text: "x" }), null);
  assert.equal(userTextOf("x\ud800y"), "x\ufffdy");
  const exact = "a".repeat(200);
  assert.equal(userTextOf(exact), exact);
  const long = userTextOf("a".repeat(201));
  assert.equal(long, "a".repeat(197) + "\u2026");
  // Three-byte characters: 65 of them and the ellipsis (198 bytes) fit, a 66th would not.
  const cut = cutText("\u20ac".repeat(70), 200);
  assert.equal(cut, "\u20ac".repeat(65) + "\u2026");
  assert.ok(Buffer.byteLength(cut) <= 200);
  // A four-byte character is never split.
  assert.equal(cutText("\u{1F600}".repeat(60), 200), "\u{1F600}".repeat(49) + "\u2026");
});

test("deliverAsOf: pi's three values or none; anything else is the module's error", () => {
  const { deliverAsOf } = content();
  assert.equal(deliverAsOf(undefined, "f"), null);
  assert.equal(deliverAsOf({ deliverAs: null }, "f"), null);
  assert.equal(deliverAsOf({ deliverAs: "followUp" }, "f"), "followUp");
  assert.throws(() => deliverAsOf({ deliverAs: "later" }, "pi.sendMessage"), /pi\.sendMessage: deliverAs must be/);
  // The realm's own TypeError (another realm's class than this file's): checked by name.
  assert.throws(() => deliverAsOf({ deliverAs: 1 }, "f"), (e) => e.name === "TypeError" && /not 1$/.test(e.message));
});

test("describeError: the message and the module's first three frames, not the prelude's", () => {
  const { describeError, format } = content();
  const e = {
    stack: [
      "Error: boom",
      "    at send (wake.ts:3:9)",
      "    at fire (wakesim-realm-clock.js:150:7)",
      "    at a (wake.ts:1:1)",
      "    at dispatch (wakesim-realm.js:560:9)",
      "    at node:internal/x:1:1",
      "    at b (wake.ts:2:2)",
      "    at c (wake.ts:4:4)",
    ].join("\n"),
  };
  assert.equal(describeError(e), "Error: boom\n    at send (wake.ts:3:9)\n    at a (wake.ts:1:1)\n    at b (wake.ts:2:2)");
  assert.equal(describeError("plain"), "plain");
  assert.equal(format(["n =", 1, { a: [2] }, 10n]), 'n = 1 {"a":[2]} 10');
});

test("the clock: Date and performance read virtual time from the epoch", () => {
  const { c, run } = clock();
  run.now = 1500;
  assert.equal(c.VirtualDate.now(), EPOCH_MS + 1500);
  assert.equal(new c.VirtualDate().getTime(), EPOCH_MS + 1500);
  assert.equal(new c.VirtualDate(0).getTime(), 0);
  assert.equal(typeof c.VirtualDate(), "string");
  assert.equal(c.performance.now(), 1500);
  assert.equal(c.performance.timeOrigin, EPOCH_MS);
});

test("the clock: timers are simulator calls, fired once by id; clears by object or id", () => {
  const { c, run, calls } = clock();
  const fired = [];
  const t = c.setTimeout((x) => fired.push(x), 25.9, "a");
  assert.deepEqual(plain(calls), [{ type: "set_timeout", timer: 1, ms: 25 }]);
  assert.equal(+t, 1);
  c.fire(1);
  c.fire(1);
  assert.deepEqual(fired, ["a"]);
  assert.equal(run.timers.size, 0);

  const u = c.setTimeout(() => fired.push("never"), 5);
  c.clearTimeout(u);
  const v = c.setTimeout(() => fired.push("never"), 5);
  c.clearTimeout(Number(v));
  c.clearTimeout(undefined);
  assert.deepEqual(plain(calls.slice(1)), [
    { type: "set_timeout", timer: 2, ms: 5 },
    { type: "clear_timeout", timer: 2 },
    { type: "set_timeout", timer: 3, ms: 5 },
    { type: "clear_timeout", timer: 3 },
  ]);
  c.fire(2);
  assert.deepEqual(fired, ["a"]);
});

test("the clock: an interval re-arms under a new id until cleared; a microtask fires once", () => {
  const { c, calls } = clock();
  let n = 0;
  const iv = c.setInterval(() => {
    n++;
    if (n === 2) c.clearTimeout(iv);
  }, 0);
  c.fire(1);
  c.fire(2);
  c.fire(3);
  assert.equal(n, 2);
  assert.deepEqual(plain(calls), [
    { type: "set_timeout", timer: 1, ms: 1 },
    { type: "set_timeout", timer: 2, ms: 1 },
  ]);
  const seen = [];
  c.queueMicrotask(() => seen.push("micro"));
  assert.deepEqual(plain(calls.at(-1)), { type: "queue_microtask", timer: 3 });
  c.fire(3);
  c.fire(3);
  assert.deepEqual(seen, ["micro"]);
  assert.throws(() => c.setTimeout("code", 1), /setTimeout: the callback must be a function/);
});

test("the clock: Node's delay rules", () => {
  const { c } = clock();
  assert.equal(c.delayOf(-5), 0);
  assert.equal(c.delayOf("12"), 12);
  assert.equal(c.delayOf(NaN), 0);
  assert.equal(c.delayOf(undefined), 0);
  assert.equal(c.delayOf(2 ** 31), 1);
  assert.equal(c.delayOf(2 ** 31 - 1), 2 ** 31 - 1);
});

test("the clock: Math.random's sequence is the run state's alone", () => {
  const a = clock();
  const b = clock();
  const first = [a.c.random(), a.c.random(), a.c.random()];
  assert.deepEqual([b.c.random(), b.c.random(), b.c.random()], first);
  // mulberry32 from the seed 0x5eed, as the textbook function gives it: the recorded runs of
  // every module that draws depend on these values.
  assert.deepEqual(first, [0.7100320369936526, 0.286336648510769, 0.9519026265479624]);
  // A fresh state starts the sequence again.
  a.run.rngState = 0x5eed;
  assert.equal(a.c.random(), first[0]);
  const uuid = a.c.crypto.randomUUID();
  assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const bytes = a.c.crypto.getRandomValues(new Uint8Array(4));
  assert.equal(bytes.length, 4);
});
