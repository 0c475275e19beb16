// G4: gentle-agents' upstream delivery (Gentleman-Programming/gentle-shell extensions/gentle-agents.ts,
// #1631, hardened by T1-T3 in #1639/#1640), written as the extension does it, on the claude-bridge
// path (the wake is sendUserMessage(text, {deliverAs: "steer"})), with the switches wakesim's
// built-in variants have:
//
// - `t2: false` drops the hold re-check and the flush after session_tree (pi.gentle-pre-t2);
// - `t3: false` drops the input grace window (pi.gentle-pre-t3);
// - `fixed: true` applies wakesim's fixes for the gaps it found (pi.gentle-fixed): a wake prompt
//   that never started a run is owed again when its window expires; a compaction inside a user
//   prompt's preparation reopens the input window; a user prompt at input holds the window for
//   as long as our own wake prompt would (30 s, until its before_agent_start), and so does a
//   steer typed within 2 s of the end of a run (it may go on as a prompt); our own wake prompt is
//   withdrawn at input while a user prompt is on its way, and claims itself at input when a run
//   started since it was sent and nothing was stored since (pi ran it after a user's prompt
//   deferred ahead of it: nothing is left to deliver); a window that expires while the host
//   compacts (a prompt's step 9) stays open; a new orchestrator message queues behind held ones;
//   what is held at session_start goes into the new session instead of being forgotten.
//
// Routing: "idle" when ctx.isIdle() (store the content with triggerTurn false and owe one wake),
// "run" while a run is active (steer/followUp with triggerTurn), "hold" when busy without a run
// (compaction, /tree): content stays queued until session_compact, session_tree or a re-check.
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";

export const PARENT_WAKE_GRACE_MS = 30_000;
export const HOLD_RECHECK_MS = 1_000;
export const INPUT_PROMPT_GRACE_MS = 2_000;

type Route = "idle" | "run" | "hold";
type Message = { customType: string; content: string; details?: { kind?: string } };
type Timer = ReturnType<typeof setTimeout>;

export interface GentleOptions {
  t2?: boolean;
  t3?: boolean;
  fixed?: boolean;
}

class StaleOrMissingCtx extends Error {}

export function createGentleAgents(pi: ExtensionAPI, options: GentleOptions = {}) {
  const t2 = options.t2 ?? true;
  const t3 = options.t3 ?? true;
  const fixed = options.fixed ?? false;

  let wakeInFlight = false;
  let userPromptPending = false;
  // Until when that user prompt is expected to reach before_agent_start (fixed only).
  let userPromptUntil: number | undefined;
  // That user input was a steer typed while streaming (agent_settled decides its fate).
  let userPromptSteer = false;
  let windowUntil: number | undefined;
  let activeRuns = 0;
  let parentRunActive = false;
  let wakeOwed = false;
  // Content was stored (sent without a turn) since the last run started (fixed only).
  let storedSinceRun = false;
  let wakeQueued = false;
  let promptStarting = false;
  let parentCtx: ExtensionContext | undefined;
  let completions: Message[] = [];
  let messages: Message[] = [];
  let heldOrchestrator: Message[] = [];
  let completionsMaybePending = false;
  let promptGrace: Timer | undefined;
  let boundaryFlush: Timer | undefined;
  let holdRecheck: Timer | undefined;
  let wakeNonce = 0;

  function route(): Route {
    if (!parentCtx) throw new StaleOrMissingCtx("no parent ctx yet");
    if (parentCtx.isIdle()) {
      parentRunActive = false;
      return "idle";
    }
    return parentRunActive ? "run" : "hold";
  }

  function tryRoute(): Route | undefined {
    try {
      return route();
    } catch {
      return undefined;
    }
  }

  // A user prompt is on its way to before_agent_start for `ms` more at least (never less).
  function expectUserPrompt(ms: number) {
    const until = Date.now() + ms;
    userPromptPending = true;
    userPromptUntil = userPromptUntil === undefined ? until : Math.max(userPromptUntil, until);
  }

  function userPromptExpected() {
    return userPromptPending && userPromptUntil !== undefined && Date.now() < userPromptUntil;
  }

  // Keep the start window open until at least `until` (never shortening it).
  function holdWindowUntil(until: number) {
    if (windowUntil === undefined || windowUntil < until) beginPromptStart(until - Date.now());
  }

  function forgetUserPrompt() {
    userPromptPending = false;
    userPromptUntil = undefined;
    userPromptSteer = false;
  }

  function beginPromptStart(graceMs: number) {
    endPromptStart();
    promptStarting = true;
    windowUntil = Date.now() + graceMs;
    promptGrace = setTimeout(onPromptGraceExpired, graceMs);
  }

  function endPromptStart() {
    promptStarting = false;
    windowUntil = undefined;
    if (promptGrace !== undefined) {
      clearTimeout(promptGrace);
      promptGrace = undefined;
    }
  }

  function onPromptGraceExpired() {
    promptGrace = undefined;
    if (fixed && (wakeInFlight || userPromptPending) && tryRoute() === "hold") {
      // The prompt we wait for may be compacting at its step 9: keep the window, re-check
      // every second; session_compact reopens it.
      beginPromptStart(HOLD_RECHECK_MS);
      return;
    }
    promptStarting = false;
    windowUntil = undefined;
    if (fixed && wakeInFlight) {
      // Our wake prompt never started a run: the content it was for is stored but in no request.
      wakeInFlight = false;
      wakeOwed = true;
    }
    requestWake();
  }

  function requestWake() {
    if (!wakeOwed || wakeQueued || promptStarting) return;
    wakeQueued = true;
    // All wakes of one synchronous delivery pass coalesce into one dispatch.
    queueMicrotask(dispatchWake);
  }

  function dispatchWake() {
    wakeQueued = false;
    if (!wakeOwed || promptStarting) return;
    const r = tryRoute();
    if (r === undefined) return;
    if (r === "hold") armHoldRecheck();
    if (r !== "idle") return;
    wakeOwed = false;
    beginPromptStart(PARENT_WAKE_GRACE_MS);
    wakeInFlight = true;
    wakeNonce += 1;
    // The bridge wake text names a nonce; it repeats none of the content.
    pi.sendUserMessage(`[gentle-agents wake ${wakeNonce}]`, { deliverAs: "steer" });
  }

  function hasHeldContent() {
    return (
      heldOrchestrator.length > 0 ||
      wakeOwed ||
      completionsMaybePending ||
      messages.length > 0 ||
      completions.length > 0
    );
  }

  function armHoldRecheck() {
    if (!t2 || holdRecheck !== undefined || !hasHeldContent()) return;
    holdRecheck = setTimeout(() => {
      holdRecheck = undefined;
      flushAll();
    }, HOLD_RECHECK_MS);
  }

  function stopHoldRecheck() {
    if (holdRecheck !== undefined) {
      clearTimeout(holdRecheck);
      holdRecheck = undefined;
    }
  }

  // The route for a flush, or undefined when content must stay held (or the ctx is stale).
  function deliveryRoute(): Route | undefined {
    const r = tryRoute();
    if (r === "hold") {
      armHoldRecheck();
      return undefined;
    }
    if (r !== undefined) stopHoldRecheck();
    return r;
  }

  function sendToParent(message: Message, r: Route, runMode: "steer" | "followUp") {
    if (r === "run") {
      pi.sendMessage(message, { deliverAs: runMode, triggerTurn: true });
    } else {
      pi.sendMessage(message, { triggerTurn: false });
      storedSinceRun = true;
      wakeOwed = true;
      requestWake();
    }
  }

  function flushOrchestrator() {
    if (heldOrchestrator.length === 0) return;
    const r = deliveryRoute();
    if (r === undefined) return;
    const held = heldOrchestrator;
    heldOrchestrator = [];
    for (const m of held) sendToParent(m, r, "followUp");
  }

  function flushMessages() {
    if (messages.length === 0) return;
    const r = deliveryRoute();
    if (r === undefined) return;
    while (messages.length > 0) sendToParent(messages.shift()!, r, "steer");
  }

  function flushCompletions() {
    if (completions.length === 0) {
      completionsMaybePending = false;
      return;
    }
    const r = deliveryRoute();
    if (r === undefined) return;
    while (completions.length > 0) sendToParent(completions.shift()!, r, "steer");
    completionsMaybePending = false;
  }

  function flushAll() {
    flushOrchestrator();
    flushMessages();
    flushCompletions();
    requestWake();
  }

  function scheduleBoundaryFlush() {
    if (boundaryFlush === undefined) {
      boundaryFlush = setTimeout(() => {
        boundaryFlush = undefined;
        flushAll();
      }, 0);
    }
  }

  pi.on("session_start", (_event, ctx: ExtensionContext) => {
    if (!fixed) {
      // Upstream forgets what it still holds: it never reached pi, so it is lost.
      completions = [];
      messages = [];
      heldOrchestrator = [];
      completionsMaybePending = false;
    }
    parentCtx = ctx;
    parentRunActive = false;
    // A wake owed for the old session was for content pi dropped with it.
    wakeOwed = false;
    storedSinceRun = false;
    wakeInFlight = false;
    forgetUserPrompt();
    endPromptStart();
    stopHoldRecheck();
    if (boundaryFlush !== undefined) {
      clearTimeout(boundaryFlush);
      boundaryFlush = undefined;
    }
    // wakesim's fix 7: what is held goes into the new session.
    if (fixed) flushAll();
  });

  pi.on("before_agent_start", () => {
    forgetUserPrompt();
    if (!parentRunActive) beginPromptStart(PARENT_WAKE_GRACE_MS);
  });

  pi.on("agent_start", () => {
    activeRuns += 1;
    parentRunActive = true;
    wakeOwed = false;
    storedSinceRun = false;
    wakeInFlight = false;
    // A steer typed into this run is not this run's prompt: agent_settled decides about it.
    if (!userPromptSteer) forgetUserPrompt();
    endPromptStart();
  });

  pi.on("agent_end", () => {
    activeRuns = Math.max(0, activeRuns - 1);
    flushAll();
  });

  pi.on("agent_settled", () => {
    parentRunActive = false;
    wakeInFlight = false;
    endPromptStart();
    if (fixed && userPromptExpected()) {
      // A steer typed during the run may go on as a full prompt now (or was queued: pi tells
      // neither): expect it as any user prompt.
      expectUserPrompt(PARENT_WAKE_GRACE_MS);
      userPromptSteer = false;
      holdWindowUntil(userPromptUntil!);
    } else if (fixed) {
      forgetUserPrompt();
    }
    flushAll();
  });

  pi.on("turn_end", () => flushAll());

  const onCompact = () => {
    const renewBy = Date.now() + INPUT_PROMPT_GRACE_MS;
    if (fixed && (userPromptPending || wakeInFlight) && !parentRunActive && (windowUntil === undefined || windowUntil < renewBy)) {
      // A compaction inside the user's prompt or our own wake prompt (step 9) can outlast its
      // window.
      if (userPromptPending) expectUserPrompt(INPUT_PROMPT_GRACE_MS);
      beginPromptStart(INPUT_PROMPT_GRACE_MS);
    }
    scheduleBoundaryFlush();
  };
  pi.on("session_compact", onCompact);
  pi.on("session_compact_failed", onCompact);

  pi.on("session_tree", () => {
    if (t2) scheduleBoundaryFlush();
  });

  pi.on("input", (event: { source: string; streamingBehavior?: string }) => {
    const fromUser = event.source === "interactive";
    if (fixed && fromUser) {
      if (event.streamingBehavior !== undefined || parentRunActive) {
        // A steer typed while streaming: queued at its step 5 unless the run settles first.
        expectUserPrompt(INPUT_PROMPT_GRACE_MS);
        userPromptSteer = true;
        return { action: "continue" };
      }
      // A user prompt on its way to before_agent_start: no wake of ours while it is expected,
      // as long as our own wake prompt would be (it may die silently at input or auth).
      expectUserPrompt(PARENT_WAKE_GRACE_MS);
      userPromptSteer = false;
      holdWindowUntil(userPromptUntil!);
      return { action: "continue" };
    } else if (fixed && wakeInFlight && userPromptExpected()) {
      // Our own wake prompt reached input while a user prompt (deferred during agent_settled,
      // invisible until then) is on its way to before_agent_start: the two would race to
      // Agent.prompt. The content is stored and rides the user's run; withdraw the wake, and owe
      // it again if that prompt dies too.
      wakeInFlight = false;
      wakeOwed = true;
      beginPromptStart(userPromptUntil! - Date.now());
      return { action: "handled" };
    } else if (fixed && !fromUser && !storedSinceRun) {
      // Our own wake prompt reached input with nothing stored since the last run started: a run
      // started since it was sent (pi ran the user's prompt deferred ahead of it first) and
      // carried the content, so a turn now would deliver nothing. Claim it. (A wake owed or in
      // flight always has content stored since.)
      return { action: "handled" };
    }
    if (event.streamingBehavior !== undefined || parentRunActive) return { action: "continue" };
    // T3 never shortens an open window.
    if (t3 && !promptStarting) beginPromptStart(INPUT_PROMPT_GRACE_MS);
    return { action: "continue" };
  });

  // The extension's own transports: orchestrator messages, subagent notifications, completions.
  return (message: Message): void => {
    const kind = message.details?.kind;
    if (kind === "orchestrator") {
      if (fixed && heldOrchestrator.length > 0) {
        // Held ones go first: queue behind them and flush in order.
        heldOrchestrator.push(message);
        flushOrchestrator();
        return;
      }
      const r = tryRoute();
      if (r === undefined || r === "hold") {
        heldOrchestrator.push(message);
        armHoldRecheck();
      } else {
        stopHoldRecheck();
        sendToParent(message, r, "followUp");
      }
    } else if (kind === "notification") {
      messages.push(message);
      if (activeRuns === 0) flushMessages();
    } else {
      completions.push(message);
      completionsMaybePending = true;
      if (activeRuns === 0) flushAll();
    }
  };
}
