// Health: the latest health check of a watched skill folder (run.py --check SKILL_DIR --suite ...), its drift
// band vs the previous check of the same suites + contract, a daily trend (UTC days, up to 365), tasks worst
// first, and what checking cost. Status: healthy / drifting / regressed / no data.
import { api, mount, h, num, signed, usd, when, table, short } from '../lib/util.js';
import { chart, destroyCharts } from '../lib/charts.js';

const STATUS = {
  healthy: ['#dafbe1', '#116329', 'healthy'], drifting: ['#fff8c5', '#7d4e00', 'drifting'],
  regressed: ['#ffebe9', '#a40e26', 'regressed'], no_data: ['#eaeef2', '#57606a', 'no data'],
};
const DAYS = [7, 30, 90, 365];
const DAY = 86400;

function soFar(isoDay) {
  const n = 1 + Math.floor((Date.now() / 1000 - Date.parse(isoDay + 'T00:00:00Z') / 1000) / DAY);
  return `${n} day${n === 1 ? '' : 's'}`;
}

export async function render(root, state, ui) {
  if (!state.store) { mount(root, h('p', {}, 'No store yet.')); return; }
  ui.days = ui.days || 30;
  const params = { store: state.store, days: ui.days };
  if (ui.target) Object.assign(params, { skill_dir: ui.target.skill_dir, fingerprint: ui.target.fingerprint });
  const d = await api('health-checks', params);
  const [bg, fg, label] = STATUS[d.status] || STATUS.no_data;
  const targetPicker = h('select', { id: 'health-target', onchange: (e) => { ui.target = d.targets[Number(e.target.value)]; destroyCharts('health-'); render(root, state, ui); } },
    d.targets.map((t, i) => h('option', { value: i, selected: d.target && t.skill_dir === d.target.skill_dir && t.fingerprint === d.target.fingerprint },
      `${t.skill_name} · ${t.skill_dir} · ${t.suites.join(' + ')} (${t.checks} checks)`)));
  const daysPicker = h('select', { id: 'health-days', onchange: (e) => { ui.days = Number(e.target.value); render(root, state, ui); } },
    DAYS.map((n) => h('option', { value: n, selected: n === ui.days }, `last ${n} days`)));
  if (!d.target) {
    mount(root, h('h2', {}, 'Health'),
      h('div', { id: 'health-status', style: { background: bg, color: fg, padding: '8px 12px', borderRadius: '6px', display: 'inline-block', fontWeight: 600 } }, label),
      h('p', {}, 'No health check in this store yet. Run one: python run.py --check SKILL_DIR --suite NAME [--suite NAME2 ...]'));
    return;
  }
  const l = d.latest;
  const reach = d.complete ? `data for the whole ${d.days}-day range`
    : `data only from ${d.covered_from} (${soFar(d.covered_from)} so far)`;
  const box = h('div', { class: 'chart', id: 'health-trend' });
  mount(root,
    h('h2', {}, 'Health'),
    h('section', { class: 'row' }, 'watching ', targetPicker, ' ', daysPicker),
    h('div', { style: { display: 'flex', gap: '16px', alignItems: 'center', margin: '10px 0' } },
      h('div', { id: 'health-status', title: 'healthy: baseline, unchanged or improved · drifting: slightly down or declined · regressed: down 10 points or more (from the last check that has a score)',
        style: { background: bg, color: fg, padding: '8px 12px', borderRadius: '6px', fontWeight: 600 } }, label),
      h('div', { id: 'health-latest' },
        h('div', { style: { fontSize: '20px', fontWeight: 600 } }, l.score === null ? 'no score' : `${num(l.score, 1)}/100`,
          l.delta !== null && l.delta !== undefined ? h('span', { style: { fontSize: '14px', marginLeft: '8px' } }, `${signed(l.delta, 1)} · ${l.band}`) : null,
          l.partial ? h('span', { class: 'badge', style: { marginLeft: '8px', background: '#fff8c5' } }, 'PARTIAL') : null),
        h('div', { id: 'health-summary' }, l.summary || ''),
        l.status === 'stale' ? h('div', { class: 'stale-note', id: 'health-stale' }, h('span', { class: 'badge r-stale' }, 'stale'), ' ', l.stale_note) : null,
        h('div', { class: 'hint' }, `check #${l.id} · ${when(l.started_at)} · genome ${short(l.genome_hash)} · ${l.n_done}/${l.n_cells} cells`))),
    h('h3', {}, 'Daily trend (UTC days, mean score of the day\'s checks)'),
    h('p', { id: 'health-reach', class: 'hint' }, reach),
    box,
    h('h3', {}, 'Tasks, worst first (latest check)'),
    l.partial || !d.tasks.length ? h('p', { class: 'hint' }, d.tasks.length ? 'Only the tasks scored before the check was cancelled.' : 'Per-task breakdown not produced: the check was cancelled before any cell finished.') : null,
    table(['task', 'score', 'previous', 'Δ'], d.tasks.map((t) => [t.task, num(t.score, 1), t.previous === null ? '—' : num(t.previous, 1), t.delta === null ? '—' : signed(t.delta, 1)]), { id: 'health-tasks' }),
    h('h3', {}, 'Cost'),
    h('p', { id: 'health-cost' }, `last check ${usd(d.cost.last_check)} · the last ${d.days} days ${usd(d.cost.period_total)} over ${d.counts.in_period} check(s) (${d.counts.checks} in all)`),
    h('h3', {}, 'Recent checks'),
    table(['check', 'when', 'status', 'score', 'band', 'cost'], (d.checks || []).map((c) => [
      `#${c.id}`, when(c.started_at), c.status + (c.partial ? ' (partial)' : ''), c.score === null ? '—' : num(c.score, 1), c.band || '—', usd(c.cost_usd)])));
  const xs = d.trend.map((p) => Date.parse(p.date + 'T00:00:00Z') / 1000);
  const end = Math.floor(Date.now() / 1000 / DAY) * DAY;  // today, UTC: the range asked for, not only the data
  chart('health-trend', box, {
    height: 200, scales: { x: { time: true, range: () => [end - (d.days - 1) * DAY, end + DAY / 2] }, y: { range: [0, 100] } },
    series: [{ label: 'day' }, { label: 'mean score', stroke: '#1f6feb', width: 2, points: { show: true, size: 7 } }],
    axes: [{}, { label: 'score /100' }],
  }, [xs, d.trend.map((p) => p.avg_score)]);
}
