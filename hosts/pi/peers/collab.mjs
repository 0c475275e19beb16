// Fake peer of `@baochunli/pi-collaborating-agents` (0.4.6): other agents writing to this agent's
// inbox.
//
// How content enters the extension (its source, extensions/collaborating-agents/): at
// session_start the agent registers under `~/.pi/agent/collaborating-agents/registry/` and
// watches its inbox directory `inbox/<name>/` with `fs.watch`; a watch event re-arms a 40 ms
// debounce timer (WATCH_DEBOUNCE_MS) whose callback reads every `*.json` message file in name
// order (store.ts `processInbox`), calls `deliverInboxMessage` for each, and deletes it. Delivery
// is `pi.sendMessage(custom, { triggerTurn: true, deliverAs: urgent ? "steer" : "followUp" })`.
//
// What is fake: the other agents and the kernel's file watch. At a planned message's instant the
// peer writes the message file into the inbox as another agent's `sendDirect` would (real files,
// in the driver's sandbox HOME), then the watch event arrives as a timer at the same virtual
// instant (its order among that instant's timers is wakesim's same-instant choice).
// `fs.watch` is answered by the peer for paths under the extension's directory only. A
// `notification` is an urgent message (steer); `completion` and `orchestrator` are not (followUp).

import fs from "node:fs";
import module from "node:module";
import os from "node:os";
import path from "node:path";

/** @typedef {import("../peers.mjs").PeerRun} PeerRun @typedef {import("../peers.mjs").Planned} Planned */
/** @typedef {import("../peers.mjs").Arrival} Arrival */

/** @type {string | null} the extension's directory (under the sandbox HOME) */
let base = null;
const watchers = new Map(); // watched path → listener

export function install() {
  const realWatch = fs.watch;
  /** @type {any} */ (fs).watch = (/** @type {any} */ p, /** @type {any[]} */ ...rest) => {
    const target = path.resolve(String(p));
    if (!base || !target.startsWith(base + path.sep)) return realWatch(p, ...rest);
    const listener = rest.find((r) => typeof r === "function");
    const w = {
      close() {
        if (watchers.get(target) === listener) watchers.delete(target);
      },
      on() {
        return w;
      },
      ref() {
        return w;
      },
      unref() {
        return w;
      },
    };
    watchers.set(target, listener);
    return w;
  };
  // The extension imports node:fs as an ES module namespace (jiti imports builtins natively).
  module.syncBuiltinESMExports();
}

export function reset() {
  // HOME is the driver's sandbox: the directory pi-collaborating-agents resolves at load time.
  base = path.join(process.env.COLLABORATING_AGENTS_DIR || path.join(os.homedir(), ".pi", "agent", "collaborating-agents"));
  fs.rmSync(base, { recursive: true, force: true });
  watchers.clear();
}

/** @param {PeerRun} run */
export function begin(run) {
  if (base === null) throw new Error("collab peer: begin() before reset()");
  const inboxRoot = path.join(base, "inbox");
  let seq = 0;
  return {
    /** @param {Planned} m @param {Pick<Arrival, "name" | "marker">} arrival */
    arrive(m, { name, marker }) {
      const inboxes = [...watchers.keys()].filter((p) => path.dirname(p) === inboxRoot);
      if (inboxes.length !== 1) {
        run.note(`${name}: no agent inbox is watched (${inboxes.length}); the message is not sent`);
        return;
      }
      const inbox = inboxes[0];
      const to = path.basename(inbox);
      const from = m.kind === "orchestrator" ? "orchestrator" : `peer-${String.fromCharCode(97 + (m.source % 26))}`;
      const urgent = m.kind === "notification";
      seq++;
      const msg = {
        id: `wakesim-${seq}`,
        from,
        to,
        text: `${m.kind} from ${from} ${marker}`,
        kind: "direct",
        timestamp: new Date().toISOString(),
        urgent,
      };
      const file = path.join(inbox, `${String(Date.now()).padStart(15, "0")}-${String(seq).padStart(4, "0")}.json`);
      const tmp = `${file}.tmp`;
      fs.writeFileSync(tmp, JSON.stringify(msg));
      fs.renameSync(tmp, file);
      run.note(`${from} writes ${name} to ${to}'s inbox${urgent ? " (urgent)" : ""}`);
      setTimeout(() => {
        const listener = watchers.get(inbox);
        if (listener) listener("rename", path.basename(file));
      }, 0);
    },
  };
}
