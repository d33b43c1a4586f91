// Lineage: the champion → seed chain beside a zoomable, collapsible genome tree drawn from the real
// parent edges. The champion's ancestry forms the trunk; every other attempt (kept pool members off
// other parents, rejected, critic-rejected, failed) hangs under its own parent; crossover refs are links.
import { go } from '../lib/shell.js';
import { api, mount, h, num, short, signed, verdictBadge } from '../lib/util.js';
import { TIPS, fig } from '../lib/tips.js';
import { sections } from '../lib/keyed.js';

function buildTree(nodes) {
  const byKey = new Map();
  const children = new Map();
  for (const n of nodes) {
    // a genome's node is its origin (the server's `origin`: never a CRITIC no-change repeat of its parent)
    const key = n.genome_hash && n.origin && !byKey.has(n.genome_hash) ? n.genome_hash : `attempt-${n.attempt_id}`;
    n.key = key;
    byKey.set(key, n);
  }
  const roots = [];
  for (const n of nodes) {
    const parent = n.parent_hash && byKey.has(n.parent_hash) ? n.parent_hash : null;
    if (!parent || parent === n.key) { roots.push(n); continue; }
    n.parentKey = parent;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(n);
  }
  return { roots, children };
}

// The trunk (the champion's ancestry) stays flat, so 100 rounds do not indent 100 times; every other
// child hangs under its real parent as a collapsible branch.
function nodeViews(n, children, ui) {
  const kids = children.get(n.key) || [];
  const kept = kids.filter((k) => k.on_chain);
  const branches = kids.filter((k) => !k.on_chain).sort((a, b) => a.round - b.round || a.sibling - b.sibling);
  const collapsed = ui.collapsed.has(n.key);
  const trunk = n.on_chain;
  const li = h('li', { class: `tnode ${trunk ? 'trunk' : 'branch'} n-${(n.verdict || 'pending').toLowerCase()}`, 'data-key': n.key,
    'data-attempt': n.attempt_id, title: n.reason || '' },
    h('div', { class: 'tlabel' },
      branches.length ? h('button', { class: 'toggle', title: collapsed ? 'expand' : 'collapse', onclick: (e) => {
        e.stopPropagation();
        if (ui.collapsed.has(n.key)) ui.collapsed.delete(n.key); else ui.collapsed.add(n.key);
        ui.rerender();
      } }, collapsed ? `▸ ${branches.length}` : '▾') : h('span', { class: 'toggle-pad' }),
      h('a', { href: '#', class: 'hash', title: 'open in Round Analysis', onclick: (e) => { e.preventDefault(); go('round', n.attempt_id); } },
        n.genome_hash ? short(n.genome_hash) : `attempt ${n.attempt_id}`),
      ' ', verdictBadge(n.verdict, n.verdict_note), ` r${n.round}${n.sibling ? '.' + n.sibling : ''} · `, fig(num(n.composite), `val ${TIPS.composite}`),
      n.delta !== null && n.delta !== undefined ? [' (', fig(`Δ ${signed(n.delta)}`, 'Δcomposite vs the incumbent of its round: mean over val tasks of the paired per-task deltas'), ')'] : '',
      (n.ref_hashes || []).map((ref) => h('a', { href: '#', class: 'ref', title: `crossover: ${short(ref)} was handed to the mutator as a read-only reference`,
        onclick: (e) => { e.preventDefault(); centre(ref); } }, ` ⨯ ref ${short(ref)}`)),
      n.skills_touched ? h('span', { class: 'skills-touched', title: 'the skill of the skill set this change edited' }, `[${n.skills_touched}] `) : null,
      h('span', { class: 'tsummary' }, n.summary || '')),
    branches.length && !collapsed ? h('ul', { class: 'branches' }, branches.map((k) => nodeViews(k, children, ui))) : null);
  return [li, ...kept.sort((a, b) => a.round - b.round).map((k) => nodeViews(k, children, ui))];
}

// Centre a genome's node in the viewport (a hash click in the chain, a crossover ref); false when not drawn.
let centre = () => false;
function centreNode(viewport, canvas, ui, apply, key) {
  const label = canvas.querySelector(`li[data-key="${CSS.escape(key)}"] > .tlabel`);
  if (!label) return false;
  const v = viewport.getBoundingClientRect();
  const r = label.getBoundingClientRect();
  ui.tx += v.left + v.width / 2 - (r.left + r.width / 2);
  ui.ty += v.top + v.height / 2 - (r.top + r.height / 2);
  apply();
  for (const el of canvas.querySelectorAll('.tlabel.focus')) el.classList.remove('focus');
  label.classList.add('focus');
  ui.focus = key;
  return true;
}

function panZoom(viewport, canvas, ui) {
  const apply = () => { canvas.style.transform = `translate(${ui.tx}px, ${ui.ty}px) scale(${ui.zoom})`; };
  viewport.addEventListener('wheel', (e) => {
    e.preventDefault();
    ui.zoom = Math.min(3, Math.max(0.3, ui.zoom * (e.deltaY < 0 ? 1.1 : 1 / 1.1)));
    apply();
  }, { passive: false });
  let drag = null;
  viewport.addEventListener('pointerdown', (e) => { if (e.target.closest('a,button')) return; drag = { x: e.clientX - ui.tx, y: e.clientY - ui.ty }; });
  viewport.addEventListener('pointermove', (e) => { if (!drag) return; ui.tx = e.clientX - drag.x; ui.ty = e.clientY - drag.y; apply(); });
  window.addEventListener('pointerup', () => { drag = null; });
  apply();
  return apply;
}

export async function render(root, state, ui) {
  if (!state.run) { mount(root, h('p', {}, 'Pick a run.')); return; }
  const data = await api(`runs/${state.run}/lineage`, { store: state.store });
  ui.collapsed = ui.collapsed || new Set();
  if (ui.zoom === undefined) Object.assign(ui, { zoom: 1, tx: 0, ty: 0 });
  ui.rerender = () => render(root, state, ui);
  // A live update whose lineage and folds are unchanged keeps the drawn tree as it is (lib/keyed.js)
  const S = sections(ui);
  const built = S.get('lineage', [state.store, state.run, data, [...ui.collapsed].sort()], () => {
    const { roots, children } = buildTree(data.nodes);
    const chain = h('div', { class: 'chain', id: 'chain' }, h('h3', {}, 'Champion → seed'),
      h('pre', {}, data.chain.map((c, i) => [
        h('a', { href: '#', class: 'hash', 'data-hash': c.genome_hash, title: 'centre this genome in the tree (its round: the r link)',
          onclick: (e) => { e.preventDefault(); centre(c.genome_hash); } }, short(c.genome_hash)),
        ' ', c.attempt_id ? h('a', { href: '#', class: 'round-link', title: 'open in Round Analysis', onclick: (e) => { e.preventDefault(); go('round', c.attempt_id); } }, `r${c.round}`) : 'r?',
        ' ', fig(num(c.composite), `val ${TIPS.composite}`), `  ${i === 0 ? '★ champion' : i === data.chain.length - 1 ? '● seed' : ''}\n`,
        h('span', { class: 'tsummary' }, `   ${c.skills_touched ? '[' + c.skills_touched + '] ' : ''}${(c.summary || '').slice(0, 70)}\n`),
        i < data.chain.length - 1 ? '   │\n   ▼\n' : '',
      ])));
    const canvas = h('ul', { class: 'tree', id: 'tree' }, roots.map((r) => nodeViews(r, children, ui)));
    const viewport = h('div', { class: 'tree-viewport', title: 'drag to pan, wheel to zoom' }, canvas);
    const allKeys = data.nodes.filter((n) => (children.get(n.key) || []).some((k) => !k.on_chain)).map((n) => n.key);
    const controls = h('div', { class: 'row' },
      h('button', { class: 'small', id: 'zoom-in', onclick: () => { ui.zoom = Math.min(3, ui.zoom * 1.2); apply(); } }, '+'),
      h('button', { class: 'small', id: 'zoom-out', onclick: () => { ui.zoom = Math.max(0.3, ui.zoom / 1.2); apply(); } }, '−'),
      h('button', { class: 'small', onclick: () => { Object.assign(ui, { zoom: 1, tx: 0, ty: 0 }); apply(); } }, 'reset'),
      h('button', { class: 'small', id: 'collapse-all', onclick: () => { ui.collapsed = new Set(allKeys); ui.rerender(); } }, 'collapse all'),
      h('button', { class: 'small', id: 'expand-all', onclick: () => { ui.collapsed = new Set(); ui.rerender(); } }, 'expand all'),
      h('span', { class: 'hint' }, `${data.nodes.length} attempts · the champion's ancestry on the trunk, every other attempt under its parent`));
    const section = h('section', { class: 'lineage' }, chain, h('div', { class: 'tree-pane' }, h('h3', {}, 'Genome tree'), controls, viewport));
    return { section, canvas, viewport };
  });
  mount(root, built.section);
  if (!S.fresh('lineage')) return;
  const { canvas, viewport } = built;
  const apply = panZoom(viewport, canvas, ui);   // the controls built above call this one
  const byKey = new Map(data.nodes.map((n) => [n.key, n]));
  centre = (key) => {
    if (centreNode(viewport, canvas, ui, apply, key)) return true;
    // inside a collapsed branch: unfold its ancestors, draw again, then centre
    let at = byKey.get(key);
    if (!at) return false;
    while (at.parentKey) { ui.collapsed.delete(at.parentKey); at = byKey.get(at.parentKey); }
    ui.focus = key;
    return ui.rerender().then(() => centre(key));
  };
  if (ui.focus) canvas.querySelector(`li[data-key="${CSS.escape(ui.focus)}"] > .tlabel`)?.classList.add('focus');
}
