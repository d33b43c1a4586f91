// The A/A view (runs.kind = 'aa'): each byte-identical copy's Δ against its gate band, and how often the gate
// called a difference that is not there, with an exact binomial 95% CI. Data: run detail's `aa` (server/aa_view.py).
import { h, num, signed, verdictBadge } from './util.js';
import { chart, noLine, points } from './charts.js';
import { fig } from './tips.js';

const TIP = {
  falseCalls: 'copies where the gate called a difference between identical skills: a REJECT (Δ < minImprovement − t·SE) or a false improvement (Δ > minImprovement + t·SE)',
  ci: 'exact (Clopper–Pearson) binomial 95% interval over these copies (scipy binomtest, method exact); each copy is compared with its own fresh re-evaluation of the seed, so the copies are independent trials (runs from before that change shared one seed evaluation: correlated, the interval is optimistic)',
  side: 'share of copies with this false call, its exact binomial 95% CI, and the design rate 1 − Φ(gateZ) it should match',
  design: (z) => `what the gate is built for: P(Z > gateZ = ${z}) per side, 2× for both sides (gateZ 0 = the raw minImprovement gate, no noise calibration)`,
  delta: 'Δ = mean over val tasks of the paired per-task composite deltas (copy − seed)',
  band: 'the gate band: REJECT below minImprovement − t·SE, a false improvement above minImprovement + t·SE',
};

const pct = (x) => (x === null || x === undefined ? '—' : `${(100 * x).toFixed(1)}%`);

export function aaView(aa) {
  const box = h('div', { class: 'chart', id: 'aa-chart' });
  const section = h('section', { id: 'aa-view' },
    h('h3', {}, 'A/A: the gate against identical copies ', h('small', {}, 'every called difference is a false call')),
    h('p', { id: 'aa-rate' },
      fig(`false calls ${aa.false_calls} of ${aa.n}`, TIP.falseCalls), ' = ', fig(pct(aa.rate), TIP.falseCalls), ' · 95% CI ',
      fig(aa.ci_low === null ? '—' : `[${pct(aa.ci_low)}, ${pct(aa.ci_high)}]`, TIP.ci), ' · ',
      fig(`REJECT ${aa.rejects} · false improvements ${aa.false_improvements}`, TIP.falseCalls), ' · design ',
      fig(aa.design_both === null ? 'none (gateZ 0)' : `${pct(aa.design_one_side)} per side, ${pct(aa.design_both)} both`, TIP.design(aa.gate_z))),
    aa.reject_rate ? h('p', { id: 'aa-sides' },
      [['false REJECT', aa.reject_rate], ['beat +t·SE', aa.improvement_rate]].map(([label, r], i) => h('span', {},
        i ? ' · ' : '', fig(`${label} ${pct(r.rate)} [${pct(r.ci_low)}, ${pct(r.ci_high)}]`, TIP.side),
        ` (design ${pct(aa.design_one_side)})`)),
      aa.independent ? '' : ' · copies share one seed evaluation (an older A/A run): correlated') : '',
    box,
    h('table', { class: 'figs', id: 'aa-copies' }, h('thead', {}, h('tr', {}, ['copy', 'Δ', 'band', 'SE', 'verdict', 'called'].map((x) => h('th', {}, x)))),
      h('tbody', {}, aa.copies.map((c) => h('tr', { 'data-copy': c.copy, class: c.called ? 'below' : '' }, h('th', {}, c.copy),
        h('td', {}, fig(signed(c.delta), TIP.delta)), h('td', {}, fig(`[${signed(c.lower)}, ${signed(c.upper)}]`, TIP.band)),
        h('td', {}, fig(num(c.se), 'SE = s/√n, s pooled over this run\'s copies so far')), h('td', {}, verdictBadge(c.verdict)),
        h('td', {}, c.called ? (c.verdict === 'REJECT' ? 'false REJECT' : 'false improvement') : 'no'))))));
  return { section, draw: () => {
    if (!aa.n) return;
    chart('home-aa', box, {
      height: 240, scales: { x: { time: false } }, axes: [{ label: 'copy', incrs: [1, 2, 5, 10, 20, 50] }, { label: 'Δcomposite vs the seed' }],
      series: [{ label: 'copy' },
        { label: 'Δ (copy − seed)', stroke: '#8250df', paths: noLine, points: { ...points, fill: '#8250df' } },
        { label: 'REJECT below', stroke: '#d1242f', dash: [6, 4], width: 1 },
        { label: 'false improvement above', stroke: '#bf8700', dash: [6, 4], width: 1 }],
    }, [aa.copies.map((c) => c.copy), aa.copies.map((c) => c.delta), aa.copies.map((c) => c.lower), aa.copies.map((c) => c.upper)]);
  } };
}
