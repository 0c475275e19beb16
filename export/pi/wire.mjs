// The driver's wire, replaying a recorded run: the same calls as the live wire the driver was
// written against (receive, send, choose, order, delay, instant, chance, produce, obs, note,
// fatal), but every decision is answered from the recording (session.json) instead of from a
// process on stdin. What the driver reports (its observations, notes, the end) is written to
// stdout as JSON lines, one object a line, for the test to read.
//
// A decision is the recording's next value, taken in order. When the code under test behaves
// differently from the recorded run (a patched package makes other decisions), the values are
// still taken in order, each clamped into the range asked for, and past the recording's end the
// simplest answer (0, the lower bound, "no") is given: the replay stays deterministic, and the
// first place it left the recording is reported on stderr and in the `end` line.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..", "..");
const sessionFile = process.env.REPRO_SESSION || path.join(root, "session.json");
const session = JSON.parse(fs.readFileSync(sessionFile, "utf8"));

// The recorded `hello`, its paths made absolute under this project.
const hello = structuredClone(session.hello);
if (hello.wake && typeof hello.wake.extension === "string") hello.wake.extension = path.join(root, hello.wake.extension);
const inbox = [hello, { type: "run", run: 1 }];

const draws = session.draws;
let next = 0;
let produced = 0;
let diverged = null;

export function write(text) {
  let buf = Buffer.from(text, "utf8");
  while (buf.length) {
    try {
      buf = buf.subarray(fs.writeSync(1, buf));
    } catch (e) {
      if (e.code !== "EAGAIN") throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
    }
  }
}

export function send(obj) {
  if (obj.type === "end") {
    obj = { ...obj, draws: next, recorded: draws.length, diverged };
  }
  write(JSON.stringify(obj) + "\n");
}

/** The next message for the driver: the recorded hello, one run, then the end of input. */
export function receive() {
  const m = inbox.shift();
  if (m === undefined) process.exit(0);
  return m;
}

function same(a, b) {
  return a.label === b.label && a.kind === b.kind && a.bound === b.bound && a.lo === b.lo && a.hi === b.hi && a.num === b.num && a.den === b.den;
}

/** The recording's answer to a decision, as the driver asks it. */
function answer(ask, lo, hi) {
  const r = draws[next];
  if (r === undefined) {
    if (diverged === null) diverged = { draw: next, asked: ask, recorded: null };
    next++;
    return lo;
  }
  if (diverged === null && !same(ask, r)) {
    diverged = { draw: next, asked: ask, recorded: { ...r } };
    process.stderr.write(`replay: decision ${next + 1} differs from the recording (asked ${JSON.stringify(ask)}, recorded ${JSON.stringify(r)})\n`);
  }
  next++;
  return Math.min(Math.max(r.value, lo), hi);
}

export function choose(bound, label) {
  if (bound <= 1) return 0;
  return answer({ label, kind: "choose", bound }, 0, bound - 1);
}

export function order(bound, label = "same-instant order") {
  if (bound <= 1) return 0;
  return answer({ label, kind: "order", bound }, 0, bound - 1);
}

export function delay(lo, hi, label) {
  if (hi <= lo) return lo;
  return answer({ label, kind: "delay", lo, hi }, lo, hi);
}

export function instant(lo, hi, label) {
  if (hi <= lo) return lo;
  return answer({ label, kind: "instant", lo, hi }, lo, hi);
}

export function chance(num, den, label) {
  if (num <= 0) return false;
  if (num >= den) return true;
  return answer({ label, kind: "chance", num, den }, 0, 1) === 1;
}

/** A producer message: numbered here in the order they are made (m1, m2, ...). */
export function produce(t, kind, source, extra = {}) {
  const id = produced++;
  send({ type: "produce", t, kind, source, ...extra, id });
  return id;
}

export function obs(t, actor, state, ev, fields = {}) {
  send({ type: "obs", t, actor, state, ev, ...fields });
}

export function note(t, actor, state, text) {
  send({ type: "note", t, actor, state, text });
}

export function fatal(message, kind) {
  send(kind ? { type: "error", message, kind } : { type: "error", message });
  process.exit(1);
}
