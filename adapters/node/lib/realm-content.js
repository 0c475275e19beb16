// The realm's reading of what a module sends and throws (a part of the realm prelude, realm.js;
// evaluated in the module's vm context by realm-load.mjs): the producer ids a send carries, the
// text a sendUserMessage shows, the `deliverAs` a send names, and how an error or a console line
// is written. Pure functions, no state of a run: the realm has no `Buffer` or `TextEncoder`, so
// UTF-8 is counted by hand.

/**
 * @typedef {object} RealmContent
 * @property {(x: unknown) => number[]} carriesOf
 * @property {(content: unknown) => string | null} userTextOf
 * @property {(text: string, max: number) => string} cutText
 * @property {(options: {deliverAs?: unknown} | null | undefined, fn: string) => string | null} deliverAsOf
 * @property {(e: any) => string} describeError
 * @property {(args: unknown[]) => string} format
 */

(/** @returns {RealmContent} */ function wakesimRealmContent() {
  "use strict";

  // Producer messages are marked "[wakesim mN]" in their text; whatever a logic sends carries
  // the markers it contains, however it wraps or joins them.
  const MARKER = /\[wakesim m(\d+)\]/g;

  /** The producer ids `x` carries, each once, in the order their markers appear.
   * @param {unknown} x @returns {number[]} */
  function carriesOf(x) {
    let text;
    if (typeof x === "string") {
      text = x;
    } else {
      try {
        text = JSON.stringify(x);
      } catch {
        text = String(x && /** @type {{content?: unknown}} */ (x).content);
      }
    }
    if (typeof text !== "string" || text.indexOf("[wakesim m") < 0) return [];
    /** @type {number[]} */
    const ids = [];
    for (const m of text.matchAll(MARKER)) {
      const id = Number(m[1]) - 1;
      if (id >= 0 && !ids.includes(id)) ids.push(id);
    }
    return ids;
  }

  // The text a sendUserMessage shows on the timeline, at most this many UTF-8 bytes, ellipsis
  // included: the simulator's bound (`USER_MESSAGE_TEXT_BYTES_MAX`, src/limits.rs), applied here
  // too so a long text is not written whole only to be cut.
  const USER_TEXT_BYTES_MAX = 200;
  const ELLIPSIS = "\u2026";

  /** What a sendUserMessage's content says as text: a string itself, a list of content parts
   * its text parts joined by newlines; null for anything else (the timeline shows what it carries).
   * @param {unknown} content @returns {string | null} */
  function userTextOf(content) {
    let text;
    if (typeof content === "string") {
      text = content;
    } else if (Array.isArray(content)) {
      const parts = content.filter((p) => p && p.type === "text" && typeof p.text === "string");
      if (parts.length === 0) return null;
      text = parts.map((p) => p.text).join("\n");
    } else {
      return null;
    }
    // A lone surrogate is no UTF-8 (nor JSON the simulator reads): written as U+FFFD.
    // (`toWellFormed()` is ES2024; the type check is against ES2023.)
    return cutText(text.replace(/\p{Cs}/gu, "\uFFFD"), USER_TEXT_BYTES_MAX);
  }

  /** UTF-8 bytes of one code point (a lone surrogate is written as U+FFFD, three bytes).
   * @param {string} ch @returns {number} */
  function utf8Bytes(ch) {
    const c = /** @type {number} */ (ch.codePointAt(0));
    return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }

  /** `text` in at most `max` UTF-8 bytes: whole if it fits, else cut at a character boundary so
   * that with the ellipsis it fits (the simulator's cut, which leaves this one as it is). Counted
   * by hand: the realm has no `Buffer` or `TextEncoder`.
   * @param {string} text @param {number} max @returns {string} */
  function cutText(text, max) {
    const room = max - 3; // the ellipsis is three bytes
    let used = 0;
    let cut = -1;
    let i = 0;
    for (const ch of text) {
      used += utf8Bytes(ch);
      if (cut < 0 && used > room) cut = i;
      if (used > max) return text.slice(0, cut) + ELLIPSIS;
      i += ch.length;
    }
    return text;
  }

  const DELIVER_AS = new Set(["steer", "followUp", "nextTurn"]);

  /** The `deliverAs` a send names, or null; a value pi does not take is the module's error.
   * @param {{deliverAs?: unknown} | null | undefined} options @param {string} fn
   * @returns {string | null} */
  function deliverAsOf(options, fn) {
    const d = options == null ? undefined : options.deliverAs;
    if (d === undefined || d === null) return null;
    if (typeof d !== "string" || !DELIVER_AS.has(d)) {
      throw new TypeError(`${fn}: deliverAs must be "steer", "followUp" or "nextTurn", not ${JSON.stringify(d)}`);
    }
    return d;
  }

  /** An error as `done` reports it: its message lines and the module's first three frames (the
   * realm's, the adapter's and Node's own say nothing about the module).
   * @param {any} e @returns {string} */
  function describeError(e) {
    if (e && typeof e.stack === "string") {
      const lines = e.stack.split("\n");
      const head = lines.filter((/** @type {string} */ l) => !/^\s+at /.test(l));
      const frames = lines.filter((/** @type {string} */ l) => /^\s+at /.test(l) && !/wakesim-(realm|adapter)/.test(l) && !/node:/.test(l));
      return head.concat(frames.slice(0, 3)).join("\n");
    }
    return String(e);
  }

  /** A console line: strings as they are, anything else as JSON (or String when JSON fails).
   * @param {unknown[]} args @returns {string} */
  function format(args) {
    return args
      .map((a) => {
        if (typeof a === "string") return a;
        try {
          return JSON.stringify(a);
        } catch {
          return String(a);
        }
      })
      .join(" ");
  }

  return { carriesOf, userTextOf, cutText, deliverAsOf, describeError, format };
});
