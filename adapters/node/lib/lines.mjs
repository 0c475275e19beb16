// Newline-framed text on file descriptors, blocking: the one framing of wakesim's line protocols in
// JavaScript, shared by the Node adapter (adapters/node/adapter.mjs, docs/protocol.md) and the
// real hosts' drivers (hosts/lib/wire.mjs, docs/remote-host.md). A line is UTF-8 text up to a
// "\n" (which is not part of it); a multi-byte character split across two reads is decoded whole.
// It lives beside the adapter because the adapter's directory is self-contained (it runs from a
// copy of adapters/node, as a fresh clone's is tested); the drivers import it from here.
//
// Reads and writes block the thread on purpose: the loops that use them never yield to Node's
// event loop, so nothing but wakesim moves the code under test forward. A descriptor Node made
// non-blocking (its flags are shared with the parent's pipe end) answers EAGAIN; the call then
// sleeps a millisecond and tries again, never spinning.

import fs from "node:fs";
import { StringDecoder } from "node:string_decoder";

const CHUNK = 1 << 16;

/** Block the thread for `ms` milliseconds (no event loop turn). @param {number} ms */
export function sleepMs(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** @param {unknown} e @returns {string | undefined} */
function codeOf(e) {
  return e instanceof Error && "code" in e && typeof e.code === "string" ? e.code : undefined;
}

/** Lines read from one file descriptor. */
export class LineReader {
  /**
   * @param {number} fd the descriptor to read.
   * @param {() => void} [beforeBlock] called each time the reader is about to block for more
   *   input (the adapter writes its buffered output then: the other side is waiting for it).
   */
  constructor(fd, beforeBlock) {
    this.fd = fd;
    this.beforeBlock = beforeBlock ?? null;
    this.chunk = Buffer.alloc(CHUNK);
    this.decoder = new StringDecoder("utf8");
    this.pending = "";
  }

  /** The next line without its "\n", or null at end of input (an unterminated last line is
   * not a line: the other side closed mid-write).
   * @returns {string | null} */
  read() {
    for (;;) {
      const i = this.pending.indexOf("\n");
      if (i >= 0) {
        const line = this.pending.slice(0, i);
        this.pending = this.pending.slice(i + 1);
        return line;
      }
      if (this.beforeBlock !== null) this.beforeBlock();
      let n;
      try {
        n = fs.readSync(this.fd, this.chunk, 0, this.chunk.length, null);
      } catch (e) {
        const code = codeOf(e);
        if (code === "EAGAIN") {
          sleepMs(1);
          continue;
        }
        if (code === "EOF") n = 0;
        else throw e;
      }
      if (n === 0) return null;
      this.pending += this.decoder.write(this.chunk.subarray(0, n));
    }
  }
}

/** Write all of `text` to `fd`, however many writes it takes.
 * @param {number} fd @param {string} text */
export function writeAll(fd, text) {
  /** @type {Buffer | null} */
  let buf = null;
  for (;;) {
    try {
      if (buf === null) {
        // The common case: one write of the string, no Buffer made.
        const n = fs.writeSync(fd, text);
        if (n === Buffer.byteLength(text)) return;
        buf = Buffer.from(text, "utf8").subarray(n);
      } else {
        buf = buf.subarray(fs.writeSync(fd, buf));
      }
      if (buf.length === 0) return;
    } catch (e) {
      if (codeOf(e) !== "EAGAIN") throw e;
      buf ??= Buffer.from(text, "utf8");
      sleepMs(1);
    }
  }
}
