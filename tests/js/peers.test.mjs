// The fake peers (hosts/pi/peers.mjs and peers/*.mjs) without pi: the loader refuses a name that
// is not a peer, a peer's patched boundary answers for the peer's own objects only, and each
// peer's `arrive` makes content reach the extension through its transport: a message file in
// the watched inbox and the watch event (collab); an adopted child process that ends as the
// message's kind says, its tag bound to the produced id (processes). A stand-in extension plays
// the part the published one plays. The file is its own process (node --test): patches stay here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as peers from "../../hosts/pi/peers.mjs";

test("the loader refuses what is not a peer", async () => {
  await assert.rejects(peers.load("../lib/wire", {}), /no fake peer/);
  await assert.rejects(peers.load("no-such-peer", {}), /Cannot find module|ERR_MODULE_NOT_FOUND/);
});

test("collab: a message file in the one watched inbox, then its watch event", async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "wakesim-collab-"));
  process.on("exit", () => fs.rmSync(home, { recursive: true, force: true }));
  process.env.COLLABORATING_AGENTS_DIR = path.join(home, "collab");
  const collab = await peers.load("collab", {});
  collab.reset();
  const inbox = path.join(process.env.COLLABORATING_AGENTS_DIR, "inbox", "me");
  fs.mkdirSync(inbox, { recursive: true });
  const events = [];
  const notes = [];
  const watcher = fs.watch(inbox, (kind, file) => events.push([kind, file]));
  assert.equal(typeof watcher.close, "function");
  const run = collab.begin({ note: (t) => notes.push(t) });
  run.arrive({ kind: "notification", source: 1 }, { name: "m1", marker: "[wakesim m1]" });
  const files = fs.readdirSync(inbox);
  assert.equal(files.length, 1);
  const msg = JSON.parse(fs.readFileSync(path.join(inbox, files[0]), "utf8"));
  assert.equal(msg.to, "me");
  assert.equal(msg.from, "peer-b");
  assert.equal(msg.urgent, true);
  assert.match(msg.text, /\[wakesim m1\]/);
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(events, [["rename", files[0]]]);
  watcher.close();
  // No watched inbox: nothing is sent, and the note says so.
  run.arrive({ kind: "completion", source: 0 }, { name: "m2", marker: "[wakesim m2]" });
  assert.match(notes.at(-1), /no agent inbox is watched/);
  // A path outside the extension's directory gets the real fs.watch.
  const real = fs.watch(home);
  assert.ok(real instanceof EventEmitter);
  real.close();
});

test("processes: adopted children end as their kind says; outside pids are real", async () => {
  const procs = await peers.load("processes", {});
  procs.reset();
  const events = new EventEmitter();
  const ends = [];
  // The stand-in for pi-processes: adopts what it is handed, reports each end.
  events.on("processes:command:adopt", ({ name, child, reply }) => {
    child.on("close", (code, signal) => ends.push([name, code, signal]));
    reply({ ok: true, info: { id: `p-${child.pid}` } });
  });
  const tags = [];
  const messages = [{ kind: "completion" }, { kind: "notification" }, { kind: "orchestrator" }];
  const run = procs.begin({ pi: { events }, messages, note: () => {}, tag: (t, id) => tags.push([t, id]) });
  messages.forEach((m, i) => run.arrive(m, { id: i + 10, name: `m${i + 1}` }));
  assert.deepEqual(ends, [
    ["job 1 [wakesim j1]", 0, null],
    ["job 2 [wakesim j2]", null, "SIGTERM"],
    ["job 3 [wakesim j3]", 1, null],
  ]);
  assert.deepEqual(tags, [["j1", 10], ["j2", 11], ["j3", 12]]);
  // The fake pids are gone once they ended; a real pid goes to the real process.kill.
  assert.throws(() => process.kill((1 << 30) + 1, 0), /ESRCH/);
  assert.equal(process.kill(process.pid, 0), true);
});

test("processes: a child the extension does not adopt is an error", async () => {
  const procs = await peers.load("processes", {});
  procs.reset();
  const events = new EventEmitter();
  events.on("processes:command:adopt", ({ reply }) => reply({ ok: false, error: "busy" }));
  assert.throws(() => procs.begin({ pi: { events }, messages: [{ kind: "completion" }], note: () => {}, tag: () => {} }), /did not adopt job 1: busy/);
});
