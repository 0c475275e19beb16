// Shared by the pi driver and its per-version parts (gen058.mjs): observe a field's writes.

/** Accessor on `obj.field`, so every write of pi's own flags is observed as it happens.
 * @param {Record<string, any>} obj @param {string} field
 * @param {(value: any, old: any) => void} onSet */
export function watchField(obj, field, onSet) {
  let value = obj[field];
  Object.defineProperty(obj, field, {
    configurable: true,
    enumerable: true,
    get: () => value,
    set: (v) => {
      const old = value;
      value = v;
      onSet(v, old);
    },
  });
}
