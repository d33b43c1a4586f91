// Round Analysis: one attempt on a chosen split — the mutation and its diff, verdict and gate figures,
// bars vs the seed, the per-test grid, the task × replicate cell grid with drill-down, a metric scatter.
import { go, link, openDrawer } from '../lib/shell.js';
import { api, mount, h, num, scoreColour, short, signed, usd, verdictBadge } from '../lib/util.js';
import { bars, chart, destroyCharts, noLine } from '../lib/charts.js';
import { confirmView, criticTable, looksView, nullsView, screenView } from '../lib/checks.js';
import { TIPS, fig } from '../lib/tips.js';
import { sections } from '../lib/keyed.js';
import { comparatorLine, sideBySide, taskDeltasSection } from '../lib/gateview.js';
import { notesView } from '../lib/notes.js';
import { mutatorButton } from '../lib/mutatorview.js';
import { cellSkillUse, skillUseSection } from '../lib/skilluse.js';

const METRICS = ['score', 'cost_usd', 'steps', 'duration_ms', 'output_tokens', 'input_tokens'];
const GATE_TIPS = {
  delta: 'Δ = mean over tasks of the paired per-task composite deltas (candidate − incumbent)',
  threshold: 'minImprovement − t·SE: Δ below it is a decisive loss. The lenient gate keeps at or above it; the keep rule positive (the default) keeps only Δ > minImprovement',
  se: 'SE = s/√n, s pooled over this run\'s comparisons',
  s_r: 's_r = C_n·MAD of this comparison\'s n deltas, C_n the finite-sample factor (Park, Kim & Wang 2020) that makes it unbiased for σ; SD/c4(n) when MAD is 0',
  df: 'pooled degrees of freedom Σ(n_r − 1)', t: 'the critical value: with the sign-flip method, −q where q is the 1 − Φ(gateZ) quantile of Δ*/SE* over sign patterns of the deltas; with the t method, the Student-t quantile of Φ(gateZ) at df',
  method: 'signflip: t from sign flips of this comparison\'s own deltas (a false-reject rate of 1 − Φ(gateZ) for any symmetric noise); t: the Student-t quantile (exact for normal deltas). t_student is shown for reference',
  flip: 'the sign-flip reference set and its boundary rule: Δ exactly on the threshold is rejected with probability ρ = (α − P(T* < q))/P(T* = q), decided by this comparison\'s stored coin u',
  delta_eval: 'the eval part of Δ: mean over tasks of the paired per-task eval deltas',
  delta_cost: 'the cost part of Δ: −wCost·(paired per-task cost delta)/seedCost, averaged over tasks',
  delta_steps: 'the steps part of Δ: −wSteps·(paired per-task steps delta)/seedSteps, averaged over tasks',
  s: 's = Σ(n_r−1)s_r / Σ(n_r−1), the df-weighted mean of the (unbiased) s_r over every comparison of this run so far',
  n: 'val tasks paired in this comparison (with several eval models: task × model pairs)', z: 'the gateZ this run was configured with (runs.gate_z)', early_z: 'the z of the sequential val look that decided this attempt early (stricter than the run\'s gateZ), as the gate stored it',
  min_improvement: 'minImprovement as the gate stored it for this decision', t_stat: 'the t statistic: Δcomposite / SE of the figures the gate stored, beside the critical value t* it was compared with',
  tie: 'the tie rule (score.tieRule): a tie is a change the gate keeps with Δ below minImprovement; under noAddedCost it is kept only when its cost + steps terms do not fall by more than z = 3 standard errors of their per-task changes (any fall when those carry no noise); keep keeps every tie',
  by_model: 'this eval model\'s own Δ: the mean of its paired per-task deltas, each composite against the seed on that model; Δ is the mean over models',
};

function diffView(text) {
  if (!text) return h('p', { class: 'hint' }, 'no diff');
  return h('pre', { class: 'diff' }, text.split('\n').map((line) => h('span', {
    class: line.startsWith('+') && !line.startsWith('+++') ? 'add' : line.startsWith('-') && !line.startsWith('---') ? 'del'
      : line.startsWith('@@') ? 'hunk' : line.startsWith('diff ') ? 'file' : '' }, line + '\n')));
}

function streamView(events) {
  return h('div', { class: 'stream' }, events.map((ev) => {
    if (ev.type === 'assistant' || ev.type === 'user') {
      const parts = (ev.message?.content || []).map((c) => c.type === 'text' ? c.text
        : c.type === 'tool_use' ? `→ ${c.name} ${JSON.stringify(c.input).slice(0, 400)}`
          : c.type === 'tool_result' ? `← ${(typeof c.content === 'string' ? c.content : JSON.stringify(c.content)).slice(0, 400)}` : c.type);
      return h('div', { class: `ev ev-${ev.type}` }, h('b', {}, ev.type), ' ', parts.join('\n'));
    }
    return h('div', { class: `ev ev-${ev.type}` }, h('b', {}, ev.type + (ev.subtype ? '/' + ev.subtype : '')), ' ',
      JSON.stringify(Object.fromEntries(Object.entries(ev).filter(([k]) => !['type', 'subtype'].includes(k)))).slice(0, 600));
  }));
}

function cellDrawer(store, cellId) {
  return async () => {
    const data = await api(`cells/${cellId}`, { store });
    const c = data.cell;
    const file = (name) => data.files[name] ? h('pre', { class: 'log' }, data.files[name].text || '(empty)', data.files[name].truncated ? '\n… (truncated)' : '') : h('p', { class: 'hint' }, 'not recorded');
    return h('div', { class: 'cell-drawer', 'data-cell': c.id },
      h('h3', {}, `${c.task_id} · replicate ${c.replicate} `, h('span', { class: `badge c-${c.status}` }, c.status)),
      h('p', {}, `score ${num(c.score, 3)} · cost ${usd(c.cost_usd)} · ${c.steps} steps · ${c.duration_ms} ms · ${c.agent_subtype || ''}`),
      h('p', { class: 'hint cell-where' }, `ran on ${c.node === 'local' || !c.node ? 'this machine' : `Ray node ${c.node}`}`, c.retries ? ` · ${c.retries} infrastructure ${c.retries === 1 ? 'retry' : 'retries'} (not the skill's doing)` : ''),
      c.error ? h('p', { class: 'error' }, c.error) : null,
      cellSkillUse(c.skill_use),
      h('h4', {}, 'Grader result'), h('div', { class: 'tests-row' }, Object.entries(c.tests).map(([n, s]) => h('span', { class: 'chip', style: { background: scoreColour(s) } }, `${n} ${num(s, 2)}`))),
      file('grade.stdout'),
      h('details', {}, h('summary', {}, 'Error log (grade.stderr, agent.stderr)'), h('h4', {}, 'grade.stderr'), file('grade.stderr'), h('h4', {}, 'agent.stderr'), file('agent.stderr')),
      h('h4', {}, `Agent stream (${data.events.length} events)`), streamView(data.events));
  };
}

export async function render(root, state, ui) {
  if (!state.run) { mount(root, h('p', {}, 'Pick a run.')); return; }
  const split = state.params.get('split') === 'train' ? 'train' : 'val';
  const runDetail = await api(`runs/${state.run}`, { store: state.store });
  let id = Number(state.arg);
  let found = null;
  if (state.arg === null) {   // no attempt named: the newest decided one
    const last = runDetail.attempts.filter((a) => a.verdict).pop() || runDetail.attempts[0];
    if (!last) { mount(root, h('p', {}, 'No attempts yet.')); return; }
    id = last.id;
  } else if (!runDetail.attempts.some((a) => a.id === id)) {   // older than the window, or not this run's
    found = /^[0-9]{1,12}$/.test(state.arg) ? await api(`attempts/${id}`, { store: state.store, split }).catch(() => null) : null;
    if (!found || found.run.id !== state.run) {   // never another run's figures: say so, offer this run's
      mount(root, h('section', { id: 'unknown' }, h('h2', {}, `No attempt ${state.arg} in run ${state.run}`),
        found ? h('p', {}, `Attempt ${state.arg} belongs to run ${found.run.id}: `, h('a', { href: link('round', id, { run: found.run.id }) }, 'open it there')) : null,
        h('p', {}, `The attempts of ${state.run}:`),
        h('ul', { id: 'known-attempts' }, runDetail.attempts.map((x) => h('li', {}, h('a', { href: link('round', x.id) }, `round ${x.round}${x.sibling ? '.' + x.sibling : ''} · ${x.verdict || x.stopped || x.status} (attempt ${x.id})`))))));
      return;
    }
  }
  const [d, diff] = await Promise.all([found || api(`attempts/${id}`, { store: state.store, split }), api(`attempts/${id}/diff`, { store: state.store })]);
  const a = d.attempt;
  // Each section is rebuilt only when its own data moved (lib/keyed.js); the others keep their DOM.
  const S = sections(ui);
  const options = runDetail.attempts.map((x) => [x.id, x.round, x.sibling, x.verdict, x.stopped, x.status, x.genome_hash]);
  const top = S.get('top', [options, id, split, d.run.val, d.run.suite], () => {
    const picker = h('select', { id: 'attempt-picker', onchange: (e) => go('round', e.target.value, { split }) },
      runDetail.attempts.map((x) => h('option', { value: x.id, selected: x.id === id }, `round ${x.round}${x.sibling ? '.' + x.sibling : ''} · ${x.verdict || x.stopped || x.status} · ${short(x.genome_hash)}`)));
    const splitPick = h('select', { id: 'split-picker', onchange: (e) => go('round', id, { split: e.target.value }) },
      ['val', 'train'].map((s) => h('option', { value: s, selected: s === split }, `${s} (${s === 'val' ? d.run.val : d.run.suite})`)));
    return h('section', { class: 'row', id: 'round-top' }, picker, splitPick, h('a', { href: '#', onclick: (e) => { e.preventDefault(); go('lineage'); } }, 'lineage →'));
  });
  const verdict = S.get('verdict', [state.store, a, d.siblings, d.run, split], () => {
    const g = a.gate || {};
    const gateRows = [['Δcomposite', signed(a.delta), GATE_TIPS.delta], ['gate threshold', signed(a.gate_threshold), GATE_TIPS.threshold],
      ['Δeval', signed(a.delta_eval), GATE_TIPS.delta_eval], ['Δcost term', signed(a.delta_cost), GATE_TIPS.delta_cost],
      ['Δsteps term', signed(a.delta_steps), GATE_TIPS.delta_steps],
      ['SE', num(a.gate_se), GATE_TIPS.se], ['s (pooled)', num(a.gate_s), GATE_TIPS.s], ['s_r (this round)', num(g.s_r), GATE_TIPS.s_r],
      ['df', a.gate_df ?? '—', GATE_TIPS.df], ['t statistic (Δ / SE)', num(a.gate_t_stat, 3), GATE_TIPS.t_stat],
      ['critical value t*', num(a.gate_t, 3), GATE_TIPS.t], ['n tasks', a.gate_n ?? '—', GATE_TIPS.n],
      ['gateZ of this run', d.run.gate_z ?? '—', GATE_TIPS.z],
      ...(g.gate_z !== undefined && g.gate_z !== null && g.gate_z !== d.run.gate_z ? [['early-look z (sequential val)', g.gate_z, GATE_TIPS.early_z]] : []),
      ['minImprovement', g.min_improvement ?? '—', GATE_TIPS.min_improvement],
      ['method', g.method === 'signflip' ? `sign flips (Student t would be ${num(g.t_student, 3)})` : (g.method === 't' || g.scale_method ? 'Student t' : '—'), GATE_TIPS.method],
      ...(g.tie ? [['tie rule', g.tie.tie
        ? `a tie: rule ${g.tie.rule} · Δcost+steps ${signed(g.tie.delta_cost)} ± ${num(g.tie.se)}${g.tie.adds_cost ? ' (adds cost)' : ''} → ${g.tie.keep ? 'KEEP' : 'REJECT'}`
        : `not a tie, so the tie rule (${g.tie.rule}) does not apply · the gate ${g.tie.gate_keep ? 'keeps' : 'rejects'} → ${g.tie.keep ? 'KEEP' : 'REJECT'}`, GATE_TIPS.tie]] : []),
      ...(g.flip ? [['sign patterns', `${g.flip.patterns}${g.flip.exhaustive ? ' (all)' : ` (sampled, seed ${g.flip.sample_seed})`} · on the threshold: reject w.p. ρ ${num(g.flip.rho, 3)}, coin u ${num(g.flip.u, 3)}`, GATE_TIPS.flip]] : []),
      ...Object.entries(g.by_model || {}).map(([m, x]) => [`Δ ${m}`, signed(x.delta), GATE_TIPS.by_model])];
    return h('section', { class: 'cols', id: 'round-verdict' },
      h('div', {}, h('h2', {}, `Round ${a.round}${a.sibling ? '.' + a.sibling : ''} `, verdictBadge(a.verdict, a.verdict_note, a.stopped)),
        h('p', { class: 'reason', id: 'verdict-reason' }, a.reason || ''),
        comparatorLine(a),
        notesView(state.store, String(a.id), a.notes),
        h('p', { class: 'summary' }, a.summary || '—', ' ', mutatorButton(state.store, a)), h('h4', {}, 'Reasoning'), h('p', { class: 'reasoning' }, a.reasoning || '—'),
        a.error ? h('p', { class: 'error' }, a.error) : null,
        h('p', {}, `genome ${short(a.genome_hash)} ← parent ${short(a.parent_hash)} · ${a.diff_stat || ''}`,
          a.skills_touched ? h('span', { class: 'skills-touched', title: 'the skill of the skill set this change edited' }, ` · skill ${a.skills_touched}`) : null),
        d.siblings.length > 1 ? h('p', {}, 'siblings: ', d.siblings.map((s) => h('a', { href: '#', onclick: (e) => { e.preventDefault(); go('round', s.id, { split }); }, title: s.reason || '' }, `.${s.sibling} ${s.verdict || ''}${s.verdict_note ? ' (' + s.verdict_note + ')' : ''} `))) : null),
      h('div', {}, h('h3', {}, 'Verdict vs the incumbent'), h('table', { class: 'kv', id: 'gate' }, h('tbody', {}, gateRows.map(([k, v, tip]) => h('tr', { title: tip || '' }, h('th', {}, k), h('td', {}, v))))),
        confirmView(a.confirm, a, d.run), nullsView(a.nulls), screenView(a), looksView(a), criticTable(a.critic)));
  });
  const diffSection = S.get('diff', diff, () => h('section', { id: 'round-diff' }, h('h3', {}, `Diff vs parent ${short(diff.parent)}`), diffView(diff.diff), diff.note ? h('p', { class: 'hint' }, diff.note) : null));
  const f = d.figures;
  const keys = ['seed', 'parent', 'candidate'].filter((k) => f[k]);
  const scores = S.get('scores', [a.id, split, d.suite, f, a.comparator], () => {
    const figTable = h('table', { class: 'figs' }, h('thead', {}, h('tr', {}, h('th', {}, ''), ['composite', 'eval', 'cost/cell', 'steps'].map((x) => h('th', {}, x)))),
      h('tbody', {}, ['seed', 'parent', ...(a.comparator ? ['comparator'] : []), 'candidate'].flatMap((k) => [[k, f[k]], ...Object.entries(f[k]?.by_model || {}).map(([m, x]) => [`${k} · ${m}`, x])]).map(([k, x]) => h('tr', { class: k.includes(' · ') ? 'per-model' : '', 'data-row': k }, h('th', { title: k.startsWith('comparator') ? 'the evaluation the gate compared with' : '' }, k.replace(/^comparator/, `compared with (${a.comparator?.role})`)), x ? [fig(num(x.composite), TIPS.composite), fig(num(x.eval, 3), TIPS.eval), fig(usd(x.cost), TIPS.cost), fig(num(x.steps, 2), TIPS.steps)].map((y) => h('td', {}, y)) : h('td', { colspan: 4 }, k === 'candidate' && a.incomplete ? `incomplete: ${a.incomplete.n_done}/${a.incomplete.n_cells} cells, ${a.incomplete.why}` : 'not evaluated on this split')))));
    const barsBox = h('div', { class: 'chart small', id: 'bars' });
    const section = h('section', { class: 'cols', id: 'round-scores' }, h('div', {}, h('h3', {}, `Scores on ${split} (${d.suite})`), figTable), h('div', {}, h('h3', {}, 'vs the seed'), barsBox));
    section.box = barsBox;
    return section;
  });
  const look = ui.look?.attempt === a.id ? ui.look.look : null;   // a look the reader picked, else the deciding one
  const deltas = split === 'val' ? S.get('task-deltas', [a.id, a.task_deltas, a.looks, look, a.delta, a.gate_threshold, a.comparator, d.cells, d.comparator_cells], () => taskDeltasSection(d,
    (row) => openDrawer(() => sideBySide(row, d, (cellId) => openDrawer(cellDrawer(state.store, cellId), { live: false })), { live: false }),
    (picked) => { ui.look = { attempt: a.id, look: picked }; render(root, state, ui); }, look)) : null;
  ui.x = ui.x || 'cost_usd'; ui.y = ui.y || 'score';
  const evaluated = d.evaluation ? [
    S.get('grid', d.tests, () => {
      const names = d.tests.names;
      return h('section', { id: 'round-grid' }, h('h3', {}, 'Per-test grid (mean over replicates)'), h('table', { class: 'grid', id: 'test-grid' }, h('thead', {}, h('tr', {}, h('th', {}, 'task'), names.map((n) => h('th', {}, n)))),
        h('tbody', {}, Object.entries(d.tests.grid).map(([task, per]) => h('tr', {}, h('th', {}, task),
          names.map((n) => h('td', { style: { background: scoreColour(per[n]) }, title: `${task} · ${n}: mean over replicates` }, num(per[n], 2))))))));
    }),
    S.get('cells', [state.store, d.cells], () => {
      const rowOf = (c) => (c.model ? `${c.task_id}@${c.model}` : c.task_id);   // several eval models: a row per (task, model)
      const tasks = [...new Set(d.cells.map(rowOf))];
      const reps = [...new Set(d.cells.map((c) => c.replicate))].sort((x, y) => x - y);
      const cellGrid = h('table', { class: 'grid cells', id: 'cell-grid' }, h('thead', {}, h('tr', {}, h('th', {}, 'task'), reps.map((r) => h('th', {}, `r${r}`)))),
        h('tbody', {}, tasks.map((t) => h('tr', {}, h('th', {}, t), reps.map((r) => {
          const c = d.cells.find((x) => rowOf(x) === t && x.replicate === r);
          return c ? h('td', { class: `cell c-${c.status}`, 'data-cell': c.id, style: { background: c.status === 'ok' ? scoreColour(c.score) : '#f3b5b5' }, title: `${t} r${r}: ${c.status} · score ${num(c.score, 3)} — click for the stream, grader result and errors`, onclick: () => openDrawer(cellDrawer(state.store, c.id), { live: false }) }, c.status === 'ok' ? num(c.score, 2) : c.status) : h('td', {}, '·');
        })))));
      return h('section', { id: 'round-cells' }, h('h3', {}, 'Cells (task × replicate) — click one'), failureLine(d.cells), cellGrid);
    }),
    S.get('skill-use', [a.skill_use, split], () => skillUseSection(a.skill_use, split)),
    S.get('scatter', [a.id, split, ui.x, ui.y, d.cells], () => {
      const axisPick = (key) => h('select', { onchange: (e) => { ui[key] = e.target.value; render(root, state, ui); } }, METRICS.map((m) => h('option', { value: m, selected: m === ui[key] }, m)));
      const box = h('div', { class: 'chart', id: 'scatter' });
      const section = h('section', { id: 'round-scatter' }, h('h3', {}, 'Metric scatter over this round\'s cells'), h('div', { class: 'row' }, 'x ', axisPick('x'), ' y ', axisPick('y')), box);
      section.box = box;
      return section;
    }),
  ] : [a.incomplete ? h('p', { class: 'error', id: 'incomplete' }, `incomplete: ${a.incomplete.n_done}/${a.incomplete.n_cells} cells, ${a.incomplete.why}`,
    h('small', { class: 'hint' }, ' (re-running the same command resumes it; finished cells are kept)'))
    : h('p', { class: 'hint' }, `Not evaluated on ${split}${split === 'train' ? ' (only validation-selected candidates are evaluated on train)' : ''}.`),
  S.get('skill-use', [a.skill_use, split], () => skillUseSection(a.skill_use, split))];   // every round's, with why
  mount(root, top, verdict, deltas, diffSection, scores, evaluated);
  if (deltas && S.fresh('task-deltas')) deltas.draw();
  if (!keys.length) destroyCharts('round-bars');
  const barsBox = scores.box;
  barsBox.dataset.labels = keys.join(',');
  barsBox.dataset.attempt = a.id;
  if (keys.length && S.fresh('scores')) {   // the same figures: the drawn bars stay as they are
    barsBox.uplot = chart('round-bars', barsBox, {
      height: 200, scales: { x: { time: false, range: [-0.5, keys.length - 0.5] }, y: { range: (u, lo, hi) => [Math.min(0, lo), Math.max(1, hi)] } },
      axes: [{ values: (u, ticks) => ticks.map((t) => keys[t] ?? '') , splits: () => keys.map((_, i) => i) }, { label: 'score' }],
      series: [{}, { label: 'composite', fill: '#1f6feb99', stroke: '#1f6feb', paths: bars({ size: [0.35], align: -1 }) },
        { label: 'eval', fill: '#2da44e99', stroke: '#2da44e', paths: bars({ size: [0.35], align: 1 }) }],
    }, [keys.map((_, i) => i), keys.map((k) => f[k].composite), keys.map((k) => f[k].eval)], `${a.id}|${split}|${keys.join(',')}`);
  }
  if (d.evaluation && d.cells.length && S.fresh('scatter')) {
    const sorted = d.cells.slice().sort((p, q) => (p[ui.x] ?? 0) - (q[ui.x] ?? 0));
    chart("round-scatter", evaluated[3].box, {
      height: 260, scales: { x: { time: false } }, axes: [{ label: ui.x }, { label: ui.y }],
      series: [{ label: ui.x }, { label: ui.y, stroke: '#8250df', paths: noLine, points: { show: true, size: 8, fill: '#8250df66' } }],
    }, [sorted.map((c) => c[ui.x] ?? 0), sorted.map((c) => c[ui.y] ?? null)], `${a.id}|${split}|${ui.x}|${ui.y}`);
  }
}

// Failure counts of the shown evaluation, by who failed (README "Failures"): agent_error and timeout are the
// agent's (scored 0); grader_error and infra_error are nobody's verdict on the skill and are redone on resume.
function failureLine(cells) {
  const counts = {};
  for (const c of cells) if (c.status !== 'ok') counts[c.status] = (counts[c.status] || 0) + 1;
  const failed = Object.values(counts).reduce((a, b) => a + b, 0);
  const kinds = Object.entries(counts).sort().map(([k, n]) => `${n} ${k}`).join(', ');
  return h('p', { id: 'cell-failures', class: failed ? 'error' : 'hint', title: 'an evaluation with more failed cells than maxFailedShare gets no gate decision; grader_error and infra_error cells are re-graded / re-run when the run resumes' },
    failed ? `failed cells: ${failed} of ${cells.length} (${kinds})` : `no failed cells (${cells.length} cells)`);
}
