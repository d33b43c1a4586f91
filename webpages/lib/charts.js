// uPlot charts that survive live updates: one instance per key, re-attached to the fresh page and
// fed new data; a user's zoom is kept until they double-click to reset it.
import uPlot from '../vendor/uPlot.esm.js';

const charts = new Map(); // key -> {u, signature, zoomed}

export function destroyCharts(prefix = '') {
  for (const [key, entry] of charts) {
    if (key.startsWith(prefix)) { entry.u.destroy(); charts.delete(key); }
  }
}

// `identity` names what the chart shows beyond its series (e.g. the attempt and its bar labels): a new identity
// builds a new chart, so axis labels and ranges captured in opts never outlive what they describe.
export function chart(key, container, opts, data, identity = '') {
  const width = Math.max(320, container.clientWidth || container.parentElement?.clientWidth || 640);
  const signature = JSON.stringify([opts.series.map((s) => s.label), opts.title, opts.mode, identity]);
  let entry = charts.get(key);
  if (entry && entry.signature !== signature) { entry.u.destroy(); charts.delete(key); entry = null; }
  if (!entry) {
    const scales = Object.fromEntries(Object.entries({ x: {}, y: {}, ...(opts.scales || {}) })
      .map(([name, scale]) => [name, scale.range || (name === 'x' && scale.time !== false) ? scale : { ...scale, range: fit(name) }]));
    const hooks = opts.hooks || {};
    const full = {
      width, height: opts.height || 260, ...opts, scales,
      hooks: {
        ...hooks,
        ready: [...(hooks.ready || []), showLast],
        setData: [...(hooks.setData || []), showLast],
        setCursor: [...(hooks.setCursor || []), (u) => { if (u.cursor.idx === null || u.cursor.idx === undefined) showLast(u); }],
        setSelect: [(u) => { if (u.select.width > 0) charts.get(key).zoomed = true; }],
      },
    };
    const u = new uPlot(full, data, container);
    u.over.addEventListener('dblclick', () => { const e = charts.get(key); if (e) e.zoomed = false; });
    entry = { u, signature, zoomed: false };
    charts.set(key, entry);
    container.uplot = u;   // tests read the drawn data off the box
    return u;
  }
  container.append(entry.u.root);
  container.uplot = entry.u;
  if (Math.abs(entry.u.width - width) > 4) entry.u.setSize({ width, height: entry.u.height });
  entry.u.setData(data, !entry.zoomed);
  return entry.u;
}

// Axes fit the data: a scale whose values are all one figure spans a little either side of it (uPlot's default
// would run from 0 to twice the figure); otherwise x spans the data exactly and y is padded a tenth.
// (uPlot pads a constant x itself, 0 to twice the figure, before it asks the range: x reads its data for that case.)
function fit(name) {
  return (u, min, max) => {
    if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
    if (name === 'x' && min !== max) {
      const xs = u.data?.[0] || [];
      const first = xs.find((v) => Number.isFinite(v));
      if (first !== undefined && xs.every((v) => !Number.isFinite(v) || v === first)) min = max = first;
    }
    if (min === max) { const pad = Math.abs(min) * 0.05 || 0.5; return [min - pad, max + pad]; }
    return name === 'x' ? [min, max] : uPlot.rangeNum(min, max, 0.1, true);
  };
}

// Legends show values without hovering: with no cursor on the chart they read the last point with data.
function showLast(u) {
  const n = u.data[0]?.length || 0;
  let idx = n - 1;
  while (idx > 0 && u.data.slice(1).every((s) => s[idx] === null || s[idx] === undefined)) idx -= 1;
  if (idx >= 0 && (u.cursor.idx === null || u.cursor.idx === undefined)) u.setLegend({ idx });
}

export function resetZoom(key) {
  const entry = charts.get(key);
  if (!entry) return;
  entry.zoomed = false;
  entry.u.setData(entry.u.data, true);
}

export const bars = uPlot.paths.bars;
export const points = { show: true, size: 8 };
export const noLine = () => null;
export { uPlot };
