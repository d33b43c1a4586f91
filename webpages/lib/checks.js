// The checks around one attempt on Round Analysis: the critic's rows (attempts.critic: {gate, verdict,
// reason}, whatever gates mutator/critic/guards.py runs), the winner's-curse confirmation (attempts.confirm),
// the kill-only train screen (attempts.screen) and every look of sequential val (attempts.looks).
import { h, num, signed, usd } from './util.js';
import { TIPS, fig } from './tips.js';

// What each known gate checks; a gate added later still shows, with the generic text.
const GATES = {
  changed: 'the candidate differs from its parent',
  frontmatter: 'SKILL.md exists and its frontmatter parses and follows the Agent Skills spec',
  references: 'every file SKILL.md links or names exists in the skill',
  'data-files': 'the skill\'s data files parse',
  'non-empty': 'SKILL.md is present and not empty',
  size: 'the skill stays under the size caps (lines, bytes); a parent already over one may grow within the growth allowance (warn)',
  growth: 'growth vs the parent stays under the cap (bytes, in %)',
  fences: 'code fences are balanced',
  placeholders: 'no template placeholders ({{var}}, [PLACEHOLDER])',
  leftovers: 'no leftover TODO: / FIXME: / XXX: labels',
};

export function criticTable(rows) {
  if (rows === null || rows === undefined) return h('p', { class: 'hint', id: 'critic' }, 'critic not run (a seed, or the mutation failed first)');
  // verdicts: pass, warn (passes: a problem the parent already has, e.g. a size cap it was over and grew
  // within the allowance), fail (rejects the candidate); any other verdict shows as it is, styled as a fail.
  const failed = rows.filter((r) => r.verdict !== 'pass' && r.verdict !== 'warn').length;
  const warned = rows.filter((r) => r.verdict === 'warn').length;
  const look = (v) => (v === 'pass' ? ['pass', 'ok'] : v === 'warn' ? ['warn', 'warn'] : ['fail', 'bad']);
  return h('div', { id: 'critic' }, h('h4', {}, 'Critic ', h('small', { title: 'deterministic guards run before any evaluation is spent (mutator/critic/guards.py); one failing gate rejects the candidate, a warning does not' },
    `${rows.length - failed}/${rows.length} gates passed` + (warned ? ` (${warned} with a warning)` : ''))),
  h('table', { class: 'critic-table' }, h('thead', {}, h('tr', {}, h('th', {}, 'gate'), h('th', {}, 'verdict'), h('th', {}, 'reason'))),
    h('tbody', {}, rows.map((r) => h('tr', { class: look(r.verdict)[0], 'data-gate': r.gate },
      h('th', { title: GATES[r.gate] || 'a deterministic pre-evaluation check (mutator/critic/guards.py)' }, r.gate),
      h('td', {}, h('span', { class: `chip ${look(r.verdict)[1]}` }, r.verdict)), h('td', {}, r.reason || ''))))));
}

export function confirmView(confirm, attempt, run) {
  if (!confirm) {
    if (attempt.verdict !== 'KEEP' && !String(attempt.error || '').includes('overturned')) return null;
    return h('div', { id: 'confirm', class: 'hint' }, run.confirm ? 'Winner\'s-curse confirmation: not recorded for this attempt.'
      : 'Winner\'s-curse confirmation: off for this run (--confirm re-checks each keep on fresh val replicates).');
  }
  const g = confirm.gate || {};
  const f = confirm.figures || {};
  const composite = (x) => (x ? fig(num(x.composite), `${TIPS.confirmComposite}; ${x.n_cells} cells, eval ${num(x.eval, 3)}, cost/cell ${usd(x.cost)}`) : '—');
  const rows = [
    ['fresh Δcomposite', fig(signed(g.delta), TIPS.confirmDelta)],
    ['threshold', fig(signed(g.threshold), TIPS.confirmThreshold)],
    ...(g.keep_rule ? [['keep rule', fig(`${g.keep_rule.rule}: ${'posterior' in g.keep_rule ? `posterior ${signed(g.keep_rule.posterior)}`
      : `bar ${signed(g.keep_rule.bar)}`} → ${g.keep_rule.keep ? 'keep' : 'reject'}`, TIPS.confirmRule)]] : []),
    ['SE', fig(num(g.se), TIPS.confirmSe)], ['s_r (fresh)', fig(num(g.s_r), TIPS.confirmSr)],
    ['t', fig(num(g.t, 3), TIPS.confirmT)], ['df', fig(String(g.df ?? '—'), TIPS.confirmDf)], ['n tasks', fig(String(g.n ?? '—'), TIPS.confirmN)],
    ['new incumbent (fresh val)', composite(f.candidate)], ['old incumbent (fresh val)', composite(f.incumbent)],
    ['replicate salt', confirm.salt || '—'],
  ];
  return h('div', { id: 'confirm' }, h('h4', {}, 'Winner\'s-curse confirmation ',
    h('span', { class: `badge ${confirm.stands ? 'v-keep' : 'v-failed'}`, title: 'the keep stands only if the Δ measured on fresh val replicates is still kept by the gate under the run\'s keep rule' },
      confirm.stands ? 'stands' : 'OVERTURNED')),
  h('table', { class: 'kv' }, h('tbody', {}, rows.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, v))))));
}

const DECISIONS = { loss: 'decisive loss: stop, reject', win: 'decisive win: stop, keep' };

// Each look of val in waves: the gate over the first k replicates of every task, at that look's z
// (mutator/scoring/sequential.py); the verdict is the last look's.
export function looksView(a) {
  const looks = a.looks;
  if (!Array.isArray(looks) || !looks.length) return null;
  const used = looks[looks.length - 1];
  const head = ['look', 'replicates', 'cells', 'z', 'Δ', 'SE', 't', 'threshold', 'decision'];
  return h('div', { id: 'looks' }, h('h4', {}, 'Sequential val ',
    h('small', { title: 'val ran in waves (every task × one more replicate each); after each wave but the last a decisive loss or win at the early z decides; the last look\'s z keeps the overall false-reject rate at the design' },
      `decided at look ${used.look} · ${used.cells} cells`)),
  h('table', { class: 'looks-table' }, h('thead', {}, h('tr', {}, head.map((x) => h('th', {}, x)))),
    h('tbody', {}, looks.map((l) => h('tr', { 'data-look': l.look },
      h('td', {}, String(l.look)), h('td', {}, String(l.replicates)), h('td', {}, String(l.cells)), h('td', {}, num(l.z, 3)),
      h('td', {}, signed(l.gate.delta)), h('td', {}, num(l.gate.se)), h('td', {}, num(l.gate.t, 3)),
      h('td', {}, signed(l.gate.threshold)), h('td', { title: DECISIONS[l.decision] || 'no early decision: the next wave runs (or, at the last look, the gate decides)' }, l.decision || '—'))))));
}

// The kill-only screen on a few train tasks before val: SCREENED on a decisive loss, never a keep.
export function screenView(a) {
  const s = a.screen;
  if (!s) return null;
  const g = s.gate || {};
  const rows = [['tasks', (s.tasks || []).join(', ')], ['cells', `${s.cells} (${s.replicates} replicate${s.replicates === 1 ? '' : 's'} each)`],
    ['z', num(s.z, 2)], ['Δcomposite', g.delta === undefined ? '—' : signed(g.delta)],
    ['threshold', g.threshold === undefined ? '—' : signed(g.threshold)],
    ['decision', s.decision === 'loss' ? 'decisive loss: SCREENED' : s.skipped || 'passed: on to val']];
  return h('div', { id: 'screen' }, h('h4', {}, 'Train screen ',
    h('small', { title: 'a few train tasks, paired with the incumbent\'s cells on the same tasks and replicates; a decisive loss at the screen z stops the candidate before val, and the cells are reused by its train evaluation' }, s.decision === 'loss' ? 'screened out' : 'passed')),
  h('table', { class: 'kv' }, h('tbody', {}, rows.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, v))))));
}

// The round's null controls (config nullControls): the incumbent again, byte-identical, under a fresh replicate salt,
// gated against the incumbent as a candidate is: its Δ is this round's noise floor, and any call but a tie is false.
export function nullsView(nulls) {
  if (!nulls || !nulls.length) return null;
  const tip = 'a byte-identical copy of the round\'s incumbent evaluated on val under a fresh replicate salt and gated against the incumbent\'s own val evaluation as a candidate would be (never kept, never pooled into the gate\'s noise); a win or a loss is a false call';
  return h('div', { id: 'null-controls' }, h('h4', { title: tip }, 'Null controls: this round\'s noise floor'),
    h('table', { class: 'figs' }, h('thead', {}, h('tr', {}, ['copy', 'Δ vs incumbent', 'gate threshold', 'the gate would call it'].map((x) => h('th', {}, x)))),
      h('tbody', {}, nulls.map((n) => h('tr', { 'data-copy': String(n.copy), title: `salt ${n.salt} · evaluation ${n.evaluation_id}` },
        h('td', {}, String(n.copy)), h('td', {}, signed(n.delta)), h('td', {}, signed(n.threshold)),
        h('td', { class: n.call === 'tie' ? '' : 'below' }, n.call === 'tie' ? 'a tie' : `a ${n.call} (false)`))))));
}
