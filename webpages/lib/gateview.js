// What the gate saw (Round Analysis): the paired per-task deltas it decided on, drawn against its threshold and the
// mean Δ, each task opening a side-by-side of the candidate's and the comparator's cells on that task.
import { h, num, scoreColour, short, signed } from './util.js';
import { bars, chart } from './charts.js';

const TIP = {
  deltas: 'd_t = the candidate\'s composite on task t minus the comparator\'s (each the mean over its replicates), as the deciding look\'s gate stored them; the gate compares their mean Δ (not each d_t) with the threshold',
  look: 'sequential val ran in waves (one more replicate of every task each); each look\'s gate read the per-task deltas over the replicates so far, and the verdict rests on the last look taken',
  comparator: 'the evaluation the gate compared with, as stored on the attempt (older runs: this run\'s own evaluation of the incumbent it stored before this round, never another run\'s)',
};

export function comparatorLine(a) {
  const c = a.comparator;
  if (!c) return null;
  return h('p', { id: 'comparator', title: TIP.comparator }, 'compared with: ', h('b', {}, c.role), ` ${short(c.genome_hash)} · evaluation #${c.evaluation_id ?? '—'}`,
    c.stored ? '' : h('small', { class: 'hint' }, ' (not stored by this run\'s loop: its own evaluation of that genome)'));
}

function cellBox(c, open) {
  return h('div', { class: 'cellbox', 'data-cell': c.id, title: 'click for the stream, grader output and errors', onclick: () => open(c.id) },
    h('b', {}, `r${c.replicate}${c.model ? ' @' + c.model : ''} `), h('span', { class: `badge c-${c.status}` }, c.status), ` score ${num(c.score, 3)} · ${c.steps ?? '—'} steps`,
    h('div', {}, Object.entries(c.tests || {}).map(([n, s]) => h('span', { class: 'chip', style: { background: scoreColour(s) } }, `${n} ${num(s, 2)}`))),
    c.error ? h('div', { class: 'error' }, c.error) : null);
}

// The candidate's and the comparator's cells of one task (task@model with several models), side by side.
export function sideBySide(row, d, open) {
  const mine = (cells) => cells.filter((c) => c.task_id === row.task && (c.model || null) === (row.model || null));
  const a = d.attempt;
  return h('div', { class: 'side-by-side-drawer', 'data-task': row.key },
    h('h3', {}, `${row.key}: d = ${signed(row.delta)}`),
    h('div', { class: 'side-by-side' },
      h('div', { class: 'side candidate' }, h('h4', {}, `candidate ${short(a.genome_hash)}`), mine(d.cells).map((c) => cellBox(c, open))),
      h('div', { class: 'side comparator' }, h('h4', {}, `${a.comparator?.role || 'comparator'} ${short(a.comparator?.genome_hash)}`), mine(d.comparator_cells || []).map((c) => cellBox(c, open)))));
}

// The per-task deltas of one look: sequential val stored each look's gate (attempts.looks), the verdict resting on
// the last; without looks, the gate's own.
function lookRows(deltas) {
  return Object.entries(deltas || {}).map(([key, delta]) => {
    const [task, model] = key.split('@');
    return { key, task, model: model || null, delta };
  }).sort((x, y) => x.delta - y.delta || (x.key < y.key ? -1 : 1));
}

export function taskDeltasSection(d, openTask, pickLook, lookNo) {
  const a = d.attempt;
  const looks = Array.isArray(a.looks) ? a.looks : [];
  const last = looks[looks.length - 1];
  const shown = looks.find((l) => l.look === lookNo) || last;
  const rows = shown ? lookRows(shown.gate.deltas) : a.task_deltas || [];
  if (!rows.length) return null;
  const threshold = shown ? shown.gate.threshold : a.gate_threshold;
  const mean = shown ? shown.gate.delta : a.delta;
  const lookLine = shown ? h('p', { class: 'hint', id: 'task-deltas-look', 'data-look': shown.look, title: TIP.look },
    `look ${shown.look} of ${looks.length} taken (${shown.replicates} replicate${shown.replicates === 1 ? '' : 's'} per task, ${shown.cells} cells, z ${num(shown.z, 3)}) · `,
    shown === last ? 'the look the verdict rests on' : `an earlier look: its decision ${shown.decision || 'none (the next wave ran)'}`,
    looks.length > 1 ? [' · show look ', h('select', { id: 'task-deltas-look-picker', onchange: (e) => pickLook(Number(e.target.value)) },
      looks.map((l) => h('option', { value: l.look, selected: l === shown }, `${l.look}${l === last ? ' (deciding)' : ''}`)))] : null) : null;
  const box = h('div', { class: 'chart', id: 'task-deltas-chart' });
  const section = h('section', { id: 'round-task-deltas' },
    h('h3', { title: TIP.deltas }, 'What the gate saw: paired per-task deltas ', h('small', {}, `(${rows.length}, worst first; Δ ${signed(mean)} vs threshold ${signed(threshold)}) — click a task`)),
    lookLine, box,
    h('table', { class: 'figs task-deltas', id: 'task-deltas' }, h('thead', {}, h('tr', {}, ['task', 'model', 'd_t', 'vs threshold'].map((x) => h('th', {}, x)))),
      h('tbody', {}, rows.map((r) => h('tr', { 'data-task': r.key, onclick: () => openTask(r) }, h('th', {}, r.task), h('td', {}, r.model || ''),
        h('td', { class: r.delta < threshold ? 'below' : '' }, signed(r.delta)),
        h('td', {}, r.delta < threshold ? 'below' : 'at or above'))))));
  section.draw = () => chart('round-task-deltas', box, {
    height: 200, scales: { x: { time: false, range: [-0.5, rows.length - 0.5] } },
    axes: [{ values: (u, ticks) => ticks.map((t) => rows[t]?.key ?? ''), splits: () => rows.map((_, i) => i) }, { label: 'd_t' }],
    series: [{}, { label: 'd_t', fill: '#8250df99', stroke: '#8250df', paths: bars({ size: [0.6] }) },
      { label: 'threshold', stroke: '#d1242f', dash: [6, 4] }, { label: 'Δ (mean)', stroke: '#1f6feb' }],
  }, [rows.map((_, i) => i), rows.map((r) => r.delta), rows.map(() => threshold), rows.map(() => mean)], `${a.id}|${shown?.look ?? ''}|${rows.map((r) => r.key).join(',')}`);
  return section;
}
