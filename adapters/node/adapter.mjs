#!/usr/bin/env node
// wakesim's Node reference adapter (protocol 1, docs/protocol.md).
//
//   node adapters/node/adapter.mjs MODULE [--export NAME] [--wait]
//
// `--wait`: do not take events sent ahead (`hello` without `speculate`), so the simulator waits
// for every handler, as it did before events could go ahead (tests compare the two).
//
// Loads MODULE (TypeScript or JavaScript, ES module or CommonJS; types are stripped by sucrase,
// pinned in package-lock.json, which the adapter installs itself with `npm ci` the first time it
// needs it, under a lock) inside a vm context whose clock, timers and microtasks follow the
// simulation, and calls its default export (or NAME) with a pi-shaped facade and the scenario's
// `options`. The export returns `send(message, options)`: wakesim calls it for each producer
// message, as a pi extension's own transport would. Handlers registered with `pi.on` receive the
// host's events; `pi.sendMessage`, `pi.sendUserMessage` and `ctx.isIdle()` act on the simulated
// host synchronously.
//
// The loop is synchronous: it blocks on stdin between messages and while a query is answered, and
// never yields to Node's event loop, so nothing but the simulator moves the module forward.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { createRequire } from "node:module";
import { LineReader, sleepMs, writeAll } from "./lib/lines.mjs";
import { loadRealm } from "./lib/realm-load.mjs";

const PROTOCOL = 1;
const NAME = "wakesim-node/0.1.0";
const here = path.dirname(new URL(import.meta.url).pathname);
const requireHere = createRequire(import.meta.url);

// `kind` "load": the module under test did not load (bad input: wakesim exits 2, saves nothing).
/** @param {string} message @param {string} [kind] @returns {never} */
function fatal(message, kind) {
  write(JSON.stringify(kind ? { type: "error", message, kind } : { type: "error", message }) + "\n");
  flush();
  process.exit(1);
}

// ---------------------------------------------------------------------------------------------
// Blocking line IO on fds 0 and 1 (lib/lines.mjs).

// Lines are gathered and written when the loop is about to block on stdin (or exit): events sent
// ahead arrive several in one read, and their answers leave in one write.
let outText = "";

/** @param {string} text */
function write(text) {
  outText += text;
}

function flush() {
  if (outText === "") return;
  const text = outText;
  outText = "";
  writeAll(1, text);
}

// About to block on stdin: what is written so far goes out first.
const reader = new LineReader(0, flush);

/** @returns {string | null} */
function readLine() {
  return reader.read();
}

// ---------------------------------------------------------------------------------------------
// Arguments.

const argv = process.argv.slice(2);
/** @type {string | null} */
let entryArg = null;
/** @type {string | null} */
let exportName = null;
let waitAll = false;
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--export") exportName = argv[++i] ?? fatal("--export needs a NAME");
  else if (argv[i] === "--wait") waitAll = true;
  else if (entryArg === null) entryArg = argv[i];
  else fatal(`unexpected argument ${JSON.stringify(argv[i])}; usage: adapter.mjs MODULE [--export NAME] [--wait]`);
}
if (!entryArg) fatal("usage: adapter.mjs MODULE [--export NAME] [--wait]");
const cwd = process.cwd();
const entry = path.resolve(cwd, entryArg);
if (!fs.existsSync(entry)) fatal(`module ${entryArg} not found (from ${cwd})`, "load");

// ---------------------------------------------------------------------------------------------
// Module loading: resolve, transpile, compile into the context.

// sucrase, pinned by package-lock.json, lives in this directory's node_modules. A fresh clone has
// none: the first adapter that needs it runs `npm ci` here, holding a lock directory so that
// adapters starting side by side (one per runner thread, tests in parallel) install once; the
// others wait for the lock, then load what it installed. A lock whose holder died is taken over.
const INSTALL_LOCK = path.join(here, ".install.lock");
const INSTALL_WAIT_MS = 300_000;
const INSTALL_STALE_MS = 10_000;

function loadable() {
  try {
    requireHere.resolve("sucrase");
    return true;
  } catch {
    return false;
  }
}

/** @param {unknown} e @returns {string | undefined} */
function errorCode(e) {
  return e instanceof Error && "code" in e && typeof e.code === "string" ? e.code : undefined;
}

/** @param {unknown} e @returns {string} */
function messageOf(e) {
  return e instanceof Error ? e.message : String(e);
}

function lockHolderGone() {
  let pid = NaN;
  try {
    pid = Number(fs.readFileSync(path.join(INSTALL_LOCK, "pid"), "utf8"));
  } catch {
    // Created but no pid yet: the holder is between two syscalls, or died there.
    try {
      return Date.now() - fs.statSync(INSTALL_LOCK).mtimeMs > INSTALL_STALE_MS;
    } catch {
      return false; // the lock just went away: try again
    }
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return errorCode(e) === "ESRCH";
  }
}

/** The version package.json pins for `name`, as the install line names it.
 * @param {string} name @returns {string} */
function pinnedVersion(name) {
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(here, "package.json"), "utf8"));
    return String(pkg.dependencies[name]);
  } catch {
    return "(pinned in package.json)";
  }
}

function installPinned() {
  const deadline = Date.now() + INSTALL_WAIT_MS;
  for (;;) {
    try {
      fs.mkdirSync(INSTALL_LOCK);
      break;
    } catch (e) {
      if (errorCode(e) !== "EEXIST") {
        throw new Error(`cannot take the install lock ${INSTALL_LOCK}: ${messageOf(e)}`);
      }
      if (lockHolderGone()) {
        fs.rmSync(INSTALL_LOCK, { recursive: true, force: true });
      } else if (Date.now() > deadline) {
        throw new Error(`another adapter held ${INSTALL_LOCK} for ${INSTALL_WAIT_MS} ms`);
      } else {
        sleepMs(50);
      }
    }
  }
  try {
    fs.writeFileSync(path.join(INSTALL_LOCK, "pid"), String(process.pid));
    if (loadable()) return; // the previous holder installed it
    // Said as every first-use install says it (`wakesim: installing X V ...`, then `wakesim:
    // installed X V in N s`), so that `wakesim run` relays both above its progress line.
    const what = `sucrase ${pinnedVersion("sucrase")}`;
    const started = Date.now();
    process.stderr.write(
      `wakesim: installing ${what} (pinned, ${path.join(here, "package-lock.json")}) into ${path.join(here, "node_modules")} ...\n`
    );
    const npm = spawnSync(
      "npm",
      ["ci", "--prefix", here, "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"],
      // npm's output goes to stderr: stdout is the protocol.
      { stdio: ["ignore", 2, 2], timeout: INSTALL_WAIT_MS }
    );
    if (npm.error || npm.status !== 0) {
      const why = npm.error ? npm.error.message : `exit status ${npm.status}`;
      throw new Error(`npm ci failed (${why})`);
    }
    process.stderr.write(`wakesim: installed ${what} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  } finally {
    fs.rmSync(INSTALL_LOCK, { recursive: true, force: true });
  }
}

/** @type {{transform(code: string, options: object): {code: string}} | null} */
let sucrase = null;
/** The module's source as the realm runs it (CommonJS, no types).
 * @param {string} code @param {string} filename @returns {string} */
function transform(code, filename) {
  const ext = path.extname(filename);
  const ts = [".ts", ".mts", ".cts"].includes(ext);
  if (ext === ".cjs" || (ext === ".js" && !/^\s*(import|export)\b/m.test(code))) return code;
  if (!sucrase) {
    try {
      if (!loadable()) installPinned();
      sucrase = requireHere("sucrase");
    } catch (e) {
      throw new Error(
        `cannot load sucrase to transpile ${path.relative(cwd, filename)} (${messageOf(e)}): run \`npm ci --prefix adapters/node\` once`
      );
    }
  }
  const transforms = ts ? ["typescript", "imports"] : ["imports"];
  if (sucrase === null) throw new Error("unreachable: sucrase loaded above");
  try {
    return sucrase.transform(code, { transforms, filePath: filename, production: true }).code;
  } catch (thrown) {
    // A syntax error in the user's module: name its file, line and column, without sucrase's own
    // stack frames (they say nothing about the module).
    const e = /** @type {{ loc?: { line: number, column: number }, message?: string } | null} */ (thrown);
    const at = e && e.loc ? `:${e.loc.line}:${e.loc.column + 1}` : "";
    const reason = String((e && e.message) || thrown)
      .replace(/^Error transforming [^:]*: /, "")
      .replace(/\s*\(\d+:\d+\)$/, "");
    const err = new SyntaxError(`${path.relative(cwd, filename) || filename}${at}: ${reason}`);
    err.stack = `SyntaxError: ${err.message}`;
    throw err;
  }
}

const EXTENSIONS = ["", ".ts", ".mts", ".js", ".mjs", ".cjs", ".cts", "/index.ts", "/index.js"];
const BUILTINS = new Set(["path", "util", "events", "assert"]);

// Resolutions are kept for the process: a module's files are read and compiled once (see
// `compile`), so the same specifier from the same directory names the same file in every run,
// and a reset need not stat the file system again.
/** @typedef {{filename: string, dirname: string} | {builtin: string}} Resolved */
/** @type {Map<string, Resolved>} */
const resolved = new Map();

/** @param {string} spec @param {string} fromDir @returns {Resolved} */
function resolve(spec, fromDir) {
  const key = fromDir + "\0" + spec;
  let r = resolved.get(key);
  if (!r) {
    r = resolveUncached(spec, fromDir);
    resolved.set(key, r);
  }
  return r;
}

/** @param {string} spec @param {string} fromDir @returns {Resolved} */
function resolveUncached(spec, fromDir) {
  const bare = spec.startsWith("node:") ? spec.slice(5) : spec;
  if (BUILTINS.has(bare)) return { builtin: bare };
  if (!(spec.startsWith("./") || spec.startsWith("../") || path.isAbsolute(spec))) {
    throw new Error(
      `cannot load ${JSON.stringify(spec)} inside the simulation: only relative modules and node:{${[...BUILTINS].join(",")}} are available`
    );
  }
  const base = path.resolve(fromDir, spec);
  for (const ext of EXTENSIONS) {
    const f = base + ext;
    // A .js import of a .ts file (TypeScript's NodeNext style) resolves to the .ts.
    if (fs.existsSync(f) && fs.statSync(f).isFile()) return { filename: f, dirname: path.dirname(f) };
  }
  if (/\.js$/.test(base) && fs.existsSync(base.replace(/\.js$/, ".ts"))) {
    const f = base.replace(/\.js$/, ".ts");
    return { filename: f, dirname: path.dirname(f) };
  }
  throw new Error(`cannot find module ${JSON.stringify(spec)} from ${path.relative(cwd, fromDir) || "."}`);
}

// DONT_CONTEXTIFY: the context's global is an ordinary object, not one behind interceptors, so
// the module's global reads and the per-reset restore of the globals cost what they cost in Node.
// A Node without it (before 20.18 / 22.8) gets the contextified global: slower, the same runs.
//
// Microtasks (the handlers' promise continuations) must all run before `done`. Entering the
// context for each event (`runInContext`, whose "afterEvaluate" queue drains on return) costs
// 2-4 us; calling the realm's functions directly and draining Node's own queue with
// `process._tickCallback` (which runs the microtask checkpoint, to empty) costs 0.2 us. That
// drain works only outside a microtask, so the loop starts from a macrotask (`setImmediate`),
// not from the module's evaluation. A Node without `_tickCallback` gets the context's own queue.
/** Node's own, undocumented: what it runs between two macrotasks. @type {{_tickCallback?: () => void}} */
const nodeProcess = /** @type {any} */ (process);
const drainMicrotasks = typeof nodeProcess._tickCallback === "function" ? nodeProcess._tickCallback : null;
const context = vm.createContext(
  vm.constants?.DONT_CONTEXTIFY ?? {},
  drainMicrotasks ? { name: "wakesim" } : { name: "wakesim", microtaskMode: "afterEvaluate" }
);
// A promise the module rejects and never handles is ignored, as it is with the context's own
// queue (whose rejections Node never reports while this loop runs): never a crash of the adapter.
process.on("unhandledRejection", () => {});
/** @type {Map<string, Function>} */
const compiled = new Map();

/** @param {string} filename @returns {Function} */
function compile(filename) {
  let fn = compiled.get(filename);
  if (!fn) {
    const code = transform(fs.readFileSync(filename, "utf8"), filename);
    fn = vm.compileFunction(code, ["exports", "require", "module", "__filename", "__dirname"], {
      parsingContext: context,
      filename: path.relative(cwd, filename) || filename,
    });
    compiled.set(filename, fn);
  }
  return fn;
}

const host = {
  write,
  /** @param {string} text */
  query(text) {
    write(text);
    const line = readLine();
    if (line === null) process.exit(0);
    return line;
  },
  /** @param {string} text */
  log(text) {
    fs.writeSync(2, text);
  },
  resolve,
  compile,
  builtin: (/** @type {string} */ name) => requireHere(name),
};

const realm = loadRealm(context, host);
context.__wakesim = realm;
const resetScript = new vm.Script("__wakesim.reset(__wakesim_entry, __wakesim_export, __wakesim_options)", {
  filename: "wakesim-adapter",
});
const dispatchScript = new vm.Script("__wakesim.dispatch(__wakesim_line)", { filename: "wakesim-adapter" });
context.__wakesim_entry = entry;
context.__wakesim_export = exportName;
context.__wakesim_options = null;

// ---------------------------------------------------------------------------------------------
// The protocol loop.

function resetModule() {
  if (!drainMicrotasks) return resetScript.runInContext(context);
  const ready = realm.reset(entry, exportName, context.__wakesim_options);
  drainMicrotasks();
  return ready;
}

/** @param {string} line @returns {string} */
function handle(line) {
  if (!drainMicrotasks) {
    context.__wakesim_line = line;
    // Evaluated as a script, so the context's microtasks run before it returns.
    dispatchScript.runInContext(context);
  } else {
    realm.dispatch(line);
    drainMicrotasks();
  }
  // `finish` queues no microtask.
  return realm.finish();
}

function serve() {
  let greeted = false;
  for (;;) {
    const line = readLine();
    if (line === null) process.exit(0);
    // wakesim writes `type` first; anything else is parsed in full.
    let type = line.startsWith('{"type":"event"') ? "event" : null;
    if (type === null) {
      try {
        type = JSON.parse(line).type;
      } catch {
        fatal(`the simulator sent a line that is not JSON: ${line.slice(0, 200)}`);
      }
    }
    if (!greeted && type !== "hello") fatal("the simulator did not say hello first");
    if (type === "event") {
      write(handle(line));
    } else if (type === "reset") {
      let ready;
      try {
        ready = resetModule();
      } catch (e) {
        const stack = e instanceof Error || (e && typeof e === "object" && "stack" in e) ? /** @type {{stack?: unknown}} */ (e).stack : undefined;
        const msg = stack ? String(stack).split("\n").filter((l) => !/node:|wakesim-|adapter\.mjs|Immediate\./.test(l)).slice(0, 6).join("\n") : String(e);
        fatal(`the module failed to load: ${msg}`, "load");
      }
      write(ready);
    } else if (type === "hello") {
      const hello = JSON.parse(line);
      if (hello.protocol !== PROTOCOL) fatal(`${NAME} speaks protocol ${PROTOCOL}, not ${hello.protocol}`);
      if (hello.host !== "pi") fatal(`${NAME} has a facade for pi only, not ${hello.host}`);
      context.__wakesim_options = hello.options || {};
      greeted = true;
      // `speculate`: events marked `spec` are answered without blocking (lib/realm.js).
      /** @type {Record<string, unknown>} */
      const ours = { type: "hello", protocol: PROTOCOL, adapter: NAME };
      if (!waitAll) ours.speculate = true;
      write(JSON.stringify(ours) + "\n");
    } else {
      fatal(`unexpected message from the simulator: ${line.slice(0, 200)}`);
    }
  }
}

if (drainMicrotasks) setImmediate(serve);
else serve();
