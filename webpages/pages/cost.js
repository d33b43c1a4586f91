// Cost: what this store has spent today, this week (from Monday) and in all, per run and per model, summed
// from the per-call costs it keeps (cells, mutator calls, meta-skill calls; UTC days). With a daily budget
// (run.py --daily-budget-usd USD) it warns at 80 % and says when new spending is stopped (100 %).
import { api, mount, h, usd, table } from '../lib/util.js';
import { link } from '../lib/shell.js';
import { chart, bars } from '../lib/charts.js';

function card(id, label, value, hint) {
  return h('div', { id, title: hint, style: { border: '1px solid #d0d7de', borderRadius: '6px', padding: '8px 14px', minWidth: '140px' } },
    h('div', { class: 'hint' }, label), h('div', { style: { fontSize: '20px', fontWeight: 600 } }, usd(value)));
}

function budgetLine(b) {
  if (b.state === 'none') return h('p', { id: 'budget', class: 'hint' }, 'No daily budget set (python run.py --daily-budget-usd USD records one for this store).');
  const pct = Math.round(100 * b.fraction);
  const style = b.state === 'stop' ? { background: '#ffebe9', color: '#a40e26' } : b.state === 'warn' ? { background: '#fff8c5', color: '#7d4e00' } : { background: '#dafbe1', color: '#116329' };
  const text = b.state === 'stop' ? `Daily budget reached: ${usd(b.spent_today)} of ${usd(b.daily_usd)} (${pct} %). New spending is stopped until 00:00 UTC.`
    : b.state === 'warn' ? `Warning: ${usd(b.spent_today)} of the ${usd(b.daily_usd)} daily budget spent today (${pct} %); new spending stops at 100 %.`
      : `${usd(b.spent_today)} of the ${usd(b.daily_usd)} daily budget spent today (${pct} %).`;
  return h('p', { id: 'budget', class: `budget-${b.state}`, style: { ...style, padding: '6px 10px', borderRadius: '6px' } }, text);
}

export async function render(root, state) {
  if (!state.store) { mount(root, h('p', {}, 'No store yet.')); return; }
  const d = await api('spend', { store: state.store });
  const box = h('div', { class: 'chart', id: 'cost-daily' });
  mount(root,
    h('h2', {}, 'Cost'),
    budgetLine(d.budget),
    h('div', { style: { display: 'flex', gap: '12px', margin: '10px 0' } },
      card('spend-today', 'today (UTC)', d.today, 'since 00:00 UTC'),
      card('spend-week', 'this week', d.week, 'since Monday 00:00 UTC'),
      card('spend-all', 'all time', d.all_time, 'every costed call in this store')),
    h('p', { class: 'hint' }, 'Summed from the stored per-call costs: each cell (build agent, priced from config.json), each mutator call and each meta-skill call. A cached evaluation is counted once, on the run that ran it.'),
    h('h3', {}, 'Per run'),
    table(['run', 'skill', 'status', 'today', 'this week', 'all time', 'calls'],
      d.runs.map((r) => [/^(run|aa)-/.test(r.run) ? h('a', { href: link('home', null, { skill: r.skill || '', run: r.run }), class: 'run-link' }, r.run) : r.run,
        r.skill || '', r.status || '', usd(r.today), usd(r.week), usd(r.all_time), r.calls]), { id: 'spend-runs' }),
    h('h3', {}, 'Per model'),
    table(['model', 'today', 'this week', 'all time', 'calls'], d.models.map((m) => [m.model, usd(m.today), usd(m.week), usd(m.all_time), m.calls]), { id: 'spend-models' }),
    h('h3', {}, 'Last 30 days (UTC)'),
    box);
  chart('cost-daily', box, {
    // half a day either side: today's bar is drawn whole, not clipped at the edge
    height: 180, scales: { x: { range: (u, min, max) => [(min ?? 0) - 43200, (max ?? 0) + 43200] } }, series: [{ label: 'day' }, { label: 'USD', fill: '#1f6feb55', stroke: '#1f6feb', paths: bars({ size: [0.6, 40] }), points: { show: false } }],
    axes: [{}, { label: 'USD' }],
  }, [d.daily.map((p) => Date.parse(p.date + 'T00:00:00Z') / 1000), d.daily.map((p) => p.usd)]);
}
