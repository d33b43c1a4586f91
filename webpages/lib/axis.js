import { h } from './util.js';

// The x axis: rounds, or the cumulative cells / USD each run had spent once a round was stored (server/spend_axis.py),
// so strategies that spend more per round are compared at equal spend.
export const AXES = { round: 'round', cells: 'cells so far', usd: 'USD so far' };
export const AXIS_TIP = 'cells so far / USD so far: each val or train evaluation a run used counted once (graded cells, their USD) plus its mutator calls, summed over its attempts up to that round (an evaluation served from another run\'s cache counts in each run that uses it)';

export function axisPick(ui, redraw, id) {
  return h('select', { id, title: AXIS_TIP, onchange: (e) => { ui.x = e.target.value; redraw(); } },
    Object.entries(AXES).map(([v, label]) => h('option', { value: v, selected: v === (ui.x || 'round') }, `x: ${label}`)));
}
