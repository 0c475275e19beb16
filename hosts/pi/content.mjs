// What pi's messages carry, read by the real pi driver (driver.mjs) and its parts: the producer
// ids a piece of content holds (its `[wakesim m<id+1>]` markers, or a fake peer's tags bound to
// ids), a user message's text, the entry that splits a tool call from its result, and the names
// the narration gives sources and messages. Pure functions of their arguments: the run's state
// they read (a peer's tags) is passed in.

/** pi's messages and their content parts: not typed here. @typedef {any} PiMessage */

// `[wakesim m<id+1>]`, or a fake peer's tag `[wakesim <tag>]` that it bound to an id (peers.mjs).
const MARKER = /\[wakesim ([a-z]+)(\d+)\]/g;

/**
 * The producer ids a piece of content carries, by their markers, in the order they appear: an
 * `m` marker always, a peer's tag when `tags` binds it (each id once).
 * @param {unknown} content a string, or anything JSON can write (its JSON text is read)
 * @param {Map<string, number>} tags a fake peer's tags (`"job7"`) and the ids they stand for
 * @returns {number[]}
 */
export function carried(content, tags) {
  const text = typeof content === "string" ? content : JSON.stringify(content);
  /** @type {number[]} */
  const ids = [];
  for (const m of text.matchAll(MARKER)) {
    if (m[1] === "m") ids.push(Number(m[2]) - 1);
    else {
      const id = tags.get(m[1] + m[2]);
      if (id !== undefined && !ids.includes(id)) ids.push(id);
    }
  }
  return ids;
}

/** How the narration names producer ids: `m1 m3`. @param {number[]} ids @returns {string} */
export function names(ids) {
  return ids.map((i) => `m${i + 1}`).join(" ");
}

/** A user message's text: a string itself, or its text parts joined; "" for anything else.
 * @param {PiMessage} message @returns {string} */
export function userText(message) {
  const c = message.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c)) return c.map((p) => (p && p.type === "text" ? p.text : "")).join("");
  return "";
}

/**
 * The entry of a request's context that sits between a tool call and its result (TOOL-PAIRING),
 * or null: an assistant message's tool calls must be followed by their results before anything
 * else. An entry counts only when a result of one of those calls comes after it (a call whose
 * results never came is a different matter).
 * @param {PiMessage[]} messages @returns {PiMessage | null}
 */
export function interleaved(messages) {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role !== "assistant" || !Array.isArray(m.content)) continue;
    const open = new Set(m.content.filter((/** @type {PiMessage} */ c) => c && c.type === "toolCall").map((/** @type {PiMessage} */ c) => c.id));
    let j = i + 1;
    while (open.size && j < messages.length && messages[j].role === "toolResult") open.delete(messages[j++].toolCallId);
    if (!open.size || j >= messages.length) continue;
    if (messages.slice(j + 1).some((n) => n.role === "toolResult" && open.has(n.toolCallId))) return messages[j];
  }
  return null;
}

/** A producer's name in the narration: the orchestrator, or `subagent a`, `b`, ... by source.
 * @param {string} kind @param {number} source @returns {string} */
export function sourceName(kind, source) {
  return kind === "orchestrator" ? "orchestrator" : `subagent ${String.fromCharCode(97 + (source % 26))}`;
}
