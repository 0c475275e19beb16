// The driver's side of the remote-host protocol (docs/remote-host.md): blocking line IO on fds 0
// and 1, and the calls a driver makes. Every `choose` and `produce` blocks until wakesim answers,
// so a draw happens at exactly the point of the host's code that asks for it.

import fs from "node:fs";
import { StringDecoder } from "node:string_decoder";

const chunk = Buffer.alloc(1 << 16);
// Node may have made fd 0 non-blocking (its flags are shared with the parent's pipe end), and a
// poll with sleeps costs a millisecond per answer. A fresh open of the same pipe is a blocking
// file description of its own.
let input = 0;
try {
  input = fs.openSync("/dev/stdin", "r");
} catch {
  input = 0;
}
const decoder = new StringDecoder("utf8");
let pending = "";

function sleepMs(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** The next line from wakesim, or null at end of input. */
export function readLine() {
  for (;;) {
    const i = pending.indexOf("\n");
    if (i >= 0) {
      const line = pending.slice(0, i);
      pending = pending.slice(i + 1);
      return line;
    }
    let n;
    try {
      n = fs.readSync(input, chunk, 0, chunk.length, null);
    } catch (e) {
      if (e.code === "EAGAIN") {
        sleepMs(1);
        continue;
      }
      if (e.code === "EOF") return null;
      throw e;
    }
    if (n === 0) return null;
    pending += decoder.write(chunk.subarray(0, n));
  }
}

export function write(text) {
  let buf = Buffer.from(text, "utf8");
  while (buf.length) {
    try {
      const n = fs.writeSync(1, buf);
      buf = buf.subarray(n);
    } catch (e) {
      if (e.code !== "EAGAIN") throw e;
      sleepMs(1);
    }
  }
}

export function send(obj) {
  write(JSON.stringify(obj) + "\n");
}

/** Read a message; end of input ends the driver quietly (wakesim closed our stdin). */
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

function answer() {
  const m = receive();
  if (m.type !== "value" || !Number.isInteger(m.value)) {
    throw new Error(`expected a value, got ${JSON.stringify(m)}`);
  }
  return m.value;
}

/** A uniform draw in 0..bound (no draw when bound <= 1). */
export function choose(bound, label) {
  if (bound <= 1) return 0;
  send({ type: "choose", label, kind: "choose", bound });
  return answer();
}

/** Which of `bound` things due at one instant goes first. */
export function order(bound, label = "same-instant order") {
  if (bound <= 1) return 0;
  send({ type: "choose", label, kind: "order", bound });
  return answer();
}

/** A delay in lo..=hi, biased to the boundary set. */
export function delay(lo, hi, label) {
  if (hi <= lo) return lo;
  send({ type: "choose", label, kind: "delay", lo, hi });
  return answer();
}

/** When an outside event happens in lo..=hi. */
export function instant(lo, hi, label) {
  if (hi <= lo) return lo;
  send({ type: "choose", label, kind: "instant", lo, hi });
  return answer();
}

/** True with probability num/den; certain outcomes draw nothing. */
export function chance(num, den, label) {
  if (num <= 0) return false;
  if (num >= den) return true;
  send({ type: "choose", label, kind: "chance", num, den });
  return answer() === 1;
}

/** A producer message: wakesim records it and answers its id. */
export function produce(t, kind, source, extra = {}) {
  send({ type: "produce", t, kind, source, ...extra });
  return answer();
}

export function obs(t, actor, state, ev, fields = {}) {
  send({ type: "obs", t, actor, state, ev, ...fields });
}

export function note(t, actor, state, text) {
  send({ type: "note", t, actor, state, text });
}

// `kind` "load": the code under test did not load (bad input: wakesim exits 2, saves nothing).
export function fatal(message, kind) {
  send(kind ? { type: "error", message, kind } : { type: "error", message });
  process.exit(1);
}
