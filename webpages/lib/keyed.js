// Keyed sections: a page re-rendered by a live update keeps the very DOM of every section whose data did not
// change (scroll, open <details>, focus, chart zoom and anything typed in it stay as they are) and builds anew
// only the sections whose data moved. A section's data is everything it shows and everything its handlers use.
export function sections(ui) {
  ui.sections = ui.sections || new Map();   // key -> {json, value, fresh}
  const cache = ui.sections;
  return {
    // The value build() made for `key` when `data` is what it was last time; else a fresh build().
    get(key, data, build) {
      const json = JSON.stringify(data);
      const prev = cache.get(key);
      if (prev && prev.json === json) { prev.fresh = false; return prev.value; }
      const value = build();
      cache.set(key, { json, value, fresh: true });
      return value;
    },
    // Whether the last get(key) built anew (charts are drawn only into fresh sections).
    fresh: (key) => cache.get(key)?.fresh !== false,
  };
}
