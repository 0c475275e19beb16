// Fake peers (`deliver = "peer:NAME"`, docs/remote-host.md): content reaches a published extension
// the way it does in use, through the extension's own transport (a child process it manages, a
// watched inbox directory, its event bus), and never through a function wakesim calls on it.
// Each peer is `peers/NAME.mjs`, exporting:
//
//   install(host)  once, at hello, before pi is imported: patches the process-wide boundaries the
//                  transport crosses (fs.watch, process.kill, ...), for the peer's own objects
//                  only; everything else goes to the real function.
//   reset()        before each run's session is built (real time): the transport's state on disk
//                  starts empty, so a run does not depend on the runs before it in the process.
//   begin(run)     after session_start, on virtual time: `run` holds `pi` (the extension's API),
//                  `session`, `messages` (the plan's producer messages), `note(text)` and
//                  `tag(tag, id)` (binds `[wakesim <tag>]` in content to a produced id). Returns
//                  `{ arrive(m, { id, name, marker }) }`, called at the instant a planned message
//                  is produced; the peer makes the extension receive it.
//   STAY_UP_MS     (optional) how long the session stays up after the last planned message,
//                  when the extension's delivery path keeps only unref()ed timers: a run ends
//                  when nothing ref'd is pending, a session in use does not (driver.mjs holds it
//                  up, vclock.hold). Absent or 0: no hold.
//
// A peer draws every decision through ../lib/wire.mjs, as the driver does: a run stays a pure
// function of the choices wakesim hands out.

import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * A planned producer message, as the driver hands it to a peer (`run.messages`, `arrive`).
 * @typedef {{kind: "completion" | "notification" | "orchestrator", source: number}} Planned
 */
/**
 * What `begin(run)` gets (driver.mjs): pi's extension API (its `events` bus), the session, the
 * plan's producer messages, and the driver's narration and tag binding.
 * @typedef {object} PeerRun
 * @property {any} pi
 * @property {any} [session]
 * @property {Planned[]} messages
 * @property {(text: string) => void} note
 * @property {(tag: string, id: number) => void} tag
 */
/** What `arrive` gets besides the message: its produced id, its name and its marker.
 * @typedef {{id: number, name: string, marker: string}} Arrival */

/** Load and install the fake peer `name` (hosts/pi/peers/NAME.mjs) against the driver's `host`.
 * @param {string} name @param {object} host
 * @returns {Promise<{install: Function, reset: Function, begin: Function, [k: string]: any}>} */
export async function load(name, host) {
  if (!/^[A-Za-z0-9-]+$/.test(name)) throw new Error(`no fake peer ${name}`);
  const mod = await import(pathToFileURL(path.join(here, "peers", `${name}.mjs`)).href);
  for (const f of ["install", "reset", "begin"]) {
    if (typeof mod[f] !== "function") throw new Error(`peers/${name}.mjs has no ${f}()`);
  }
  mod.install(host);
  return mod;
}
