// Small DOM, format and API helpers shared by every page. No framework, no build step.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    // the attribute, not only the property: a live refresh (app.js keepPlace) keeps a select the reader changed
    // from its default, so a picked option that is not its select's default would be put back over the new page
    else if (key === 'selected') el.defaultSelected = true;
    else if (key === 'style' && typeof value === 'object') Object.assign(el.style, value);
    else if (key in el && typeof value !== 'string') el[key] = value;
    else el.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export const short = (hash) => (hash ? hash.slice(0, 12) : '—');

export function num(value, digits = 4) {
  if (value === null || value === undefined || Number.isNaN(value)) return '—';
  return Number(value).toFixed(digits);
}

export function signed(value, digits = 4) {
  if (value === null || value === undefined) return '—';
  return (value >= 0 ? '+' : '') + Number(value).toFixed(digits);
}

export function usd(value) {
  return value === null || value === undefined ? '—' : '$' + Number(value).toFixed(4);
}

export function when(ts) {
  if (!ts) return '—';
  return new Date(ts * 1000).toLocaleString();
}

export const token = () => document.querySelector('meta[name="sm-token"]').content;

export async function api(path, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ''));
  const response = await fetch(`/api/${path}${query.toString() ? '?' + query : ''}`);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

export async function post(path, body) {
  const response = await fetch(`/api/${path}`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'X-SM-Token': token() },
    body: JSON.stringify(body),
  });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

// `note` (the server's verdict_note) says which stored fact decided when the verdict and the gate disagree:
// 'kept by pool rank', 'lost on pool rank', 'lost to a sibling', 'overturned on confirmation'.
// `stopped` (the server's word for an attempt a dead writer left undecided) replaces 'pending'.
export function verdictBadge(verdict, note = null, stopped = null) {
  if (!verdict && stopped) return h('span', { class: 'badge v-stopped', title: 'the run\'s process died before this attempt was decided; re-run the same command to resume' }, stopped);
  const badge = h('span', { class: `badge v-${(verdict || 'pending').toLowerCase()}${note ? ' v-noted' : ''}`,
    title: note ? `${verdict}: ${note} (the gate alone would have ${verdict === 'KEEP' ? 'rejected' : 'kept'} it)` : null },
  verdict || 'pending', note ? ` · ${note}` : '');
  return badge;
}

// Colour of a [0,1] score: red -> amber -> green.
export function scoreColour(score) {
  if (score === null || score === undefined) return '#ddd';
  const s = Math.max(0, Math.min(1, score));
  const hue = Math.round(s * 120);
  return `hsl(${hue} 65% 72%)`;
}

export function table(headers, rows, attrs = {}) {
  return h('table', attrs,
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', typeof x === 'object' ? x : {}, typeof x === 'object' ? x.label : x)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => (c instanceof Node && c.tagName === 'TD' ? c : h('td', {}, c)))))));
}

// Make root's content the children (arrays flattened, empty values dropped). A child already in place stays
// where it is, never detached and re-attached, so a section kept by a live update (lib/keyed.js) keeps its state.
export function mount(root, ...children) {
  const wanted = children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false && c !== '')
    .map((c) => (c instanceof Node ? c : document.createTextNode(String(c))));
  let at = root.firstChild;
  for (const child of wanted) {
    if (child === at) { at = at.nextSibling; continue; }
    root.insertBefore(child, at);
  }
  while (at) { const next = at.nextSibling; at.remove(); at = next; }
}
