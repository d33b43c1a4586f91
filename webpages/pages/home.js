// Home: the launch drawer, the live round timeline (per-stage progress), the optimisation curve,
// the test timeline with "▶ Run test".
import { state as appState, go, openDrawer, closeDrawer, refresh } from '../lib/shell.js';
import { api, mount, h, post, num, signed, short, usd, verdictBadge, when } from '../lib/util.js';
import { chart, resetZoom, noLine } from '../lib/charts.js';
import { reportView } from '../lib/report.js';
import { metaSkillView, solveView, valQueries } from '../lib/runinfo.js';
import { aaView } from '../lib/aa.js';
import { sections } from '../lib/keyed.js';
import { commandView, notesView } from '../lib/notes.js';
import { TIPS, fig } from '../lib/tips.js';

// the run's spend by kind (mutator/after/spend.py run_spend: the same figure as the CLI and the Cost page)
const spendTip = (run) => [TIPS.spend, ...Object.entries((run.spend || {}).kinds || {}).map(([k, v]) => `${k}: ${usd(v)}`)].join('\n');

const STAGE_TIPS = {
  mutation: 'the mutator agent edits a copy of the parent skill and explains the change',
  critic: 'deterministic guards before any evaluation is spent (references, structure, size, growth)',
  build: 'cells of the validation evaluation whose build agent has started (cell dirs on disk)',
  grading: 'cells graded and written to the store (evaluations.n_done / n_cells)',
  score: 'Δcomposite vs the incumbent against the noise gate, then the verdict',
};

function stagePill(stage) {
  const p = stage.progress;
  const pct = p ? Math.round(100 * (stage.stage === 'build' ? p.n_started : p.n_done) / Math.max(1, p.n_cells)) : null;
  return h('div', { class: `stage s-${stage.state}`, title: `${stage.stage}: ${stage.state}${stage.detail ? ' — ' + stage.detail : ''}\n${STAGE_TIPS[stage.stage]}` },
    h('span', {}, stage.stage),
    pct !== null && stage.state === 'running' ? h('div', { class: 'bar' }, h('div', { style: { width: pct + '%' } })) : null);
}

function attemptDrawer(ui, attemptId) {
  return () => {
    const a = (ui.detail?.attempts || []).find((x) => x.id === attemptId);
    if (!a) return h('p', {}, 'attempt not found');
    return h('div', { class: 'attempt-drawer', 'data-attempt': a.id },
      h('h3', {}, `Round ${a.round}${a.sibling ? '.' + a.sibling : ''} `, verdictBadge(a.verdict, a.verdict_note, a.stopped)),
      h('p', { class: 'reason', id: 'drawer-reason' }, a.reason || ''),
      h('p', {}, a.summary || '(no summary yet)'),
      h('div', { class: 'stages vertical' }, a.stages.map((s) => h('div', {}, stagePill(s), h('small', {}, s.detail || '')))),
      h('table', { class: 'kv' }, h('tbody', {},
        [['genome', short(a.genome_hash)], ['parent', short(a.parent_hash)],
          ['val composite', fig(num(a.composite), TIPS.composite)],
          ['Δcomposite', fig(signed(a.delta), 'mean over val tasks of the paired per-task composite deltas (candidate − incumbent)')],
          ['gate threshold', fig(signed(a.gate_threshold), 'minImprovement − t·SE: Δ below it is a decisive loss. The lenient gate keeps at or above it; the keep rule positive (the default) keeps only Δ > minImprovement (Round Analysis shows every figure)')],
          ['Δeval / Δcost / Δsteps', fig(`${signed(a.delta_eval)} / ${signed(a.delta_cost)} / ${signed(a.delta_steps)}`, 'Δ split into its eval, −wCost·cost/seedCost and −wSteps·steps/seedSteps parts')],
          ['confirmation', a.confirm ? fig(`${a.confirm.stands ? 'stands' : 'OVERTURNED'} · fresh Δ ${signed(a.confirm.gate?.delta)} vs ${signed(a.confirm.gate?.threshold)}`, TIPS.confirmDelta) : '—'],
          ['train composite', fig(num(a.train_composite), TIPS.composite + ' (train suite)')],
          ['mutator cost', fig(usd(a.mutator_cost_usd), 'USD of this attempt\'s mutator call, priced from config.json')],
          ['diff', a.diff_stat || '—'], ['error', a.error || '—']].map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, v))))),
      h('button', { class: 'primary', onclick: () => { closeDrawer(); go('round', a.id); } }, 'Open in Round Analysis →'));
  };
}

const NOISE_TIP = 'run.py --fake-noise: quiet, the fake build agent follows the skill\'s rules exactly (the demo); realistic, it passes or fails each cell as a real agent might (per-task success from SkillsBench\'s fitted prior, the skill\'s rules shifting it), so verdicts are as noisy as a real run\'s. Nothing is spent either way';

// What the run recorded of its agents (runs.agents): a dry run, and how noisy its fake build agent was.
function agentsChip(run) {
  if (run.dry_run !== true) return null;
  const noisy = run.fake_noise === 'realistic';
  return h('span', { class: 'chip', id: 'run-agents', title: noisy ? NOISE_TIP : 'fake agents (run.py without --real): nothing spent, the fake build agent quiet' },
    noisy ? 'dry run · realistic noise' : 'dry run');
}

// A real run spends money: it needs a backend and a budget cap, and starts only after a dialog that states the
// estimated cost (the server's --plan for the same request) is confirmed; the server refuses it otherwise.
function confirmCost(plan) {
  return new Promise((resolve) => {
    const over = plan.over_budget ? h('p', { class: 'error', id: 'cost-over' },
      `The estimate is above your budget: the run stops cleanly once its spend would pass ${usd(plan.budget_usd)}.`) : null;
    const dialog = h('dialog', { id: 'cost-dialog', class: 'cost-dialog' },
      h('h3', {}, 'Start a real run?'),
      h('p', {}, 'Real agents (', h('b', {}, plan.backend), ', model ', h('b', {}, plan.model), ') spend money on your API account.'),
      h('p', { class: 'estimate' }, 'Estimated cost: ', h('b', { id: 'cost-estimate', title: 'an upper bound from run.py --plan: every candidate evaluated on val, the selected genome on train, each mutator call; cached evaluations cost nothing' }, `≤ ${usd(plan.run_usd)}`),
        ` for round 0 + ${plan.rounds} round(s) (≤ ${usd(plan.round_usd)} a round)`,
        plan.test_usd !== null ? `; a test run ≈ ${usd(plan.test_usd)}` : '', '. Budget cap: ', h('b', { id: 'cost-budget' }, usd(plan.budget_usd)), '.'),
      over,
      h('details', {}, h('summary', {}, 'The plan in full (run.py --plan)'), h('pre', {}, plan.text)),
      h('div', { class: 'row' },
        h('button', { type: 'button', id: 'cost-cancel', onclick: () => { dialog.close(); } }, 'Cancel'),
        h('button', { type: 'button', class: 'primary', id: 'cost-confirm', onclick: () => { dialog.returnValue = 'yes'; dialog.close(); } }, `Spend up to ${usd(plan.budget_usd)} and launch`)));
    dialog.addEventListener('close', () => { const yes = dialog.returnValue === 'yes'; dialog.remove(); resolve(yes); });
    document.body.append(dialog);
    dialog.showModal();
  });
}

function launchForm(ui) {
  const o = appState.meta.options;
  const d = o.defaults;
  const select = (name, items, value, optional = false) => h('label', {}, name,
    h('select', { name }, optional ? h('option', { value: '' }, '(none)') : null,
      items.map((x) => h('option', { value: x, selected: x === value }, x))));
  const number = (name, value, min, max) => h('label', {}, name, h('input', { name, type: 'number', value, min, max }));
  const status = h('p', { class: 'launch-status' });
  const realBox = h('input', { type: 'checkbox', name: 'real', id: 'launch-real' });
  const realFields = h('fieldset', { class: 'real-fields', id: 'real-fields', disabled: true, hidden: true },
    h('legend', {}, 'Real agents (they spend money)'),
    select('backend', o.backends || [], (o.backends || [])[0]),
    h('label', {}, 'budget (USD)', h('input', { name: 'budget_usd', id: 'launch-budget', type: 'number', min: '0.01', step: '0.01', placeholder: 'required', title: 'run.py --budget-usd: the run stops cleanly before its spend would pass this' })));
  // a dry run's fake build agent: quiet (the demo) or as noisy as a real agent (run.py --fake-noise); a real run
  // brings its own noise, so the choice is sent for dry runs only (a disabled fieldset is left out of the form)
  const dryFields = h('fieldset', { class: 'dry-fields', id: 'dry-fields' },
    h('legend', {}, 'Dry run (fake agents, nothing spent)'),
    h('label', { title: NOISE_TIP }, 'fake agent noise', h('select', { name: 'fake_noise', id: 'launch-noise' },
      h('option', { value: 'off', selected: d.fake_noise !== 'realistic' }, 'quiet (the demo)'),
      h('option', { value: 'realistic', selected: d.fake_noise === 'realistic' }, 'realistic (real-agent noise, SkillsBench-calibrated)'))));
  realBox.addEventListener('change', () => {
    realFields.disabled = realFields.hidden = !realBox.checked;
    dryFields.disabled = dryFields.hidden = realBox.checked;
  });
  const form = h('form', { class: 'launch', onsubmit: async (e) => {
    e.preventDefault();
    const body = Object.fromEntries(new FormData(form).entries());
    body.replicates = Number(body.replicates); body.rounds = Number(body.rounds);
    body.real = realBox.checked;
    body.store = appState.store;
    try {
      if (body.real) {
        status.textContent = 'estimating the cost…';
        const plan = await post('launch/plan', body);
        status.textContent = 'waiting for your confirmation…';
        if (!await confirmCost(plan)) { status.textContent = 'cancelled: nothing started'; return; }
        body.confirmed = true;
      }
      status.textContent = 'starting…';
      const res = await post('launch', body);
      ui.launchedAt = Date.now() / 1000 - 5;
      ui.knownRuns = new Set(appState.runs.map((r) => r.id));
      status.textContent = `started pid ${res.process.pid}: python ${res.process.argv.join(' ')}`;
      refresh();
    } catch (err) { status.textContent = `refused: ${err.message}`; }
  } },
  h('h3', {}, 'Launch a run'),
  h('p', { class: 'hint' }, 'Starts python run.py as a separate process in this store\'s data dir: a zero-spend dry run with the fake agents (quiet, or as noisy as real agents), or with "real agents" a run that spends, after a confirmation stating its estimated cost.'),
  select('seed', o.seeds, d.seed), select('suite', o.suites, d.suite), select('val', o.suites, d.val),
  select('holdout', o.suites, d.holdout, true), select('strategy', o.strategies, d.strategy),
  select('model', o.models, d.model), number('replicates', d.replicates, 1, 20), number('rounds', d.rounds, 0, 200),
  dryFields, h('label', { class: 'check' }, realBox, ' real agents (--real)'), realFields,
  h('button', { type: 'submit', class: 'primary', id: 'launch-submit' }, '▶ Launch'), status);
  return form;
}

function curveData(detail) {
  const c = detail.curve;
  return [c.round, c.champion, c.best, c.train, c.test];
}

// Identical finished measurements (the same champion on the same suite with the same figures: a repeated --compare
// or test served from the cache) are one card, newest first, saying how many times it was measured.
function folded(tests) {
  const cards = new Map();
  for (const t of tests.slice().reverse()) {
    // a repeat served from the cache differs only in its look's numbering: one card per champion measurement
    const report = t.report ? { ...t.report, look: undefined } : t.report;
    const key = t.status === 'done' ? JSON.stringify([t.suite, t.genome_hash, t.composite, t.eval, t.cost, t.steps, report]) : `id ${t.id}`;
    if (cards.has(key)) {
      const card = cards.get(key);
      card.repeats.push(t.id);
      if (t.spent_usd !== null && t.spent_usd !== undefined) card.spent_usd = (card.spent_usd || 0) + t.spent_usd;
    } else cards.set(key, { ...t, repeats: [] });
  }
  return [...cards.values()];
}

function testCard(t) {
  const bars = (t.progress || []).map((p) => h('div', { class: 'progress', title: `${p.n_done}/${p.n_cells} cells graded` },
    h('span', {}, `${p.suite}: ${p.n_done}/${p.n_cells}`), h('div', { class: 'bar' }, h('div', { style: { width: `${100 * p.n_done / Math.max(1, p.n_cells)}%` } }))));
  return h('div', { class: `test-card t-${t.status}`, 'data-test': t.id },
    h('div', {}, h('b', {}, t.suite), ` · champion ${short(t.genome_hash)} after round ${t.round} · `, h('span', { class: `badge r-${t.status}` }, t.status),
      t.repeats?.length ? h('span', { class: 'chip repeats', title: `identical measurements folded into this card (test runs ${t.repeats.join(', ')}): every look is recorded` }, ` ×${t.repeats.length + 1}`) : null),
    t.stale_note ? h('div', { class: 'stale-note' }, t.stale_note) : null,
    // what the test added to the run's spend (test_runs.spent_usd; a folded card: its measurements' sum)
    t.spent_usd !== null && t.spent_usd !== undefined ? h('div', { class: 'test-spent', 'data-test-spent': t.spent_usd }, fig(`spent ${usd(t.spent_usd)}`, TIPS.testSpent)) : null,
    t.status === 'done' ? h('div', { class: 'figures' },
      fig(`test ${num(t.composite)}`, TIPS.testComposite), fig(`train ${num(t.train_composite)}`, TIPS.trainComposite),
      fig(`eval ${num(t.eval, 3)}`, TIPS.eval + ', champion on the test suite'), fig(`cost/cell ${usd(t.cost)}`, TIPS.cost),
      fig(`gap ${t.train_composite === null ? '—' : signed(t.train_composite - t.composite)}`, TIPS.trainTestGap)) : bars,
    t.status === 'done' && t.report ? h('details', { class: 'report-box', open: true }, h('summary', {}, 'Honest test report: champion vs seed, paired by task'), reportView(t.report)) : null,
    h('small', {}, when(t.created_at)));
}

// The attempt open in the drawer is marked in the timeline (a class, so the timeline's DOM stays as built).
function markSelected(ui) {
  for (const node of document.querySelectorAll('#timeline .node')) node.classList.toggle('selected', Number(node.dataset.attempt) === ui.selected);
}

// The timeline follows the newest round (scrolled to its end) unless the reader scrolled back through it.
function followNewest(ui, fresh) {
  const line = document.getElementById('timeline');
  if (!line) return;
  if (fresh && !ui.timelineBack) line.scrollLeft = line.scrollWidth;
  line.onscroll = () => { ui.timelineBack = line.scrollLeft + line.clientWidth < line.scrollWidth - 8; };
}

export async function render(root, state, ui) {
  if (ui.launchedAt) {
    const fresh = state.runs.find((r) => !ui.knownRuns?.has(r.id) && r.created_at >= ui.launchedAt);
    if (fresh && fresh.id !== state.run) { ui.launchedAt = null; go('home', null, { run: fresh.id }); return; }
  }
  const [detail, processes] = await Promise.all([
    state.run ? api(`runs/${state.run}`, { store: state.store, window: ui.all ? 0 : 60 }) : null, api('processes')]);
  ui.detail = detail;
  // Each section is rebuilt only when its own data moved (lib/keyed.js); the others keep their DOM.
  const S = sections(ui);
  const launchButton = () => h('button', { class: 'primary', id: 'open-launch', onclick: () => openDrawer(() => launchForm(ui), { live: false }) }, '+ Launch a run');
  const procs = S.get('processes', processes, () => processes.length ? h('details', { class: 'processes', open: processes.some((p) => p.status === 'running') },
    h('summary', {}, `Started from this dashboard (${processes.length})`),
    processes.map((p) => h('div', { class: 'proc' }, h('b', {}, `${p.kind} pid ${p.pid} · ${p.status}${p.returncode !== null ? ' (' + p.returncode + ')' : ''}`),
      h('code', {}, p.argv.join(' ')), h('pre', {}, p.log_tail.split('\n').slice(-6).join('\n'))))) : null);
  if (!detail) {
    mount(root, S.get('empty', null, () => h('section', {}, h('h2', {}, 'No run yet'), h('p', {}, 'Launch one, or start python run.py with --data-dir of a store.'), launchButton())), procs || '');
    return;
  }
  const run = detail.run;
  const header = S.get('head', [state.store, run], () => h('section', { class: 'run-head', id: 'run-head' },
    h('h2', {}, run.id, ' ', h('span', { class: `badge r-${run.alive ? 'running' : run.status}` }, run.alive ? 'running' : run.status)),
    h('p', {}, `${run.skill_name} · ${run.strategy} · round ${run.rounds_done}/${run.rounds_target}`,
      run.decided_round > run.rounds_done && !run.alive ? h('span', { class: 'warn', id: 'round-unfinished', title: 'rounds_done counts rounds whose train evaluation and bookkeeping finished; this round was decided but not completed' }, ` (round ${run.decided_round} decided, not completed)`) : '',
      ` · train ${run.suite} · val ${run.val} · `
      + `${run.replicates} replicates · ${run.model} · `, fig(`spend ${usd(run.cost_usd)}`, spendTip(run)), ' ', valQueries(run),
      agentsChip(run), run.confirm ? h('span', { class: 'chip', title: 'winner\'s-curse guard on: every keep is re-checked on fresh val replicates and stands only if the gate, under the run\'s keep rule, still keeps it' }, 'confirm on') : null),
    run.stale_note ? h('p', { class: 'stale-note' }, run.stale_note) : null,
    run.error ? h('p', { class: 'error' }, run.error) : null, notesView(state.store, run.id, run.notes), commandView(run.command), launchButton()));
  const extras = [S.get('solve', run.solve ?? null, () => solveView(run.solve)), S.get('meta-skill', run.meta_skill ?? null, () => metaSkillView(run.meta_skill))];
  const shown = new Set(detail.attempts.map((a) => a.round)).size;
  const timeline = S.get('timeline', [run.id, detail.attempts, detail.n_rounds, !!ui.all], () => h('section', { id: 'timeline-section' }, h('h3', {}, 'Round timeline ',
    detail.n_rounds > shown || ui.all ? h('small', {}, `showing ${shown} of ${detail.n_rounds} rounds `,
      h('button', { class: 'small', onclick: () => { ui.all = !ui.all; refresh(); } }, ui.all ? 'last 60 only' : 'show all')) : null),
    h('div', { class: 'timeline', id: 'timeline' }, detail.attempts.map((a) => h('div', {
      class: `node n-${(a.verdict || 'pending').toLowerCase()}`, 'data-attempt': a.id, 'data-round': a.round, tabindex: 0,
      title: a.reason || '',
      onclick: () => {
        openDrawer(attemptDrawer(ui, a.id), { onClose: () => { ui.selected = null; markSelected(ui); } });
        ui.selected = a.id;
        markSelected(ui);
      },
    }, h('div', { class: 'node-head' }, h('b', {}, `r${a.round}${a.sibling ? '.' + a.sibling : ''}`), verdictBadge(a.verdict, a.verdict_note, a.stopped)),
    h('div', { class: 'stages' }, a.stages.map(stagePill)),
    h('small', { title: 'val composite of this candidate: ' + TIPS.composite }, num(a.composite)),
    a.confirm ? h('small', { class: `confirm-mark ${a.confirm.stands ? 'ok' : 'bad'}`, title: 'winner\'s-curse confirmation on fresh val replicates: ' + (a.confirm.stands ? 'the keep stands' : 'the keep was overturned') }, a.confirm.stands ? ' ✓ confirmed' : ' ✗ overturned') : null)))));
  const aa = detail.aa ? S.get('aa', detail.aa, () => aaView(detail.aa)) : null;   // an A/A run: the gate's false calls, not an evolution
  const curve = aa ? null : S.get('curve', [run.id, detail.curve], () => {
    const box = h('div', { class: 'chart', id: 'curve' });
    const section = h('section', { id: 'curve-section' }, h('h3', {}, 'Optimisation curve ',
      h('small', { title: 'composite = eval − wCost·cost/seedCost − wSteps·steps/seedSteps, per split normalised to the seed on that split' }, 'composite on val (champion, best candidate), train, test'),
      h('button', { class: 'small', onclick: () => resetZoom('home-curve') }, 'reset zoom')), box);
    section.box = box;
    return section;
  });
  // the run's own holdout (a config name or a path, as stored) first and preselected, then the other suites
  const suites = [...(run.holdout ? [run.holdout] : []), ...state.meta.options.suites.filter((s) => s !== run.suite && s !== run.val && s !== run.holdout)];
  const tests = aa ? null : S.get('tests', [state.store, run.id, run.alive, run.holdout, suites, detail.tests], () => {
    const suitePick = h('select', { id: 'test-suite' }, suites.map((s) => h('option', { value: s, selected: s === (ui.testSuite || run.holdout) }, s === run.holdout ? `${s} (this run's holdout)` : s)));
    suitePick.addEventListener('change', () => { ui.testSuite = suitePick.value; });
    const testStatus = h('span', { class: 'hint' });
    return h('section', { id: 'tests-section' }, h('h3', {}, 'Test timeline'),
      h('div', { class: 'row' }, suitePick, h('button', { class: 'primary', id: 'run-test', disabled: run.alive, title: run.alive ? 'testing waits until the loop stops' : 'measure the current champion on this suite', onclick: async () => {
        testStatus.textContent = 'starting…';
        try { const res = await post('test-run', { store: state.store, run_id: run.id, suite: suitePick.value }); testStatus.textContent = `started pid ${res.process.pid}`; refresh(); } catch (err) { testStatus.textContent = `refused: ${err.message}`; }
      } }, '▶ Run test'), testStatus),
      h('div', { class: 'tests' }, detail.tests.length ? folded(detail.tests).map(testCard) : h('p', { class: 'hint' }, 'No test yet.')));
  });
  mount(root, header, extras, procs || '', aa ? aa.section : null, timeline, curve, tests);
  markSelected(ui);
  followNewest(ui, S.fresh('timeline'));
  if (aa) { if (S.fresh('aa')) aa.draw(); return; }
  if (!S.fresh('curve')) return;   // the same curve: its chart (and the reader's zoom) stays as drawn
  chart('home-curve', curve.box, {
    height: 260, scales: { x: { time: false } }, axes: [{ label: 'round', incrs: [1, 2, 5, 10, 20, 50, 100] }, { label: 'composite' }],
    series: [{ label: 'round' },
      { label: 'champion (val)', stroke: '#1f6feb', width: 2 },
      { label: 'best candidate (val)', stroke: '#8250df', paths: noLine, points: { show: true, size: 7, fill: '#8250df' } },
      { label: 'train', stroke: '#2da44e', paths: noLine, points: { show: true, size: 7, fill: '#2da44e' } },
      { label: 'test', stroke: '#d1242f', paths: noLine, points: { show: true, size: 11, fill: '#fff', width: 2 } }],
  }, curveData(detail));
}
