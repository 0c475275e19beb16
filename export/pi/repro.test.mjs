// The reproducer: replays the recorded run of the real host with the installed packages
// (node_modules) and judges what the host did with the messages it was sent. It fails, naming the
// invariant in plain words and showing the run's timeline, while the bug is there; it passes once
// the package is fixed (`npm run apply-fix` applies the proposed patch, when there is one).
//
// How: runtime/pi/driver.mjs runs the host's own session on a virtual clock, with a scripted
// model and the services it awaits; every decision it makes (when a message arrives, how long
// the model takes, which of two things due at once goes first) comes from session.json through
// runtime/lib/wire.mjs. Its observations are judged by runtime/lib/check.mjs.

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

import { judge, plain } from "../runtime/lib/check.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const session = JSON.parse(fs.readFileSync(path.join(root, "session.json"), "utf8"));
const patched = fs.existsSync(path.join(root, "node_modules", ".repro-fix-applied"));

let cached = null;
function replay() {
  cached ??= run();
  return cached;
}

function run() {
  const major = Number(process.versions.node.split(".")[0]);
  assert.ok(major >= 22, `${session.package.host} needs Node 22 or later; this is Node ${process.versions.node}`);
  const r = spawnSync(process.execPath, ["--no-warnings", "--stack-size=4000", path.join(root, "runtime", "pi", "driver.mjs")], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 << 20,
    timeout: 300_000,
  });
  const lines = r.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
  const err = lines.find((l) => l.type === "error");
  const end = lines.find((l) => l.type === "end");
  if (err || !end) {
    assert.fail(`the replay did not complete (exit ${r.status}${r.signal ? `, ${r.signal}` : ""}): ${err ? err.message : "no end"}\n${r.stderr.slice(-4000)}`);
  }
  return { lines, end, stderr: r.stderr };
}

function timeline(lines, violations) {
  const rows = [];
  const row = (t, actor, text, state = "") => rows.push(`${String(t).padStart(8)}  ${actor.padEnd(8)}  ${text}${state ? `   [${state}]` : ""}`);
  const pending = [...violations];
  const flush = (t) => {
    while (pending.length && pending[0].t <= t) {
      const v = pending.shift();
      row(v.t, "check", `✗ ${v.invariant}: ${v.detail}`);
    }
  };
  let appended = [];
  for (const l of lines) {
    if (l.t !== undefined) flush(l.t - 1);
    if (l.type === "produce") row(l.t, "producer", `m${l.id + 1} ready (${l.kind})`, l.state);
    else if (l.type === "note") row(l.t, l.actor, l.text, l.state);
    else if (l.type === "obs" && l.ev === "appended") {
      appended.push(`m${l.msg + 1}`);
      row(l.t, l.actor, `m${l.msg + 1} enters the conversation`, l.state);
    } else if (l.type === "obs" && l.ev === "request") {
      row(l.t, l.actor, `model request #${l.req}${appended.length ? ` carrying ${appended.join(" ")}` : ""}`, l.state);
      appended = [];
    } else if (l.type === "obs" && l.ev === "dropped") row(l.t, l.actor, `m${l.msg + 1} dropped (${l.reason})`, l.state);
    else if (l.type === "end") {
      flush(l.t);
      row(l.t, "host", `the session ends (${l.cause})`);
    }
  }
  flush(Infinity);
  return `   t(ms)  actor     event\n${rows.join("\n")}`;
}

test(session.test_name, () => {
  const { lines, end } = replay();
  const violations = judge(lines, end.t, session.params, session.invariants);
  if (violations.length) {
    const what = violations.map((v) => `${v.invariant}: ${plain(v.invariant, session.params)}.\n  Broken at ${v.t} ms: ${v.detail}`).join("\n");
    assert.fail(`${session.package.name} ${session.package.version} on ${session.package.host}:\n${what}\n\nTimeline (virtual ms):\n${timeline(lines, violations)}\n`);
  }
});

test("the replay follows the recorded run", { skip: patched && "a fix is applied: the run is meant to differ" }, () => {
  const { end } = replay();
  assert.equal(end.diverged, null, `the installed packages made other decisions than the recorded run: ${JSON.stringify(end.diverged)}`);
  assert.equal(end.draws, end.recorded, `the replay took ${end.draws} of the ${end.recorded} recorded decisions`);
});
