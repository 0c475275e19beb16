// The real pi driver's reading of message content (hosts/pi/content.mjs) and its narration of the
// wake logic's sends (hosts/pi/instrument.mjs), without pi: the producer ids a piece of content
// carries (`m` markers in order, a fake peer's tags only when bound, each tag's id once), the
// names the narration gives ids and sources, a user message's text, the entry that splits a tool
// call from its result (and the cases that are no split), and the sendMessage/sendUserMessage
// lines the traces hold, byte for byte.
import { test } from "node:test";
import assert from "node:assert/strict";
import { carried, interleaved, names, sourceName, userText } from "../../hosts/pi/content.mjs";
import { sendMessageNote, sendUserMessageNote } from "../../hosts/pi/instrument.mjs";

test("carried: m markers in order, bound peer tags once, anything else ignored", () => {
  const none = new Map();
  assert.deepEqual(carried("done [wakesim m3] and [wakesim m1]", none), [2, 0]);
  // An m marker counts each time it appears (the checkers see a duplicate as such).
  assert.deepEqual(carried("[wakesim m2] [wakesim m2]", none), [1, 1]);
  // A peer's tag counts only once bound, and its id once however often it appears.
  const tags = new Map([["job7", 4]]);
  assert.deepEqual(carried("[wakesim job7] [wakesim job7] [wakesim job8]", tags), [4]);
  assert.deepEqual(carried("[wakesim job7]", none), []);
  assert.deepEqual(carried("[wakesim M1] [wakesim m] wakesim m1", none), []);
  // Anything but a string is read as its JSON text.
  assert.deepEqual(carried([{ type: "text", text: "[wakesim m5]" }], none), [4]);
});

test("names and sourceName are the narration's", () => {
  assert.equal(names([0, 2]), "m1 m3");
  assert.equal(names([]), "");
  assert.equal(sourceName("orchestrator", 3), "orchestrator");
  assert.equal(sourceName("completion", 0), "subagent a");
  assert.equal(sourceName("notification", 27), "subagent b");
});

test("userText: a string, or the text parts joined; nothing else", () => {
  assert.equal(userText({ content: "hi" }), "hi");
  assert.equal(userText({ content: [{ type: "text", text: "a" }, { type: "image" }, { type: "text", text: "b" }] }), "ab");
  assert.equal(userText({ content: { text: "x" } }), "");
});

test("interleaved: the entry between a tool call and its result, only when the result follows", () => {
  const call = { role: "assistant", content: [{ type: "toolCall", id: "c1" }] };
  const result = { role: "toolResult", toolCallId: "c1" };
  const wake = { role: "custom", content: "[wakesim m1]" };
  assert.equal(interleaved([call, wake, result]), wake);
  // In order, or a call whose result never came: no split.
  assert.equal(interleaved([call, result, wake]), null);
  assert.equal(interleaved([call, wake]), null);
  // Two calls: the first result closes one, the entry before the second's result splits it.
  const two = { role: "assistant", content: [{ type: "toolCall", id: "a" }, { type: "toolCall", id: "b" }] };
  const ra = { role: "toolResult", toolCallId: "a" };
  const rb = { role: "toolResult", toolCallId: "b" };
  assert.equal(interleaved([two, ra, wake, rb]), wake);
  assert.equal(interleaved([two, ra, rb, wake]), null);
  assert.equal(interleaved([{ role: "assistant", content: "text" }, wake]), null);
});

test("the sendMessage narration: what it carries, else its custom type, and the options it names", () => {
  assert.equal(sendMessageNote([0, 1], {}, { deliverAs: "steer", triggerTurn: true }), "sendMessage(m1 m2, {deliverAs: steer, triggerTurn: true})");
  assert.equal(sendMessageNote([], { customType: "status" }, { triggerTurn: false }), "sendMessage(status, {triggerTurn: false})");
  assert.equal(sendMessageNote([], undefined, undefined), "sendMessage(a message)");
  assert.equal(sendMessageNote([2], {}, {}), "sendMessage(m3)");
});

test("the sendUserMessage narration: what it carries, else its text, and the prompt it becomes", () => {
  assert.equal(sendUserMessageNote([0], "x", { deliverAs: "followUp" }, 3), "sendUserMessage(m1, {deliverAs: followUp}) = P3");
  assert.equal(sendUserMessageNote([], "go on", undefined, 1), 'sendUserMessage("go on") = P1');
  assert.equal(sendUserMessageNote([], [{ type: "text", text: "y" }], {}, 2), 'sendUserMessage("…") = P2');
});
