// hosts/lib/wire.mjs, the drivers' side of the remote-host protocol, over real pipes: a child
// process imports it and makes calls while this test plays wakesim. Checks that a draw sends one
// `choose` line and blocks for its `value`, that certain outcomes draw nothing, that `produce`
// carries its fields, that an answer which is not a value is an error, that `fatal` writes an
// `error` line and exits 1, and that end of input ends the driver quietly.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const WIRE = pathToFileURL(path.join(here, "..", "..", "hosts", "lib", "wire.mjs")).href;

// Runs `body` (module code with `w` the wire) with `answers` as wakesim's lines.
function driver(body, answers) {
  const code = `import * as w from ${JSON.stringify(WIRE)};\n${body}`;
  const input = answers.map((a) => (typeof a === "string" ? a : JSON.stringify(a)) + "\n").join("");
  const p = spawnSync(process.execPath, ["--input-type=module", "-e", code], { input, encoding: "utf8", timeout: 30_000 });
  const lines = p.stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
  return { lines, status: p.status, stderr: p.stderr };
}

test("draws send a choose line and take the value", () => {
  const { lines, status } = driver(
    `const a = w.choose(3, "pick");
     const b = w.choose(1, "only");
     const c = w.chance(1, 1, "sure");
     const d = w.chance(0, 4, "never");
     const e = w.delay(5, 5, "fixed");
     const f = w.order(2);
     const id = w.produce(10, "completion", 2, { origin: 1 });
     w.send({ type: "got", a, b, c, d, e, f, id });`,
    [{ type: "value", value: 2 }, { type: "value", value: 1 }, { type: "value", value: 7 }]
  );
  assert.equal(status, 0);
  assert.deepEqual(lines, [
    { type: "choose", label: "pick", kind: "choose", bound: 3 },
    { type: "choose", label: "same-instant order", kind: "order", bound: 2 },
    { type: "produce", t: 10, kind: "completion", source: 2, origin: 1 },
    { type: "got", a: 2, b: 0, c: true, d: false, e: 5, f: 1, id: 7 },
  ]);
});

test("obs and note lines carry their fields", () => {
  const { lines } = driver(`w.obs(3, "host", "IDLE", "request", { req: 1 }); w.note(4, "wake", "BUSY", "hi");`, []);
  assert.deepEqual(lines, [
    { type: "obs", t: 3, actor: "host", state: "IDLE", ev: "request", req: 1 },
    { type: "note", t: 4, actor: "wake", state: "BUSY", text: "hi" },
  ]);
});

test("an answer that is not a value is an error", () => {
  const { status, stderr } = driver(`w.chance(1, 2, "c");`, [{ type: "result", value: 1 }]);
  assert.notEqual(status, 0);
  assert.match(stderr, /expected a value/);
});

test("fatal writes an error line and exits 1", () => {
  const { lines, status } = driver(`w.fatal("no such host", "load");`, []);
  assert.equal(status, 1);
  assert.deepEqual(lines, [{ type: "error", message: "no such host", kind: "load" }]);
});

test("end of input ends the driver quietly", () => {
  const { lines, status } = driver(`w.receive(); w.send({ type: "unreachable" });`, []);
  assert.equal(status, 0);
  assert.deepEqual(lines, []);
});
