// How every number on the pages is computed: one place for the tooltip texts, and `fig()` to show a
// number with its tooltip (a dotted underline says "hover me").
import { h } from './util.js';

export const TIPS = {
  composite: 'composite = eval − wCost·cost/seedCost − wSteps·steps/seedSteps, per-cell means, cost and steps normalised to the seed on the same suite',
  eval: 'eval = mean per-cell score in [0,1] (a failed cell scores 0)',
  cost: 'mean USD per cell, priced from config.json (the fakes spend nothing real)',
  steps: 'mean agent turns per cell',
  spend: 'every charge of this run (cells, judge, mutator, meta skill, solve phase, test runs, no-skill controls), the sum of its rows in the charges table; the CLI and the Cost page show the same figure',
  valQueries: 'runs.val_queries: candidate evaluations that queried the val suite so far = the seed + every evaluated candidate + 2 per winner\'s-curse confirmation (the new and the old incumbent on fresh replicates)',
  valQueryWarn: (limit) => `above valQueryWarn = ${limit} (config.json) a val suite queried this often is effectively a training set: trust test, not val`,
  // winner's-curse confirmation (attempts.confirm)
  confirmDelta: 'fresh Δ = mean over val tasks of the paired per-task composite deltas (new incumbent − old incumbent), both re-evaluated on fresh val replicates (a new salt)',
  confirmThreshold: 'the same noise gate as the round: under keep rule lenient the keep stands unless fresh Δ < minImprovement − t·SE',
  confirmRule: 'the run\'s keep rule (score.keepRule) decides the confirmation as it decided the keep: its bar (positive: minImprovement; strict: minImprovement + t·SE) or posterior mean gain (eb, ebc), stored as gate.keep_rule',
  confirmSe: 'SE = s/√n, s pooled over this run\'s comparisons including this one',
  confirmSr: 's_r = C_n·MAD of the fresh per-task deltas (finite-sample factor; SD/c4(n) when MAD is 0)',
  confirmT: 'the critical value: from sign flips of the fresh deltas (method signflip) or the Student-t quantile of Φ(gateZ) at the pooled df (method t)',
  confirmDf: 'pooled degrees of freedom Σ(n_r − 1) over this run\'s comparisons',
  confirmN: 'val tasks paired in the fresh comparison',
  confirmComposite: 'composite of that genome\'s fresh val evaluation (normalised to the seed on val)',
  // solve phase (runs.solve)
  solveScore: 'the best grade of the mutator model\'s bare (skill-less) attempts at this train task, over all passes',
  solvePass: 'the pass whose attempt scored best (imperfect tasks are retried in later passes)',
  solvePasses: 'passes run / passes allowed (--solve-attempts); a pass retries only the tasks not yet at 1.0',
  solveCost: 'USD of every solve-phase cell, priced at the mutator model\'s rates',
  solveMin: 'a task whose best score stays below --solve-min-score aborts the run before any seed spend',
  // meta skill (runs.meta_skill)
  metaCost: 'USD of the mutator-model call that distilled these lessons',
  // honest test report (test_runs.report)
  reportTasks: 'tasks evaluated for both the champion and the seed on this split (the pairs)',
  reportSeed: 'mean over the paired tasks of the seed\'s per-task composite on this split',
  reportChampion: 'mean over the paired tasks of the champion\'s per-task composite on this split',
  reportDelta: 'Δ = mean over tasks of (champion − seed) per-task composite; SE = sample SD of the deltas / √n',
  reportCi: '95% t interval: Δ ± t.ppf(0.975, n − 1)·SE',
  reportDeltaEval: 'the same paired mean on eval alone (no cost or steps terms)',
  controlNone: 'the test suite measured with no skill installed (the control): composite normalised to the seed on test',
  controlSkill: 'the seed\'s or the champion\'s composite on the same test tasks',
  controlDelta: 'Δ = mean over tasks of (with skill − no skill) per-task composite; SE = sample SD of the deltas / √n',
  reportLook: 'every finished test is a look at its suite: k counts the distinct champions of this skill tested there (a repeat of the same champion is that look again)',
  reportHarm: 'per task: exact one-sided permutation test of the mean per-cell composite over replicate cells, Holm over the tasks at 0.05; the smallest p possible is 1/C(2r, r)',
  reportSign: 'sign test: tasks where the champion wins / loses / ties; p = exact two-sided binomial at ½ (ties dropped)',
  reportP: 'two-sided paired t test of Δ = 0',
  reportMcnemar: 'McNemar exact test per pass/fail test: cells paired by task × replicate; +n = champion-only passes, −n = seed-only passes; p = exact two-sided binomial of the discordant pairs at ½',
  reportGap: (z) => `gap = (split Δ − test Δ) / √(SE_split² + SE_test²); flagged above ${z} SE: the gain did not carry over to held-out tasks`,
  testComposite: 'test composite of the champion (normalised to the seed on the same test suite)',
  testSpent: 'what this test added to the run\'s spend (its cells and their judges; $0 when every evaluation came from the cache), from the store',
  trainComposite: 'the same champion\'s composite on the train suite',
  trainTestGap: 'train composite − test composite: a wide gap says the gain did not transfer',
};

// A number with its tooltip; `cls` adds e.g. "warn".
export function fig(text, tip, attrs = {}) {
  return h('span', { ...attrs, class: ['fig', attrs.class].filter(Boolean).join(' '), title: tip }, text);
}
