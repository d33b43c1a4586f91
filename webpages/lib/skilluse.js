// Skill telemetry (README "Skill telemetry"): what the build agents did with the skill, from their own streams.
// Per evaluation a file × (read share, run share) table, the candidate beside its parent; per cell in the drawer.
// Beside it the trigger rates the loop stored on each evaluation (never re-derived here), and how they moved by round.
import { h, num } from './util.js';

const TIP = {
  read: 'cells whose agent read this file of the skill (a Skill call or a read of SKILL.md counts as reading SKILL.md), of the cells with telemetry',
  run: 'cells whose agent ran this script of the skill; failed: cells where a run of it exited non-zero',
  recall: 'trigger recall, as the loop stored it on the evaluation: share of the cells of trigger:true tasks whose agent loaded the skill',
  false: 'false-trigger rate, as stored: share of the cells of trigger:false tasks (near-misses) whose agent loaded the skill',
  near: 'the tasks marked "trigger": false (the skill should be left alone on them)',
  tokens: 'an estimate: characters of what the reads of the skill returned / 4 (the API reports usage per turn, not per file)',
};

const share = (k, n) => (n ? `${k}/${n} (${num(100 * k / n, 0)}%)` : '—');

function byPath(tally) {
  return Object.fromEntries((tally?.files || []).map((f) => [f.path, f]));
}

export function skillUseSection(su, split) {
  if (!su) return h('section', { id: 'round-skill-use' }, h('h3', {}, 'Skill use'), h('p', { class: 'hint' }, 'no telemetry for these cells (stored before it existed, or run without the skill)'));
  // no tally for this candidate: the store's reason (the API's), and every round's as it stands
  if (!su.candidate) return h('section', { id: 'round-skill-use' }, h('h3', {}, `Skill use on ${split}`),
    h('p', { class: 'hint', id: 'skill-use-none' }, `no skill use for this candidate: ${su.reason}`), triggerTables(su));
  const mine = byPath(su.candidate), theirs = byPath(su.parent);
  const paths = [...new Set([...Object.keys(mine), ...Object.keys(theirs)])].sort();
  const cellOf = (f, n, key) => (f ? share(f[key], n) : '—');
  const rows = paths.map((p) => {
    const c = mine[p], q = theirs[p];
    const failed = c && c.failed ? ` · failed ${c.failed}` : '';
    return h('tr', { 'data-file': p, class: c && !c.read && !c.run ? 'unused' : '' }, h('th', {}, p),
      h('td', { title: TIP.read }, cellOf(c, su.candidate.cells, 'read')), h('td', { title: TIP.run }, cellOf(c, su.candidate.cells, 'run') + failed),
      h('td', { class: 'hint' }, su.parent ? cellOf(q, su.parent.cells, 'read') : '—'), h('td', { class: 'hint' }, su.parent ? cellOf(q, su.parent.cells, 'run') : '—'));
  });
  const loaded = (t) => (t ? share(t.loaded, t.cells) : '—');
  return h('section', { id: 'round-skill-use' }, h('h3', {}, `Skill use on ${split} (from the build agents' streams)`),
    h('p', { id: 'skill-loaded' }, `loaded in ${loaded(su.candidate)} of cells (parent ${loaded(su.parent)}) · `,
      h('span', { title: TIP.tokens }, `~${num(su.candidate.read_tokens_est, 0)} tokens per cell reading the skill (estimate)`)),
    h('div', { class: 'cols' },
      h('table', { class: 'figs', id: 'skill-use' }, h('thead', {}, h('tr', {}, h('th', {}, 'file'), h('th', { title: TIP.read }, 'read'), h('th', { title: TIP.run }, 'run'),
        h('th', { class: 'hint' }, 'parent read'), h('th', { class: 'hint' }, 'parent run'))), h('tbody', {}, rows)),
      triggerTables(su)));
}

function triggerTables(su) {
  const rates = [['candidate', su.candidate?.triggers], ['parent', su.parent?.triggers]].filter(([, t]) => t);
  const none = su.candidate ? h('p', { class: 'hint', id: 'trigger-rates' }, 'no trigger rates stored for this evaluation') : null;
  const near = (ids) => h('td', { title: `${TIP.near}: ${ids.join(', ') || 'none'}` }, String(ids.length));
  const head = (...cols) => h('thead', {}, h('tr', {}, cols.map(([x, tip]) => h('th', { title: tip || '' }, x))));
  const figs = [['recall', TIP.recall], ['false-trigger rate', TIP.false]];
  const rounds = su.trigger_rounds || [];
  return h('div', {},
    rates.length ? h('table', { class: 'figs', id: 'trigger-rates' }, head(['', ''], ...figs, ['no-trigger tasks', TIP.near]),
      h('tbody', {}, rates.map(([k, t]) => h('tr', { 'data-row': k }, h('th', {}, k), h('td', { title: TIP.recall }, num(t.recall, 3)),
        h('td', { title: TIP.false }, num(t.false_trigger_rate, 3)), near(t.no_trigger_tasks))))) : none,
    rounds.length ? h('table', { class: 'figs', id: 'trigger-rounds' }, h('caption', {}, 'by round (each attempt\'s own evaluation on this split; every attempt, with why when it has none)'),
      head(['round', ''], ['verdict', ''], ...figs, ['no-trigger tasks', TIP.near]),
      h('tbody', {}, rounds.map((r) => h('tr', { 'data-attempt': r.attempt_id, class: r.reason ? 'no-data' : '' }, h('th', {}, `${r.round}${r.sibling ? '.' + r.sibling : ''}`), h('td', {}, r.verdict || ''),
        r.reason ? h('td', { colspan: 3, class: 'hint why-none' }, r.reason)
          : [h('td', { title: TIP.recall }, num(r.trigger_recall, 3)), h('td', { title: TIP.false }, num(r.false_trigger_rate, 3)), h('td', { title: TIP.near }, String(r.no_trigger_tasks))]))))
      : su.run_reason ? h('p', { class: 'hint', id: 'trigger-rounds-none' }, su.run_reason) : null);
}

export function cellSkillUse(use) {
  if (!use) return h('p', { class: 'hint', id: 'cell-skill-use' }, 'skill use: not recorded (a bare cell, or stored before telemetry)');
  const runs = use.scripts_run.map(([p, code]) => `${p} (exit ${code ?? '?'})`).join(', ') || 'none';
  return h('div', { id: 'cell-skill-use' }, h('h4', {}, 'Skill use'),
    h('table', { class: 'kv' }, h('tbody', {},
      h('tr', {}, h('th', {}, 'loaded'), h('td', {}, use.loaded ? `yes, turn ${use.loaded_turn}` : 'NO')),
      h('tr', {}, h('th', {}, 'files read'), h('td', {}, use.files_read.join(', ') || 'none')),
      h('tr', {}, h('th', {}, 'scripts run'), h('td', {}, runs)),
      h('tr', { title: TIP.tokens }, h('th', {}, 'tokens reading it'), h('td', {}, `~${use.read_tokens_est} (estimate)`)))));
}
