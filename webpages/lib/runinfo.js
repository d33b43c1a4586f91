// What the loop records on the run beyond its rounds: val accounting (runs.val_queries), the solve
// phase (runs.solve) and the meta skill's lessons by round (runs.meta_skill).
import { h, num, usd } from './util.js';
import { TIPS, fig } from './tips.js';

export function valQueries(run) {
  if (run.val_queries === null || run.val_queries === undefined) return null;
  const limit = run.val_query_warn;
  const over = limit !== null && limit !== undefined && run.val_queries > limit;
  return fig(`val queries ${run.val_queries}${over ? ' ⚠' : ''}`,
    TIPS.valQueries + (limit !== null && limit !== undefined ? '\n' + TIPS.valQueryWarn(limit) : ''),
    { id: 'val-queries', class: over ? 'chip warn' : 'chip' });
}

export function solveView(solve) {
  if (!solve) return null;
  const tasks = Object.entries(solve.tasks || {});
  const low = tasks.filter(([, t]) => t.score < solve.min_score).length;
  return h('details', { class: `solve${solve.aborted ? ' aborted' : ''}`, id: 'solve', open: !!solve.aborted },
    h('summary', {}, h('b', {}, 'Solve phase '), `· ${solve.model} solved ${tasks.length} train task${tasks.length === 1 ? '' : 's'} bare · `,
      fig(`${solve.passes}/${solve.attempts} passes`, TIPS.solvePasses), ' · ',
      fig(`${tasks.length - low}/${tasks.length} ≥ ${solve.min_score}`, TIPS.solveMin, { class: low ? 'warn' : '' }), ' · ',
      fig(usd(solve.cost_usd), TIPS.solveCost), solve.aborted ? h('span', { class: 'badge v-failed' }, ' aborted') : null),
    solve.message ? h('p', { class: 'error' }, solve.message) : null,
    h('table', { class: 'figs' }, h('thead', {}, h('tr', {}, h('th', {}, 'task'),
      h('th', { title: TIPS.solveScore }, 'best score'), h('th', { title: TIPS.solvePass }, 'pass'))),
    h('tbody', {}, tasks.map(([id, t]) => h('tr', { class: t.score < solve.min_score ? 'below' : '' }, h('th', {}, id),
      h('td', {}, fig(num(t.score, 3), TIPS.solveScore)), h('td', {}, fig(String(t.pass), TIPS.solvePass)))))));
}

export function metaSkillView(entries) {
  if (!entries || !entries.length) return null;
  const sorted = entries.slice().sort((a, b) => b.round - a.round);
  const entry = (e, open) => h('details', { class: 'lesson', 'data-round': e.round, open },
    h('summary', {}, `after round ${e.round} · `, fig(usd(e.cost_usd), TIPS.metaCost), e.error ? h('span', { class: 'error' }, ` · failed: ${e.error}`) : ''),
    h('pre', { class: 'lessons' }, e.lessons || '(no lessons)'));
  return h('section', { id: 'meta-skill' }, h('h3', {}, 'Meta skill ',
    h('small', {}, `lessons distilled every few rounds from the attempt log and shown in later briefings (${entries.length})`)),
  sorted.map((e, i) => entry(e, i === 0)));
}
