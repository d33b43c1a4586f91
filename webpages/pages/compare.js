// Compare runs: pick 2–4 runs of the skill; their champion (val) and test composites on one round axis, a
// table of seed / champion / test figures side by side, and the paired test Δ between two champions tested
// on the same suite (server/compare.py). The picked runs live in the URL (#/compare?runs=a,b).
import { go } from '../lib/shell.js';
import { api, h, mount, num, short, signed, usd } from '../lib/util.js';
import { chart, noLine } from '../lib/charts.js';
import { TIPS, fig } from '../lib/tips.js';
import { AXES, axisPick } from '../lib/axis.js';

const COLOURS = ['#1f6feb', '#d1242f', '#2da44e', '#8250df'];
const MAX = 4;
const TIP = {
  sign: 'sign test over tasks: B better / A better / tied, exact two-sided binomial p at 1/2 (the same report as run.py --compare)',
  mcnemar: 'McNemar exact test per pass/fail test: cells paired by task × replicate; +B-only / −A-only passes and the exact two-sided p',
  pair: 'paired test Δ = mean over the suite\'s tasks of (B − A) per-task composite of the two champions\' test cells, both scored with run A\'s weights and normalised to run A\'s seed on that suite; 95% t interval Δ ± t.ppf(0.975, n−1)·SE, SE = SD of the deltas / √n',
  vsSeed: 'the champion\'s test Δ vs its own seed (the run\'s honest test report): mean ± SE',
  kept: 'KEEP verdicts / candidate attempts',
};

function picked(state) {
  return (state.params.get('runs') || '').split(',').filter((id) => state.runs.some((r) => r.id === id));
}

function picker(state, chosen) {
  const choose = (id, on) => {
    // the URL as it is now: a second tick may land before the first one's re-render replaced this picker
    const now = (new URLSearchParams(location.hash.split('?')[1] || '').get('runs') || '').split(',').filter(Boolean);
    const next = on ? [...now.filter((x) => x !== id), id].slice(-MAX) : now.filter((x) => x !== id);
    go('compare', null, { runs: next.join(',') });
  };
  return h('fieldset', { class: 'compare-pick', id: 'compare-pick' }, h('legend', {}, `Runs of ${state.skill} (pick 2 to ${MAX})`),
    state.runs.filter((r) => r.kind !== 'aa').map((r) => h('label', { class: 'chip' },
      h('input', { type: 'checkbox', value: r.id, checked: chosen.includes(r.id), onchange: (e) => choose(r.id, e.target.checked) }),
      ` ${r.id} · ${r.strategy} · ${r.rounds_done}/${r.rounds_target} · ${r.status}`)));
}

function figuresTable(data) {
  const runs = data.runs;
  const suites = [...new Set(runs.flatMap((v) => Object.keys(v.latest_tests)))].sort();
  const latest = (v, suite) => v.tests.find((t) => t.id === v.latest_tests[suite]);
  const row = (label, cell, tip) => h('tr', {}, h('th', { title: tip || '' }, label), runs.map((v) => h('td', {}, cell(v))));
  return h('table', { class: 'figs', id: 'compare-table' },
    h('thead', {}, h('tr', {}, h('th', {}, ''), runs.map((v, i) => h('th', { style: { color: COLOURS[i] } }, v.run.id)))),
    h('tbody', {},
      row('strategy · model', (v) => `${v.run.strategy} · ${v.run.model} · ${v.run.replicates} replicates`),
      row('rounds', (v) => `${v.run.rounds_done}/${v.run.rounds_target}`),
      row('kept / attempts', (v) => fig(`${v.kept}/${v.attempts}`, TIP.kept)),
      row('seed (val)', (v) => fig(num(v.seed.composite), `val ${TIPS.composite}`)),
      row('champion (val)', (v) => [fig(num(v.champion.composite), `val ${TIPS.composite}`), ' ', h('code', {}, short(v.champion.genome_hash))]),
      row('champion − seed (val)', (v) => fig(signed(v.champion.composite === null || v.seed.composite === null ? null : v.champion.composite - v.seed.composite), 'val composite of the champion minus the seed\'s (selection-biased: test is the honest figure)')),
      suites.map((suite) => [
        row(`test ${suite}`, (v) => { const t = latest(v, suite); return t ? fig(num(t.composite), TIPS.testComposite) : '—'; }),
        row(`test Δ vs seed (${suite})`, (v) => { const t = latest(v, suite); return t && t.vs_seed ? fig(`${signed(t.vs_seed.mean)} ± ${num(t.vs_seed.se)}`, TIP.vsSeed) : '—'; }),
      ]),
      row('spend', (v) => fig(usd(v.run.cost_usd), TIPS.spend))));
}

function pairsView(data) {
  if (!data.pairs.length) return h('p', { class: 'hint', id: 'compare-pairs' }, 'No two of these runs have their current champions tested on the same suite yet (▶ Run test on Home).');
  return h('table', { class: 'figs', id: 'compare-pairs' },
    h('thead', {}, h('tr', {}, ['A', 'B', 'suite', 'tasks', 'Δ (B − A) ± SE', '95% CI', 'p', 'sign B/A/tie', 'McNemar'].map((x) => h('th', { title: TIP.pair }, x)))),
    h('tbody', {}, data.pairs.map((p) => h('tr', { 'data-pair': `${p.a}|${p.b}|${p.suite}` },
      h('td', {}, p.a), h('td', {}, p.b), h('td', {}, p.suite), h('td', {}, String(p.n)),
      h('td', {}, fig(p.same_genome ? 'same genome: 0' : `${signed(p.mean)} ± ${num(p.se)}`, TIP.pair)),
      h('td', {}, fig(p.ci_low === null || p.ci_low === undefined ? '—' : `[${signed(p.ci_low)}, ${signed(p.ci_high)}]`, TIP.pair)),
      h('td', {}, fig(p.p_value === null || p.p_value === undefined ? '—' : num(p.p_value, 3), 'two-sided paired t test of Δ = 0')),
      h('td', {}, p.sign ? fig(`${p.sign.wins}/${p.sign.losses}/${p.sign.ties} p ${num(p.sign.p_value, 3)}`, TIP.sign) : '—'),
      h('td', {}, p.mcnemar && Object.keys(p.mcnemar).length
        ? fig(Object.entries(p.mcnemar).map(([name, m]) => `${name} +${m.only_a}/−${m.only_b} p ${num(m.p_value, 3)}`).join(' · '), TIP.mcnemar) : '—')))));
}

export async function render(root, state, ui = {}) {
  if (!state.skill) { mount(root, h('p', {}, 'Pick a skill.')); return; }
  const chosen = picked(state);
  const head = [h('h2', {}, 'Compare runs'), picker(state, chosen)];
  if (chosen.length < 2) { mount(root, head, h('p', { class: 'hint', id: 'compare-empty' }, 'Tick two to four runs.')); return; }
  const data = await api('compare', { store: state.store, runs: chosen.join(',') });
  ui.x = ui.x || 'round';
  const rounds = [...new Set(data.runs.flatMap((v) => v.curve[ui.x]))].filter((x) => x !== null).sort((a, b) => a - b);
  const align = (v, key) => rounds.map((r) => { const i = v.curve[ui.x].indexOf(r); return i < 0 ? null : v.curve[key][i]; });
  const box = h('div', { class: 'chart', id: 'compare-curve' });
  mount(root, head,
    h('section', {}, h('h3', {}, 'Champion on val (lines) and tests (rings), one axis ',
      h('small', { title: TIPS.composite, id: 'compare-note' }, data.note || 'same seed, val suite and eval models: the composites share one scale'), ' ',
      axisPick(ui, () => render(root, state, ui), 'compare-x')), box),
    h('section', {}, h('h3', {}, 'Side by side'), figuresTable(data)),
    h('section', {}, h('h3', {}, 'Champion against champion on test'), pairsView(data)));
  chart('compare-curve', box, {
    height: 280, scales: { x: { time: false } }, axes: [{ label: AXES[ui.x], ...(ui.x === 'round' ? { incrs: [1, 2, 5, 10, 20, 50, 100] } : {}) }, { label: 'composite' }],
    series: [{ label: AXES[ui.x] },
      ...data.runs.flatMap((v, i) => [
        { label: `${v.run.id} champion`, stroke: COLOURS[i], width: 2, spanGaps: true },
        { label: `${v.run.id} test`, stroke: COLOURS[i], paths: noLine, points: { show: true, size: 11, fill: '#fff', width: 2 } }])],
  }, [rounds, ...data.runs.flatMap((v) => [align(v, 'champion'), align(v, 'test')])], `${chosen.join(',')}|${ui.x}`);
}
