// Attempts: every attempt of the run (or of every run of the skill) in one table — sortable by any column,
// filtered by verdict and by text, exported as CSV (the server writes the same rows). A row opens Round Analysis.
import { go } from '../lib/shell.js';
import { api, h, mount, num, short, signed, usd, verdictBadge } from '../lib/util.js';

const SHOWN = [
  ['run_id', 'run', (v) => v], ['round', 'round', (v) => v], ['sibling', 'sib', (v) => v],
  ['summary', 'change', (v) => v || ''], ['genome_hash', 'genome', short],
  ['parent_hash', 'parent', short], ['comparator_hash', 'compared with', short], ['verdict', 'verdict', null],
  ['reason', 'why', (v) => v || ''], ['delta', 'Δ', (v) => signed(v)], ['gate_threshold', 'threshold', (v) => signed(v)],
  ['eval', 'eval', (v) => num(v, 3)], ['cost', 'cost/cell', usd], ['steps', 'steps', (v) => num(v, 2)],
  ['mutator_cost_usd', 'mutator $', usd], ['cells', 'cells', (v) => v ?? '—'], ['duration_s', 'duration s', (v) => num(v, 1)],
  ['failures', 'failed cells', (v) => v ?? '—'], ['name', 'name', (v) => v || ''], ['tags', 'tags', (v) => v || ''],
];
const TIPS = {
  summary: 'what the mutator says it changed (the attempt\'s stored summary)', genome_hash: 'the candidate genome (its content hash)',
  comparator_hash: 'the genome the gate compared with (stored on the attempt; older runs: the incumbent its run stored before the round)',
  delta: 'Δcomposite vs the comparator, as the gate stored it', gate_threshold: 'minImprovement − t·SE: Δ below it is a decisive loss. The lenient gate keeps at or above it; the keep rule positive (the default) keeps only Δ > minImprovement',
  cells: 'cells of the attempt\'s val evaluation', duration_s: 'finished_at − started_at of the attempt',
  mutator_cost_usd: 'USD of the attempt\'s mutator call', failures: 'failed cells of its val evaluation',
};

function compare(key, dir) {
  return (a, b) => {
    const x = a[key], y = b[key];
    if (x === y) return a.id - b.id;
    if (x === null || x === undefined) return 1;   // blanks last either way
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : 1) * dir;
  };
}

export async function render(root, state, ui) {
  if (!state.skill) { mount(root, h('p', {}, 'Pick a skill.')); return; }
  ui.scope = ui.scope || 'run';
  const params = ui.scope === 'run' && state.run ? { run: state.run } : { skill: state.skill };
  const found = await api('attempts', { store: state.store, ...params });
  const data = { rows: found.rows.map((row) => Object.fromEntries(found.columns.map((name, i) => [name, row[i]]))) };
  ui.sort = ui.sort || { key: 'id', dir: 1 };
  const text = (ui.filter || '').toLowerCase();
  const rows = data.rows.filter((r) => (!ui.verdict || r.verdict === ui.verdict)
    && (!text || [r.run_id, r.genome_hash, r.parent_hash, r.summary, r.reason, r.verdict_note, r.name, r.tags, `r${r.round}`].some((v) => String(v ?? '').toLowerCase().includes(text))))
    .sort(compare(ui.sort.key, ui.sort.dir));
  const verdicts = [...new Set(data.rows.map((r) => r.verdict).filter(Boolean))].sort();
  const csv = `/api/attempts?${new URLSearchParams({ store: state.store, ...params, format: 'csv' })}`;
  const head = (key, label) => h('th', { 'data-key': key, title: TIPS[key] || 'click to sort', class: ui.sort.key === key ? `sorted ${ui.sort.dir > 0 ? 'asc' : 'desc'}` : '',
    onclick: () => { ui.sort = { key, dir: ui.sort.key === key ? -ui.sort.dir : 1 }; render(root, state, ui); } }, label, ui.sort.key === key ? (ui.sort.dir > 0 ? ' ▲' : ' ▼') : '');
  const controls = h('div', { class: 'row' },
    h('select', { id: 'attempts-scope', onchange: (e) => { ui.scope = e.target.value; render(root, state, ui); } },
      h('option', { value: 'run', selected: ui.scope === 'run' }, `this run (${state.run || '—'})`),
      h('option', { value: 'skill', selected: ui.scope === 'skill' }, `every run of ${state.skill}`)),
    h('select', { id: 'attempts-verdict', onchange: (e) => { ui.verdict = e.target.value; render(root, state, ui); } },
      h('option', { value: '' }, 'every verdict'), verdicts.map((v) => h('option', { value: v, selected: v === ui.verdict }, v))),
    h('input', { id: 'attempts-filter', type: 'search', placeholder: 'filter: change, genome, run, round (r3), reason…', value: ui.filter || '',
      onchange: (e) => { ui.filter = e.target.value; render(root, state, ui); } }),
    h('a', { id: 'attempts-csv', href: csv, download: '' }, 'CSV'),
    h('span', { class: 'hint', id: 'attempts-count' }, `${rows.length} of ${data.rows.length} attempts`));
  const table = h('table', { class: 'figs attempts-table', id: 'attempts-table' },
    h('thead', {}, h('tr', {}, SHOWN.map(([key, label]) => head(key, label)))),
    h('tbody', {}, rows.map((r) => h('tr', { 'data-attempt': r.id, onclick: () => go('round', r.id, { run: r.run_id }) },
      SHOWN.map(([key, , show]) => key === 'verdict' ? h('td', {}, verdictBadge(r.verdict, r.verdict_note))
        : h('td', { class: key === 'reason' || key === 'summary' ? 'why' : '', title: key === 'genome_hash' ? r[key] || '' : null }, show(r[key])))))));
  mount(root, h('section', { id: 'attempts' }, h('h2', {}, 'Attempts'), controls, table));
}
