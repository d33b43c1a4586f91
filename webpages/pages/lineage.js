// Lineage: the champion → seed chain beside a zoomable, collapsible genome tree. Kept genomes form
// the trunk; rejected, critic-rejected and failed candidates hang off it as branches.
import { go } from '../app.js';
import { api, mount, h, num, short, signed, verdictBadge } from '../lib/util.js';
import { TIPS, fig } from '../lib/tips.js';

function buildTree(nodes) {
  const byKey = new Map();
  const children = new Map();
  for (const n of nodes) {
    const key = n.genome_hash && !byKey.has(n.genome_hash) ? n.genome_hash : `attempt-${n.attempt_id}`;
    n.key = key;
    byKey.set(key, n);
  }
  const roots = [];
  for (const n of nodes) {
    const parent = n.parent_hash && byKey.has(n.parent_hash) ? n.parent_hash : null;
    if (!parent || parent === n.key) { roots.push(n); continue; }
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(n);
  }
  return { roots, children };
}

// The trunk stays flat (a kept child follows its parent at the same level, so 100 rounds do not
// indent 100 times); the other children hang under their parent as a collapsible branch.
function nodeViews(n, children, ui) {
  const kids = children.get(n.key) || [];
  const kept = kids.filter((k) => k.verdict === 'KEEP');
  const branches = kids.filter((k) => k.verdict !== 'KEEP').sort((a, b) => a.round - b.round || a.sibling - b.sibling);
  const collapsed = ui.collapsed.has(n.key);
  const trunk = n.verdict === 'KEEP' || n.verdict === 'SEED';
  const li = h('li', { class: `tnode ${trunk ? 'trunk' : 'branch'} n-${(n.verdict || 'pending').toLowerCase()}`, 'data-key': n.key },
    h('div', { class: 'tlabel' },
      branches.length ? h('button', { class: 'toggle', title: collapsed ? 'expand' : 'collapse', onclick: (e) => {
        e.stopPropagation();
        if (ui.collapsed.has(n.key)) ui.collapsed.delete(n.key); else ui.collapsed.add(n.key);
        ui.rerender();
      } }, collapsed ? `▸ ${branches.length}` : '▾') : h('span', { class: 'toggle-pad' }),
      h('a', { href: '#', class: 'hash', title: 'open in Round Analysis', onclick: (e) => { e.preventDefault(); go('round', n.attempt_id); } },
        n.genome_hash ? short(n.genome_hash) : `attempt ${n.attempt_id}`),
      ' ', verdictBadge(n.verdict), ` r${n.round}${n.sibling ? '.' + n.sibling : ''} · `, fig(num(n.composite), `val ${TIPS.composite}`),
      n.delta !== null && n.delta !== undefined ? [' (', fig(`Δ ${signed(n.delta)}`, 'Δcomposite vs the incumbent of its round: mean over val tasks of the paired per-task deltas'), ')'] : '',
      h('span', { class: 'tsummary' }, n.summary || '')),
    branches.length && !collapsed ? h('ul', { class: 'branches' }, branches.map((k) => nodeViews(k, children, ui))) : null);
  return [li, ...kept.sort((a, b) => a.round - b.round).map((k) => nodeViews(k, children, ui))];
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
  const { roots, children } = buildTree(data.nodes);
  const chain = h('div', { class: 'chain', id: 'chain' }, h('h3', {}, 'Champion → seed'),
    h('pre', {}, data.chain.map((c, i) => [
      h('a', { href: '#', class: 'hash', onclick: (e) => { e.preventDefault(); if (c.attempt_id) go('round', c.attempt_id); } }, short(c.genome_hash)),
      ` r${c.round ?? '?'} `, fig(num(c.composite), `val ${TIPS.composite}`), `  ${i === 0 ? '★ champion' : i === data.chain.length - 1 ? '● seed' : ''}\n`,
      h('span', { class: 'tsummary' }, `   ${(c.summary || '').slice(0, 70)}\n`),
      i < data.chain.length - 1 ? '   │\n   ▼\n' : '',
    ])));
  const canvas = h('ul', { class: 'tree', id: 'tree' }, roots.map((r) => nodeViews(r, children, ui)));
  const viewport = h('div', { class: 'tree-viewport', title: 'drag to pan, wheel to zoom' }, canvas);
  const allKeys = data.nodes.filter((n) => (children.get(n.key) || []).some((k) => k.verdict !== 'KEEP')).map((n) => n.key);
  const controls = h('div', { class: 'row' },
    h('button', { class: 'small', id: 'zoom-in', onclick: () => { ui.zoom = Math.min(3, ui.zoom * 1.2); apply(); } }, '+'),
    h('button', { class: 'small', id: 'zoom-out', onclick: () => { ui.zoom = Math.max(0.3, ui.zoom / 1.2); apply(); } }, '−'),
    h('button', { class: 'small', onclick: () => { Object.assign(ui, { zoom: 1, tx: 0, ty: 0 }); apply(); } }, 'reset'),
    h('button', { class: 'small', id: 'collapse-all', onclick: () => { ui.collapsed = new Set(allKeys); ui.rerender(); } }, 'collapse all'),
    h('button', { class: 'small', id: 'expand-all', onclick: () => { ui.collapsed = new Set(); ui.rerender(); } }, 'expand all'),
    h('span', { class: 'hint' }, `${data.nodes.length} attempts · kept on the trunk, rejected / critic / failed as branches`));
  mount(root, h('section', { class: 'lineage' }, chain, h('div', { class: 'tree-pane' }, h('h3', {}, 'Genome tree'), controls, viewport)));
  const apply = panZoom(viewport, canvas, ui);
}
