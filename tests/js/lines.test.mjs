// adapters/node/lib/lines.mjs, the one line framing of the Node adapter and the drivers: lines split at
// "\n" only, a UTF-8 character cut by a read boundary decoded whole, an unterminated last line
// dropped, the before-block hook called each time the reader needs more input, and writeAll
// writing every byte. Files stand in for the pipes (a read at end of file is the pipe's EOF).
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { LineReader, writeAll } from "../../adapters/node/lib/lines.mjs";

// Removed when the test process ends.
const dirs = [];
process.on("exit", () => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

function tempFile(content) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wakesim-lines-"));
  dirs.push(dir);
  const file = path.join(dir, "data");
  fs.writeFileSync(file, content);
  return file;
}

test("lines split at newlines; a character across the 64 KiB read boundary is whole", () => {
  // "é" is two bytes: its first is the 65,536th byte of the file, the last of the first read.
  const long = "a".repeat(65535) + "é";
  const fd = fs.openSync(tempFile(`${long}\n{"type":"x"}\n\nlast without newline`), "r");
  let blocks = 0;
  const reader = new LineReader(fd, () => blocks++);
  assert.equal(reader.read(), long);
  assert.equal(reader.read(), '{"type":"x"}');
  assert.equal(reader.read(), "");
  // The other side closed mid-line: not a line.
  assert.equal(reader.read(), null);
  assert.equal(reader.read(), null);
  assert.ok(blocks >= 3, `the hook runs before each read that may block (${blocks})`);
  fs.closeSync(fd);
});

test("a reader without a hook reads the same lines", () => {
  const fd = fs.openSync(tempFile("one\ntwo\n"), "r");
  const reader = new LineReader(fd);
  assert.deepEqual([reader.read(), reader.read(), reader.read()], ["one", "two", null]);
  fs.closeSync(fd);
});

test("writeAll writes every byte of a long multi-byte text", () => {
  const file = tempFile("");
  const fd = fs.openSync(file, "w");
  const text = "ü€".repeat(100_000) + "\n";
  writeAll(fd, text);
  fs.closeSync(fd);
  assert.equal(fs.readFileSync(file, "utf8"), text);
});
