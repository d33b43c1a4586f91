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
    const full = {
      width, height: opts.height || 260, ...opts,
      hooks: {
        ...(opts.hooks || {}),
        setSelect: [(u) => { if (u.select.width > 0) charts.get(key).zoomed = true; }],
      },
    };
    const u = new uPlot(full, data, container);
    u.over.addEventListener('dblclick', () => { const e = charts.get(key); if (e) e.zoomed = false; });
    entry = { u, signature, zoomed: false };
    charts.set(key, entry);
    return u;
  }
  container.append(entry.u.root);
  if (Math.abs(entry.u.width - width) > 4) entry.u.setSize({ width, height: entry.u.height });
  entry.u.setData(data, !entry.zoomed);
  return entry.u;
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
