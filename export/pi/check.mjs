// The delivery invariants a reproducer judges, over what the driver observed of the real host
// (its `produce` and `obs` lines): NO-LOSS, EXACTLY-ONCE, FIFO and BOUNDED-LATENCY, each written
// out in plain words for the report. This file is a port of the checkers of the tool that found
// the run (one ledger of what happened to each message, then one function per invariant); a test
// there runs both on the same recorded run and requires the same verdict.
//
// Input: `events`, in the order the driver wrote them: `{ type: "produce", t, id, kind, source,
// origin, conv, stream }` and `{ type: "obs", t, ev, ... }` (`appended` {msg}, `request` {req},
// `dropped` {msg, reason}, `idle` {idle}, `owner_claimed` {msg}); the end time; the checks'
// parameters. Output: the violations, first per invariant, each `{ invariant, t, msg, detail }`.

export const PLAIN = {
  "no-loss": "every message sent to the agent reaches the model (a model request carries it) by the end of the session, unless the host documents dropping it",
  "exactly-once": "a message enters the conversation at most once",
  fifo: "the messages of one sender enter the conversation in the order they were sent",
  "bounded-latency": (p) =>
    `a message waiting for delivery waits at most ${p.latency_ms_max} ms while the agent sits idle (nothing else will move it), and rides one of the next ${p.latency_requests_max} model requests while the agent works`,
};

export function plain(invariant, params) {
  const p = PLAIN[invariant];
  return typeof p === "function" ? p(params) : p;
}

const name = (id) => `m${id + 1}`;

function sourceName(m) {
  const origin = m.origin ?? m.source;
  let who;
  switch (m.kind) {
    case "orchestrator":
      who = "orchestrator";
      break;
    case "watch":
      who = `watch w${origin + 1}`;
      break;
    case "job":
      who = `job #${origin + 1}`;
      break;
    case "prompt":
      who = origin === 0 ? "prompt-queue.jsonl" : "prompt-queue.jsonl, steer";
      break;
    default:
      who = `subagent ${String.fromCharCode(97 + (origin % 26))}`;
  }
  return m.conv ? `${who} of conversation ${m.conv}` : who;
}

/** Judge one run. `invariants`: the names to judge (a subset of the four). */
export function judge(events, endT, params, invariants = Object.keys(PLAIN)) {
  const on = new Set(invariants);
  const msgs = []; // per id: { info, appendedAt, appendedTimes, deliveredAt, dropped }
  let owed = []; // produced, neither delivered nor dropped, in production order
  let unrequested = [];
  const appendOrder = [];
  const out = [];
  const fired = new Set();
  const report = (invariant, t, msg, detail) => {
    if (!on.has(invariant) || fired.has(invariant)) return;
    fired.add(invariant);
    out.push({ invariant, t, msg: msg === null ? null : name(msg), detail });
  };

  // BOUNDED-LATENCY's running totals.
  const max = params.latency_ms_max;
  let idleSince = null;
  let idleClosed = 0;
  let requests = 0;
  const idleAt = [];
  const requestsAt = [];

  function closeIdle(since, until) {
    const id = owed[0];
    if (id !== undefined) {
      const produced = msgs[id].info.t;
      const start = Math.max(since, produced);
      const before = produced < since ? idleClosed - idleAt[id] : 0;
      const waited = until === null ? Infinity : Math.max(until - start, 0);
      if (before + waited > max) {
        const where = msgs[id].appendedAt !== null ? "appended but not in any request" : "not delivered";
        const earlier = before > 0 ? ` (after ${before} ms of earlier idle waits)` : "";
        const tail = until === null ? "and nothing left in the run would deliver it" : "before anything moved it";
        report(
          "bounded-latency",
          start + Math.max(max - before, 0),
          id,
          `${name(id)} (${sourceName(msgs[id].info)}) ${where}: the host sat idle past latency_ms_max = ${max} ms${earlier} ${tail}`
        );
      }
    }
    if (until !== null) idleClosed += Math.max(until - since, 0);
  }

  function judgeDrop(t, id, why) {
    const m = msgs[id];
    if (m.deliveredAt !== null || m.dropped !== null) return;
    const open = idleSince === null ? 0 : Math.max(t - idleSince, 0);
    const waited = Math.max(idleClosed + open - idleAt[id], 0);
    if (waited <= max) return;
    const crossing = idleSince !== null && waited - max <= t - idleSince ? t - (waited - max) : t;
    report(
      "bounded-latency",
      crossing,
      id,
      `${name(id)} (${sourceName(m.info)}) waited ${waited} ms while the host sat idle, past latency_ms_max = ${max} ms, before it was dropped at ${t} ms (${why})`
    );
  }

  const forget = (id) => {
    owed = owed.filter((x) => x !== id);
  };

  for (const e of events) {
    const t = e.t;
    if (e.type === "produce") {
      const id = e.id;
      if (id !== msgs.length) throw new Error(`message ids are not dense: ${name(id)} after ${msgs.length} messages`);
      msgs.push({ info: e, appendedAt: null, appendedTimes: 0, deliveredAt: null, dropped: null });
      const open = idleSince === null ? 0 : Math.max(t - idleSince, 0);
      idleAt.push(idleClosed + open);
      requestsAt.push(requests);
      owed.push(id);
      continue;
    }
    if (e.type !== "obs") continue;
    // The checkers see each observation before the ledger takes it in (as the tool's do).
    switch (e.ev) {
      case "appended": {
        const m = msgs[e.msg];
        if (m.appendedAt !== null) report("exactly-once", t, e.msg, `${name(e.msg)} entered the conversation again (first at ${m.appendedAt} ms)`);
        m.appendedTimes++;
        if (m.appendedAt === null) {
          m.appendedAt = t;
          appendOrder.push(e.msg);
        }
        if (m.deliveredAt === null && !unrequested.includes(e.msg)) unrequested.push(e.msg);
        break;
      }
      case "request": {
        requests++;
        const missing = owed.find((id) => !unrequested.includes(id));
        if (missing !== undefined) {
          const missed = requests - requestsAt[missing];
          if (missed > params.latency_requests_max) {
            report(
              "bounded-latency",
              t,
              missing,
              `${name(missing)} (${sourceName(msgs[missing].info)}) missed ${missed} model requests in a row (latency_requests_max = ${params.latency_requests_max}); request #${e.req} went without it`
            );
          }
        }
        for (const id of unrequested) {
          if (msgs[id].deliveredAt === null) {
            msgs[id].deliveredAt = t;
            forget(id);
          }
        }
        unrequested = [];
        break;
      }
      case "idle":
        if (e.idle && idleSince === null) idleSince = t;
        else if (!e.idle && idleSince !== null) {
          const since = idleSince;
          idleSince = null;
          closeIdle(since, t);
        }
        break;
      case "dropped": {
        judgeDrop(t, e.msg, e.reason);
        const m = msgs[e.msg];
        if (m.deliveredAt === null && m.dropped === null) {
          m.dropped = e.reason;
          forget(e.msg);
          unrequested = unrequested.filter((x) => x !== e.msg);
        }
        break;
      }
      case "owner_claimed": {
        const m = msgs[e.msg];
        if (m.deliveredAt === null) m.deliveredAt = t;
        forget(e.msg);
        break;
      }
      default:
        break;
    }
  }

  // The end of the run: an idle host stays idle forever; what is owed is lost.
  if (idleSince !== null) closeIdle(idleSince, null);
  const last = new Map();
  for (const id of appendOrder) {
    const s = msgs[id].info.source;
    const prev = last.get(s);
    if (prev !== undefined && prev > id) {
      const info = msgs[id].info;
      report("fifo", msgs[id].appendedAt, id, `${name(id)} entered the conversation after ${name(prev)}, though ${name(id)} was produced first (both from ${info.stream ?? sourceName(info)})`);
      break;
    }
    last.set(s, id);
  }
  if (owed.length) {
    const first = owed[0];
    const m = msgs[first];
    const where = m.appendedAt !== null ? `appended at ${m.appendedAt} ms but no model request followed` : "never entered the conversation";
    const more = owed.length > 1 ? ` (${owed.length - 1} more undelivered)` : "";
    report("no-loss", endT, first, `${name(first)} (${sourceName(m.info)}, produced at ${m.info.t} ms) ${where} by the end of the run${more}`);
  }
  return out.sort((a, b) => a.t - b.t);
}
