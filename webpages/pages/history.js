// History: every run of the skill as a regime (its own panel and y axis), x = round, val and train
// series (+ test measurements); metric and stats controls; drag to zoom, click a point to open its round.
import { go } from '../lib/shell.js';
import { api, mount, h } from '../lib/util.js';
import { chart, destroyCharts, noLine, resetZoom } from '../lib/charts.js';
import { TIPS } from '../lib/tips.js';
import { AXES, axisPick } from '../lib/axis.js';

const METRICS = { composite: 'composite', eval: 'eval (mean cell score)', cost: 'cost per cell (USD)', steps: 'steps per cell' };
const STATS = { champion: 'champion after the round', best: 'best candidate per round', mean: 'mean of the round\'s candidates' };

// Rows arrive compact (`columns` names them); train figures are the t_* columns.
function unpack(regime) {
  return regime.points.map((row) => {
    const p = Object.fromEntries(regime.columns.map((name, i) => [name, row[i]]));
    p.train = p.t_eval === null ? null : { eval: p.t_eval, cost: p.t_cost, steps: p.t_steps, composite: p.t_composite };
    return p;
  });
}

function series(points, tests, metric, stats) {
  const rounds = [...new Set(points.map((p) => p.round))].sort((a, b) => a - b);
  const val = [], train = [], test = [], ids = [];
  let champion = null;
  for (const r of rounds) {
    const at = points.filter((p) => p.round === r);
    const values = at.map((p) => p[metric]).filter((v) => v !== null && v !== undefined);
    const lead = at.find((p) => p.leads);   // the strategy's incumbent, as the server reads it (not the last KEEP)
    if (lead) champion = lead[metric];
    const higherBetter = metric === 'composite' || metric === 'eval';
    // the champion holds through a round with no val figure (SCREENED, CRITIC): its line has no gap
    const pick = stats === 'champion' ? champion : values.length ? (stats === 'mean' ? values.reduce((s, v) => s + v, 0) / values.length
      : (higherBetter ? Math.max(...values) : Math.min(...values))) : null;
    val.push(pick);
    const tr = at.filter((p) => p.train).map((p) => p.train[metric]);
    train.push(tr.length ? tr[tr.length - 1] : null);
    const ts = tests.filter((t) => t.round === r && t[metric] !== null && t[metric] !== undefined);
    test.push(ts.length ? ts[ts.length - 1][metric] : null);
    const best = at.slice().sort((p, q) => (q.composite ?? -1e9) - (p.composite ?? -1e9))[0];
    ids.push(best ? best.id : null);
  }
  return { data: [rounds, val, train, test], ids };
}

// Task × attempt heatmap of the per-task deltas each gate decided on (as stored), fetched when opened.
const HEAT_TIP = 'd_t = the candidate\'s composite on task t minus the comparator\'s, as the gate stored them; red below 0, green above; click a column to open its round';

function heatCell(d) {
  if (d === null || d === undefined) return h('td', { class: 'heat-none' }, '');
  const a = Math.min(1, Math.abs(d) / 0.2);
  return h('td', { style: { background: d < 0 ? `rgba(209,36,47,${a})` : `rgba(45,164,78,${a})` }, title: `d = ${d >= 0 ? '+' : ''}${d.toFixed(4)}` }, '');
}

function heatmapBox(state, runId, ui) {
  ui.heat = ui.heat || {};
  const body = h('div', { class: 'heat-body' });
  const box = h('details', { class: 'heatmap', 'data-run': runId, open: !!ui.heat[runId] }, h('summary', { title: HEAT_TIP }, 'task × round heatmap of the gate\'s per-task deltas'), body);
  const load = async () => {
    ui.heat[runId] = box.open;
    if (!box.open || body.firstChild) return;
    const m = await api(`runs/${runId}/task-deltas`, { store: state.store });
    body.replaceChildren(m.tasks.length ? h('table', { class: 'grid heat' },
      h('thead', {}, h('tr', {}, h('th', {}, 'task'), m.attempts.map((a) => h('th', { class: `v-${(a.verdict || '').toLowerCase()}`, title: `${a.verdict || ''}${a.look ? ` · deltas of sequential val look ${a.look}` : ''}: open round ${a.round}.${a.sibling}`, 'data-look': a.look, onclick: () => go('round', a.id) }, `${a.round}${a.sibling ? '.' + a.sibling : ''}`)))),
      h('tbody', {}, m.tasks.map((t, i) => h('tr', { 'data-task': t }, h('th', {}, t), m.deltas[i].map(heatCell))))) : h('p', { class: 'hint' }, 'no gate decisions yet'));
  };
  box.addEventListener('toggle', load);
  if (box.open) load();
  return box;
}

export async function render(root, state, ui) {
  if (!state.skill) { mount(root, h('p', {}, 'Pick a skill.')); return; }
  const regimes = await api('history', { store: state.store, skill: state.skill });
  ui.metric = ui.metric || 'composite';
  ui.stats = ui.stats || 'champion';   // the champion never hides a last KEEP under a worse candidate
  ui.x = ui.x || 'round';
  const control = (key, choices) => h('select', { id: `history-${key}`, onchange: (e) => { ui[key] = e.target.value; destroyCharts('history-'); render(root, state, ui); } },
    Object.entries(choices).map(([v, label]) => h('option', { value: v, selected: v === ui[key] }, label)));
  const panels = regimes.map((g) => {
    const box = h('div', { class: 'chart', 'data-run': g.run.id });
    return { g, box, el: h('div', { class: `regime${g.run.kind === 'aa' ? ' aa' : ''}`, 'data-kind': g.run.kind },
      h('h3', {}, h('a', { href: '#', onclick: (e) => { e.preventDefault(); go('home', null, { run: g.run.id }); } }, g.run.id),
        ` · ${g.run.strategy} · ${g.run.model} · ${g.run.replicates} replicates · ${g.run.rounds_done}/${g.run.rounds_target} rounds · ${g.run.alive ? 'running' : g.run.status}`,
        h('button', { class: 'small', onclick: () => resetZoom(`history-${g.run.id}`) }, 'reset zoom')), box,
      g.run.kind === 'aa' ? null : heatmapBox(state, g.run.id, ui)) };
  });
  mount(root, 
    h('section', { class: 'row' }, h('span', { class: 'fig', title: { composite: TIPS.composite, eval: TIPS.eval, cost: TIPS.cost, steps: TIPS.steps }[ui.metric] }, 'metric'), ' ',
      control('metric', METRICS), ' val series ', control('stats', STATS), ' ', axisPick(ui, () => { destroyCharts('history-'); render(root, state, ui); }, 'history-x'),
      h('span', { class: 'hint' }, 'Each run is a regime with its own axis. Drag to zoom, double-click to reset, click a point to open that round.')),
    panels.length ? panels.filter((p) => p.g.run.kind !== 'aa').map((p) => p.el) : h('p', {}, 'No runs of this skill.'),
    panels.some((p) => p.g.run.kind === 'aa') ? h('section', { id: 'history-aa' },
      h('h2', {}, 'A/A runs ', h('small', {}, 'the seed against identical copies of itself: each point is a copy, not a round of evolution')),
      panels.filter((p) => p.g.run.kind === 'aa').map((p) => p.el)) : null);
  for (const { g, box } of panels) {
    if (g.run.kind === 'aa') { aaChart(g, box, ui); continue; }
    const { data, ids } = series(unpack(g), g.tests, ui.metric, ui.stats);
    if (ui.x !== 'round') data[0] = data[0].map((r) => g.spend[ui.x][g.spend.round.indexOf(r)] ?? null);
    const u = chart(`history-${g.run.id}`, box, {
      height: 220, scales: { x: { time: false } }, axes: [{ label: AXES[ui.x], ...(ui.x === 'round' ? { incrs: [1, 2, 5, 10, 20, 50, 100] } : {}) }, { label: ui.metric }],
      series: [{ label: AXES[ui.x] },
        { label: `val (${ui.stats})`, stroke: '#1f6feb', width: 2, points: { show: true, size: 6 } },
        { label: `train (${g.run.suite})`, stroke: '#2da44e', width: 1, dash: [4, 4], spanGaps: true, points: { show: true, size: 6 } },
        { label: 'test', stroke: '#d1242f', paths: noLine, points: { show: true, size: 11, fill: '#fff', width: 2 } }],
    }, data);
    u.__ids = ids;
    if (!u.__clickBound) {
      u.__clickBound = true;
      u.over.addEventListener('click', () => {
        const idx = u.cursor.idx;
        if (idx !== null && idx !== undefined && u.__ids[idx]) go('round', u.__ids[idx]);
      });
    }
  }
}

// An A/A run: the seed's copies, each a point (its val figure as stored), no champion line and no train:
// nothing evolves, the spread is the gate's noise.
function aaChart(g, box, ui) {
  const points = unpack(g).filter((p) => p.round > 0 && p[ui.metric] !== null && p[ui.metric] !== undefined);
  const seed = unpack(g).find((p) => p.round === 0);
  const copies = points.map((p) => p.round);
  const u = chart(`history-${g.run.id}`, box, {
    height: 200, scales: { x: { time: false } }, axes: [{ label: 'A/A copy', incrs: [1, 2, 5, 10, 20, 50, 100] }, { label: ui.metric }],
    series: [{ label: 'A/A copy' },
      { label: `copy of the seed (val ${ui.metric})`, stroke: '#8250df', paths: noLine, points: { show: true, size: 7, fill: '#8250df' } },
      { label: `seed (val ${ui.metric})`, stroke: '#57606a', dash: [4, 4], width: 1, points: { show: false } }],
  }, [copies, points.map((p) => p[ui.metric]), points.map(() => seed ? seed[ui.metric] : null)]);
  u.__ids = points.map((p) => p.id);
}
