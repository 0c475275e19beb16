// The pi-subagents fake peer's patched boundaries (hosts/pi/peers/subagents.mjs), without pi: a
// spawn of the extension's runner script is answered by a fake child above every real pid, any
// other spawn is the real one; process.kill reaches the fake child (it ends with the signal) and
// a fake pid that ended is ESRCH; fs.watch under the extension's temporary root is the peer's.
// Its own process (node --test), as the processes peer patches process.kill too.
import { test } from "node:test";
import assert from "node:assert/strict";
import childProcess from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as peers from "../../hosts/pi/peers.mjs";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "wakesim-subagents-"));
process.on("exit", () => fs.rmSync(root, { recursive: true, force: true }));
process.env.PI_SUBAGENTS_TEMP_ROOT = root;
const subagents = await peers.load("subagents", {});
subagents.reset();

test("the runner's spawn is a fake child; other spawns are real", async () => {
  const cfg = path.join(root, "async-cfg-1.json");
  const runner = childProcess.spawn(process.execPath, ["jiti-cli", "/x/subagent-runner.ts", cfg], {});
  assert.ok(runner.pid >= 1 << 30, `a fake pid (${runner.pid})`);
  const closed = new Promise((resolve) => runner.on("close", (code, signal) => resolve([code, signal])));
  assert.equal(process.kill(runner.pid, "SIGTERM"), true);
  assert.deepEqual(await closed, [null, "SIGTERM"]);
  assert.throws(() => process.kill(runner.pid, 0), /ESRCH/);
  const real = childProcess.spawn(process.execPath, ["-e", "process.exit(3)"]);
  assert.ok(real.pid < 1 << 30);
  const code = await new Promise((resolve) => real.on("close", resolve));
  assert.equal(code, 3);
});

test("fs.watch under the extension's root is the peer's", () => {
  const dir = path.join(root, "results");
  fs.mkdirSync(dir, { recursive: true });
  const w = fs.watch(dir, () => {});
  assert.equal(w.unref(), w);
  w.close();
  const outside = fs.watch(os.tmpdir());
  assert.equal(typeof outside.close, "function");
  outside.close();
});
