// The driver's side of the remote-host protocol (docs/remote-host.md): blocking line IO on fds 0
// and 1, and the calls a driver makes. Every `choose` and `produce` blocks until wakesim answers,
// so a draw happens at exactly the point of the host's code that asks for it.

import fs from "node:fs";
import { LineReader, writeAll } from "../../adapters/node/lib/lines.mjs";

/** A message of the protocol, decoded. @typedef {Record<string, any>} Msg */

// Node may have made fd 0 non-blocking (its flags are shared with the parent's pipe end), and a
// poll with sleeps costs a millisecond per answer. A fresh open of the same pipe is a blocking
// file description of its own.
let input = 0;
try {
  input = fs.openSync("/dev/stdin", "r");
} catch {
  input = 0;
}
const reader = new LineReader(input);

/** The next line from wakesim, or null at end of input. @returns {string | null} */
export function readLine() {
  return reader.read();
}

/** Write `text` to wakesim (stdout), whole. @param {string} text */
export function write(text) {
  writeAll(1, text);
}

/** @param {Msg} obj */
export function send(obj) {
  write(JSON.stringify(obj) + "\n");
}

/** Read a message; end of input ends the driver quietly (wakesim closed our stdin).
 * @returns {Msg} */
export function receive() {
  const line = readLine();
  if (line === null) {
    // For benchmarks: the driver's own CPU time, which its parent's rusage does not see (wakesim
    // stops the launcher, not this process).
    if (process.env.WAKESIM_DRIVER_CPU_LOG) {
      const u = process.cpuUsage();
      fs.appendFileSync(process.env.WAKESIM_DRIVER_CPU_LOG, `${process.pid} ${(u.user + u.system) / 1e6}\n`);
    }
    process.exit(0);
  }
  return JSON.parse(line);
}

/** @returns {number} */
function answer() {
  const m = receive();
  if (m.type !== "value" || !Number.isInteger(m.value)) {
    throw new Error(`expected a value, got ${JSON.stringify(m)}`);
  }
  return m.value;
}

/** A uniform draw in 0..bound (no draw when bound <= 1).
 * @param {number} bound @param {string} label @returns {number} */
export function choose(bound, label) {
  if (bound <= 1) return 0;
  send({ type: "choose", label, kind: "choose", bound });
  return answer();
}

/** Which of `bound` things due at one instant goes first.
 * @param {number} bound @param {string} [label] @returns {number} */
export function order(bound, label = "same-instant order") {
  if (bound <= 1) return 0;
  send({ type: "choose", label, kind: "order", bound });
  return answer();
}

/** A delay in lo..=hi, biased to the boundary set.
 * @param {number} lo @param {number} hi @param {string} label @returns {number} */
export function delay(lo, hi, label) {
  if (hi <= lo) return lo;
  send({ type: "choose", label, kind: "delay", lo, hi });
  return answer();
}

/** When an outside event happens in lo..=hi.
 * @param {number} lo @param {number} hi @param {string} label @returns {number} */
export function instant(lo, hi, label) {
  if (hi <= lo) return lo;
  send({ type: "choose", label, kind: "instant", lo, hi });
  return answer();
}

/** True with probability num/den; certain outcomes draw nothing.
 * @param {number} num @param {number} den @param {string} label @returns {boolean} */
export function chance(num, den, label) {
  if (num <= 0) return false;
  if (num >= den) return true;
  send({ type: "choose", label, kind: "chance", num, den });
  return answer() === 1;
}

/** A producer message: wakesim records it and answers its id.
 * @param {number} t @param {string} kind @param {number} source @param {Msg} [extra]
 * @returns {number} */
export function produce(t, kind, source, extra = {}) {
  send({ type: "produce", t, kind, source, ...extra });
  return answer();
}

/** An observation (`obs`).
 * @param {number} t @param {string} actor @param {string} state @param {string} ev
 * @param {Msg} [fields] */
export function obs(t, actor, state, ev, fields = {}) {
  send({ type: "obs", t, actor, state, ev, ...fields });
}

/** A narration line (`note`).
 * @param {number} t @param {string} actor @param {string} state @param {string} text */
export function note(t, actor, state, text) {
  send({ type: "note", t, actor, state, text });
}

// `kind` "load": the code under test did not load (bad input: wakesim exits 2, saves nothing).
/** @param {string} message @param {string} [kind] @returns {never} */
export function fatal(message, kind) {
  send(kind ? { type: "error", message, kind } : { type: "error", message });
  process.exit(1);
}
