// Evaluates the realm prelude (realm.js and its parts) inside a module's vm context, as the
// adapter (adapter.mjs) and the realm's tests (tests/js/realm*.test.mjs) do: the one place that
// knows the prelude's files. Each file is a script whose value is a function of the context's
// realm; its file name starts `wakesim-realm`, so the frames of the prelude are left out of the
// errors a module's handlers report (realm-content.js `describeError`).

import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

/** The prelude's files, by the name realm.js calls each part. */
export const PARTS = Object.freeze({ clock: "realm-clock.js", content: "realm-content.js" });

/** The value of one of the prelude's scripts, evaluated in `context`.
 * @param {vm.Context} context @param {string} file @returns {any} */
export function evaluate(context, file) {
  const source = fs.readFileSync(path.join(here, file), "utf8");
  return new vm.Script(source, { filename: `wakesim-${file}` }).runInContext(context);
}

/**
 * The realm's entry points (`reset`, `dispatch`, `finish`) in `context`, over the bridge `host`
 * (realm.js `RealmHost`).
 * @param {vm.Context} context @param {object} host
 * @returns {{reset(entry: string, exportName: string | null, options: unknown): string, dispatch(line: string): void, finish(): string}}
 */
export function loadRealm(context, host) {
  /** @type {Record<string, unknown>} */
  const parts = {};
  for (const [name, file] of Object.entries(PARTS)) parts[name] = evaluate(context, file);
  return evaluate(context, "realm.js")(host, parts);
}
