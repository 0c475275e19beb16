// `npm run apply-fix`: applies the proposed fix (fix.patch, a diff against the installed package)
// to node_modules with `patch -p1` (or `git apply`), and leaves a marker the test reads. `npm ci` undoes it.

import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const session = JSON.parse(fs.readFileSync(path.join(root, "session.json"), "utf8"));
const fix = path.join(root, "fix.patch");
if (!fs.existsSync(fix)) {
  process.stderr.write("this reproducer carries no fix.patch\n");
  process.exit(2);
}
const marker = path.join(root, "node_modules", ".repro-fix-applied");
if (fs.existsSync(marker)) {
  process.stderr.write("the fix is already applied (npm ci restores the released package)\n");
  process.exit(0);
}
const dir = path.join(root, ...(session.package.dir || `node_modules/${session.package.name}`).split("/"));
// `patch`, else `git apply` (either is enough; neither needs a repository).
let r = spawnSync("patch", ["-p1", "--forward", "--batch", "-d", dir, "-i", fix], { stdio: "inherit" });
if (r.error && r.error.code === "ENOENT") {
  r = spawnSync("git", ["apply", "-p1", `--directory=${path.relative(root, dir)}`, fix], { cwd: root, stdio: "inherit" });
}
if (r.error || r.status !== 0) {
  process.stderr.write(`applying fix.patch failed (${r.error ? r.error.message : `exit ${r.status}`}); it needs \`patch\` or \`git\`\n`);
  process.exit(1);
}
fs.writeFileSync(marker, "");
process.stderr.write(`applied fix.patch to ${path.relative(root, dir)}\n`);
