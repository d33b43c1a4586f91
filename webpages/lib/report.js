// The honest test report of one test run (test_runs.report, built by mutator/validity/report.py): champion vs
// seed paired by task on train, val and test, with the gap flag when a split's gain does not carry to test.
import { h, num, signed } from './util.js';
import { TIPS, fig } from './tips.js';

const SPLITS = ['train', 'val', 'test'];

function p(value) {
  return value === null || value === undefined ? '—' : value < 0.001 ? value.toExponential(1) : value.toPrecision(3);
}

function splitRow(name, s, gap, gapZ) {
  if (!s) return h('tr', { 'data-split': name }, h('th', {}, name), h('td', { colspan: 8, class: 'hint' }, 'no stored evaluation of both genomes'));
  const d = s.delta;
  const flagged = gap && gap.flag;
  return h('tr', { 'data-split': name, class: flagged ? 'gap' : '' }, h('th', {}, name),
    h('td', {}, fig(String(s.n_tasks), TIPS.reportTasks)),
    h('td', {}, fig(num(s.seed_composite), TIPS.reportSeed)),
    h('td', {}, fig(num(s.champion_composite), TIPS.reportChampion)),
    h('td', {}, fig(`${signed(d.mean)} ± ${num(d.se)}`, TIPS.reportDelta)),
    h('td', {}, fig(d.ci_low === null ? '—' : `[${signed(d.ci_low)}, ${signed(d.ci_high)}]`, TIPS.reportCi)),
    h('td', {}, fig(signed(s.delta_eval.mean), TIPS.reportDeltaEval)),
    h('td', {}, fig(`${s.sign.wins}/${s.sign.losses}/${s.sign.ties} p ${p(s.sign.p_value)}`, TIPS.reportSign)),
    h('td', {}, gap ? fig(`${gap.z === null ? '∞' : num(gap.z, 1)} SE${flagged ? ' ⚠' : ''}`, TIPS.reportGap(gapZ), { class: flagged ? 'warn' : '' }) : '—'));
}

// Several eval models: one row per model of a paired comparison (its by_model), under the comparison's own row.
function modelRows(s, attrs, tip, blanks) {
  return Object.entries(s?.by_model || {}).map(([model, m]) =>
    h('tr', { ...attrs, 'data-model': model, class: 'sub' }, h('th', {}, `· ${model}`),
      h('td', {}, String(m.n_tasks)), h('td', {}, num(m.seed_composite)), h('td', {}, num(m.champion_composite)),
      h('td', {}, fig(`${signed(m.delta.mean)} ± ${num(m.delta.se)}`, tip)),
      h('td', {}, m.delta.ci_low === null ? '—' : `[${signed(m.delta.ci_low)}, ${signed(m.delta.ci_high)}]`),
      Array.from({ length: blanks }, () => h('td', {}, ''))));
}

export function reportView(report) {
  if (!report) return null;
  const names = [...new Set(SPLITS.flatMap((s) => Object.keys(report.splits[s]?.mcnemar || {})))].sort();
  const flags = ['train', 'val'].filter((s) => report.gap[s]?.flag);
  return h('div', { class: 'report' },
    lookLine(report.suite, report.look),
    h('table', { class: 'figs report-table' },
      h('thead', {}, h('tr', {}, h('th', {}, 'split'), h('th', { title: TIPS.reportTasks }, 'tasks'), h('th', { title: TIPS.reportSeed }, 'seed'),
        h('th', { title: TIPS.reportChampion }, 'champion'), h('th', { title: TIPS.reportDelta }, 'Δcomposite ± SE'),
        h('th', { title: TIPS.reportCi }, '95% CI'), h('th', { title: TIPS.reportDeltaEval }, 'Δeval'),
        h('th', { title: TIPS.reportSign }, 'sign W/L/T'), h('th', { title: TIPS.reportGap(report.gap_z) }, 'gap vs test'))),
      h('tbody', {}, SPLITS.flatMap((s) => [splitRow(s, report.splits[s], s === 'test' ? null : report.gap[s], report.gap_z),
        ...modelRows(report.splits[s], { 'data-split': s }, TIPS.reportDelta, 3)]))),
    flags.map((s) => h('p', { class: 'warn-line' }, `⚠ GAP: the ${s} gain exceeds test's by ${signed(report.gap[s].diff)} `
      + `(${report.gap[s].z === null ? '∞' : num(report.gap[s].z, 1)} SE > ${report.gap_z}) — it does not carry to held-out tasks`)),
    names.length ? h('details', { class: 'mcnemar' }, h('summary', { title: TIPS.reportMcnemar }, `McNemar per pass/fail test (${names.length})`),
      h('table', { class: 'figs' }, h('thead', {}, h('tr', {}, h('th', {}, 'test'), SPLITS.map((s) => h('th', { title: TIPS.reportMcnemar }, s)))),
        h('tbody', {}, names.map((n) => h('tr', {}, h('th', {}, n), SPLITS.map((s) => {
          const m = report.splits[s]?.mcnemar?.[n];
          return h('td', {}, m ? fig(`+${m.only_a}/−${m.only_b} p ${p(m.p_value)}`, TIPS.reportMcnemar) : '—');
        })))))) : null,
    controlView(report.control), controlFailedView(report.control_failed), amongView(report.with_skills),
    harmView(report.harm?.seed, 'the seed'), harmView(report.harm?.none, 'no skill'),
    h('p', { class: 'hint' }, 'val Δ is the champion\'s selection score: it is biased up by the choice itself; test is not.'));
}

// The no-skill control (report.control): the test suite measured with no skill installed; seed − none and
// champion − none, paired by task like champion − seed. Absent when the test ran with --no-control.
function controlView(control) {
  if (!control) return null;
  const row = (name) => {
    const s = control[name];
    if (!s) return h('tr', {}, h('th', {}, `${name} vs none`), h('td', { colspan: 6, class: 'hint' }, 'no paired tasks'));
    const d = s.delta;
    return h('tr', { 'data-control': name }, h('th', {}, `${name} vs none`),
      h('td', {}, fig(String(s.n_tasks), TIPS.reportTasks)),
      h('td', {}, fig(num(s.none_composite), TIPS.controlNone)),
      h('td', {}, fig(num(s.skill_composite), TIPS.controlSkill)),
      h('td', {}, fig(`${signed(d.mean)} ± ${num(d.se)}`, TIPS.controlDelta)),
      h('td', {}, fig(d.ci_low === null ? '—' : `[${signed(d.ci_low)}, ${signed(d.ci_high)}]`, TIPS.reportCi)),
      h('td', {}, fig(`${s.sign.wins}/${s.sign.losses}/${s.sign.ties} p ${p(s.sign.p_value)}`, TIPS.reportSign)));
  };
  // several eval models: each model's own skill − none (in by_model, 'seed' is the no-skill side)
  const models = (name) => modelRows(control[name], { 'data-control': name }, TIPS.controlDelta, 1);
  return h('table', { class: 'figs control-table', 'data-control-table': '' },
    h('thead', {}, h('tr', {}, h('th', { title: TIPS.controlNone }, 'no-skill control (test)'), h('th', {}, 'tasks'),
      h('th', { title: TIPS.controlNone }, 'none'), h('th', { title: TIPS.controlSkill }, 'with skill'),
      h('th', { title: TIPS.controlDelta }, 'Δ ± SE'), h('th', { title: TIPS.reportCi }, '95% CI'), h('th', { title: TIPS.reportSign }, 'sign W/L/T'))),
    h('tbody', {}, ['seed', 'champion'].flatMap((name) => [row(name), ...models(name)])));
}

// A no-skill control that failed (its cells are not results): said so, with its cells by status and the cause;
// champion vs seed above stands without it.
function controlFailedView(failed) {
  if (!failed) return null;
  const counts = Object.entries(failed.failures || {}).map(([status, n]) => `${n} ${status}`).join(', ');
  return h('div', { class: 'control-failed', 'data-control-failed': '' },
    h('b', {}, 'No-skill control FAILED'), ` — ${counts || 'no result'} of its ${failed.cells} cells; no seed-vs-none or champion-vs-none figures (champion vs seed above does not rest on it).`,
    h('details', {}, h('summary', {}, 'cause'), h('pre', {}, failed.cause || '')));
}

// Several eval models: one row per model of a paired comparison (by_model; its 'seed' side is the reference).
// "Look k of n at this test suite for this skill" (test_runs.look; mutator/store/looks.py).
function lookLine(suite, look) {
  if (!look) return null;
  return h('p', { class: 'hint', 'data-look': String(look.k), title: TIPS.reportLook },
    `Look ${look.k} of ${look.looks} at test suite ${suite} for this skill`
    + (look.repeat_of ? ` (a repeat of test #${look.repeat_of}, served from the cache)` : '') + (look.sealed ? ' · sealed' : ''));
}

// No task harmed (report.harm, mutator/validity/harm.py): per task, champion vs a reference over replicate cells.
function harmView(found, reference) {
  if (!found || !found.tasks.length) return null;
  const shown = found.tasks;   // every task, worst first
  const [rc, rr] = found.replicates;
  return h('details', { class: 'harm', 'data-harm': reference },
    h('summary', { title: TIPS.reportHarm }, `Per task vs ${reference}: ${found.flagged.length} flagged worse, `
      + `${found.below.length} below of ${found.tasks.length} (${rc} vs ${rr} replicates)`),
    found.can_flag ? h('p', { class: 'hint' }, `minimum detectable harm ${num(found.mdh)} composite (80% power)`)
      : h('p', { class: 'warn-line' }, `⚠ at ${rc} vs ${rr} replicates the smallest p is ${p(found.min_p)}: no task can be flagged`),
    h('table', { class: 'figs' }, h('thead', {}, h('tr', {}, h('th', {}, 'task'), h('th', {}, 'verdict'), h('th', {}, 'Δ'),
      h('th', {}, 'champion cells'), h('th', {}, `${reference} cells`), h('th', {}, 'p(worse)'))),
    h('tbody', {}, shown.map((r) => h('tr', { class: r.verdict === 'worse' ? 'warn' : '' }, h('th', {}, r.task),
      h('td', {}, r.verdict === 'same' ? (r.delta < 0 ? 'below' : 'same') : r.verdict), h('td', {}, signed(r.delta)),
      h('td', {}, r.champion.map((v) => num(v, 3)).join(' ')), h('td', {}, r.reference.map((v) => num(v, 3)).join(' ')),
      h('td', {}, p(r.p_worse)))))));
}

// A run evaluated among other skills (--with-skills): which were installed beside it and, when measured, the
// champion among them vs alone on the test suite, with both evaluations' stored trigger rates.
function amongView(w) {
  if (!w) return null;
  const a = w.alone, t = w.triggers || {};
  const rate = (side, key) => num(t[side]?.[key], 3);
  return h('div', { class: 'among', id: 'test-among' },
    h('p', { 'data-skills': w.skills.join(',') }, `Evaluated among other skills (--with-skills ${w.dir}): ${w.skills.join(', ')} installed beside it in every cell (digest ${w.digest}).`),
    a ? h('p', { 'data-among': '' }, `Champion among them vs alone, ${a.n_tasks} tasks: alone ${num(a.alone_composite)} · among ${num(a.among_composite)} · Δ ${signed(a.delta.mean)} ± ${num(a.delta.se)}`
      + ` · trigger recall among ${rate('among', 'recall')} / alone ${rate('alone', 'recall')} · false-trigger rate among ${rate('among', 'false_trigger_rate')} / alone ${rate('alone', 'false_trigger_rate')}`)
      : h('p', { class: 'hint' }, 'the champion alone was not measured (--no-control)'));
}

