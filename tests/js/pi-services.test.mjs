// The services the real pi driver provides pi (hosts/pi/services.mjs), without pi and without
// wakesim: every bound is degenerate (min = max), so no draw goes to the wire, and the driver's
// context is a stand-in that records observations, narration and sleeps. What is checked: the
// scripted model's replies (the drawn tool-calling turns first, then text; a retryable error
// when `retries` fires, after the tool turns only; the harness marker seen in the system
// prompt; a split tool call observed), the events of each reply kind as pi's stream carries
// them, the probe's input handler (claims the prompt when the fault fires, else continues after
// a step delay), the harness marker before_agent_start adds, the before-settle boundary only
// when its fault is on, and the auth check failing when `auth_error` fires.
import { test } from "node:test";
import assert from "node:assert/strict";
import { replyEvents, scriptedModel, services } from "../../hosts/pi/services.mjs";
import { carried } from "../../hosts/pi/content.mjs";

const TIMING = {
  model_ms: { min: 30, max: 30 },
  handler_ms: { min: 2, max: 2 },
  step_ms: { min: 1, max: 1 },
  tool_ms: { min: 7, max: 7 },
  tool_turns: { min: 1, max: 1 },
  retry_ms: { min: 1000, max: 1000 },
};

/** A stand-in for the driver (driver.mjs `cx`) over pi 0.99's shape; `firing`: faults that fire. */
function driver({ firing = [], on = [] } = {}) {
  const seen = { obs: [], notes: [], sleeps: [], fired: [] };
  const run = { requests: 0, toolsLeft: 0, toolsByRun: new Map(), tags: new Map(), faults: new Map() };
  const pushed = [];
  const cx = {
    F: { runs: "run-agent-prompt", images: true },
    OLD: false,
    REGISTRY: false,
    scenario: { timing: TIMING },
    piAi: {
      createAssistantMessageEventStream: () => {
        const events = [];
        pushed.push(events);
        return { push: (e) => events.push(e), end: () => events.push("end") };
      },
      getCurrentSystemPrompt: (messages) => messages[0].content,
    },
    modelRuntime: {},
    modelRegistry: null,
    als: { getStore: () => undefined },
    R: () => run,
    t: () => 0,
    sleep: (ms) => {
      seen.sleeps.push(ms);
      return Promise.resolve();
    },
    obs: (ev, fields) => seen.obs.push([ev, fields]),
    note: (text, actor) => seen.notes.push([actor, text]),
    mark: () => {},
    fires: (name) => {
      seen.fired.push(name);
      return firing.includes(name);
    },
    faultOn: (name) => (on.includes(name) ? {} : null),
    carried: (content) => carried(content, run.tags),
    drawToolTurns: (r) => svc.drawToolTurns(r),
  };
  const svc = services(cx);
  return { cx, svc, seen, run, pushed };
}

/** A fake extension API: the handlers and tools registered on it. */
function fakePi() {
  const on = [];
  const tools = [];
  return { on, tools, api: { on: (ev, fn) => on.push([ev, fn]), registerTool: (t) => tools.push(t) } };
}

const tick = () => new Promise((r) => setImmediate(r));

test("the scripted model: the drawn tool turns, then text; the harness marker is observed", async () => {
  const { svc, cx, seen, run, pushed } = driver();
  svc.runtime();
  svc.drawToolTurns();
  assert.equal(run.toolsLeft, 1);
  const model = scriptedModel();
  const context = { messages: [{ role: "system", content: "you are\n[wakesim harness]" }] };
  cx.modelRuntime.streamSimple(model, context, {});
  cx.modelRuntime.streamSimple(model, context, {});
  await tick();
  assert.deepEqual(seen.sleeps, [30, 30]);
  assert.deepEqual(seen.obs, [
    ["request", { req: 1, harness: true }],
    ["request", { req: 2, harness: true }],
  ]);
  // The first reply is the tool call; the second, after the tool turns, is text (and it is
  // where `retries` is asked).
  assert.deepEqual(pushed[0].map((e) => e.type ?? e), ["start", "toolcall_start", "toolcall_end", "done", "end"]);
  assert.deepEqual(pushed[1].map((e) => e.type ?? e), ["start", "text_start", "text_delta", "text_end", "done", "end"]);
  assert.deepEqual(seen.fired, ["retries"]);
});

test("the scripted model: a retryable error when `retries` fires; a split tool call is observed", async () => {
  const { svc, cx, seen, pushed } = driver({ firing: ["retries"] });
  svc.runtime();
  const call = { role: "assistant", content: [{ type: "toolCall", id: "c" }] };
  const context = {
    messages: [{ role: "system", content: "plain" }, call, { role: "custom", content: "[wakesim m4]" }, { role: "toolResult", toolCallId: "c" }],
  };
  cx.modelRuntime.streamSimple(scriptedModel(), context, {});
  await tick();
  assert.deepEqual(seen.obs, [
    ["request", { req: 1, harness: false }],
    ["interleaved", { req: 1, msg: 3 }],
  ]);
  assert.deepEqual(pushed[0].map((e) => e.type ?? e), ["start", "error", "end"]);
  assert.match(pushed[0][1].error.errorMessage, /529 overloaded_error/);
});

test("replyEvents: each kind's events and the tool call's id", () => {
  const [, , end, done] = replyEvents("toolUse", { role: "assistant" }, 5);
  assert.deepEqual(end.toolCall, { type: "toolCall", id: "call_5", name: "wakesim_tool", arguments: {} });
  assert.equal(done.message.stopReason, "toolUse");
  const text = replyEvents("stop", { role: "assistant" }, 1);
  assert.equal(text.at(-1).message.content[0].text, "ok");
  assert.equal(replyEvents("error", {}, 1)[1].error.stopReason, "error");
});

test("the probe: the input handler claims the prompt when its fault fires, else continues", async () => {
  const claimed = driver({ firing: ["input_swallows_prompt"] });
  const pi = fakePi();
  claimed.svc.probe(pi.api);
  const input = pi.on.find(([ev]) => ev === "input")[1];
  assert.deepEqual(await input(), { action: "handled" });
  assert.deepEqual(claimed.seen.notes, [["fault", "prompt claimed by an input handler (fault): no run, no event"]]);
  assert.deepEqual(claimed.seen.sleeps, []);

  const passed = driver();
  const pi2 = fakePi();
  passed.svc.probe(pi2.api);
  assert.deepEqual(await pi2.on.find(([ev]) => ev === "input")[1](), { action: "continue" });
  assert.deepEqual(passed.seen.sleeps, [1]);
  // The events the probe awaits, in registration order; no before-settle boundary (its fault is off).
  assert.deepEqual(
    pi2.on.map(([ev]) => ev),
    ["input", "before_agent_start", "agent_start", "turn_end", "agent_end", "agent_settled"]
  );
  const start = pi2.on.find(([ev]) => ev === "before_agent_start")[1];
  assert.deepEqual(await start({ systemPrompt: "sys" }), { systemPrompt: "sys\n[wakesim harness]" });
  assert.equal(pi2.tools[0].name, "wakesim_tool");
});

test("the probe: the before-settle boundary asks for a continue only when `extra_continues` fires", async () => {
  const d = driver({ on: ["extra_continues"], firing: ["extra_continues"] });
  const pi = fakePi();
  d.svc.probe(pi.api);
  const boundary = pi.on.find(([ev]) => ev === "agent_before_settle")[1];
  const r = await boundary({ entries: [{ type: "x" }] });
  assert.equal(r.continue, true);
  assert.deepEqual(r.entries.map((e) => e.type), ["x", "custom_message"]);
  const quiet = driver({ on: ["extra_continues"] });
  const pi2 = fakePi();
  quiet.svc.probe(pi2.api);
  assert.equal(await pi2.on.find(([ev]) => ev === "agent_before_settle")[1]({}), undefined);
});

test("the auth check fails when `auth_error` fires, after its await", async () => {
  const failing = driver({ firing: ["auth_error"] });
  failing.svc.runtime();
  assert.equal(await failing.cx.modelRuntime.checkAuth(), undefined);
  assert.deepEqual(failing.seen.sleeps, [1]);
  const ok = driver();
  ok.svc.runtime();
  assert.deepEqual(await ok.cx.modelRuntime.checkAuth(), { type: "api_key", source: "wakesim" });
  // pi 0.99 (`run-agent-prompt`): the compaction check's await follows inside the service.
  assert.deepEqual(ok.seen.sleeps, [1, 1]);
});
