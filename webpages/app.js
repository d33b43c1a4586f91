// The shell: store / skill / run pickers, a hash router over the pages, live updates over Server-Sent Events
// (with a pause control) and the red restart banner. Pages import lib/shell.js (state, go, the drawer,
// refresh), never this file, so the router has no import circle.
import { api, h } from './lib/util.js';
import { state, link, go, closeDrawer, redrawDrawer, onRefresh } from './lib/shell.js';
import * as home from './pages/home.js';
import * as round from './pages/round.js';
import * as lineage from './pages/lineage.js';
import * as history from './pages/history.js';
import * as compare from './pages/compare.js';
import * as attempts from './pages/attempts.js';
import { AFTER_PAGES } from './pages/after_nav.js';

const PAGES = { home, round, lineage, history, compare, attempts, ...AFTER_PAGES };
const $ = (id) => document.getElementById(id);

let events = null;
let rendering = null;
let again = false;

function parseHash() {
  const [path, query] = (location.hash.replace(/^#\/?/, '') || 'home').split('?');
  const [page, arg] = path.split('/');
  state.page = PAGES[page] ? page : 'home';
  state.arg = arg || null;
  state.params = new URLSearchParams(query || '');
  for (const key of ['store', 'skill', 'run']) if (state.params.get(key)) state[key] = state.params.get(key);
}

function fill(select, items, value, label) {
  const options = items.map((item) => h('option', { value: item.value, selected: item.value === value }, label(item)));
  select.replaceChildren(...(options.length ? options : [h('option', { value: '' }, '(none)')]));
}

async function loadPickers() {
  state.meta = await api('meta');
  $('banner').hidden = !state.meta.code_stale;
  $('banner').textContent = 'The dashboard server\'s Python code changed on disk since it started: restart it '
    + '(Ctrl+C in its terminal, then python run.py --serve) to see the change.';
  const stores = state.meta.stores;
  if (!stores.some((s) => s.id === state.store)) state.store = state.meta.running_store || stores[0]?.id || null;
  fill($('store-picker'), stores.map((s) => ({ value: s.id, label: s.label })), state.store, (s) => s.label);
  if (!state.store) { state.skills = []; state.runs = []; return; }
  state.skills = await api('skills', { store: state.store });
  if (!state.skills.some((s) => s.skill_name === state.skill)) state.skill = state.skills[0]?.skill_name || null;
  fill($('skill-picker'), state.skills.map((s) => ({ value: s.skill_name, n: s.n_runs })), state.skill,
    (s) => `${s.value} (${s.n} run${s.n === 1 ? '' : 's'})`);
  state.runs = state.skill ? await api('runs', { store: state.store, skill: state.skill }) : [];
  // a run the link names: of another skill of this store (its skill is picked), else unknown (said so)
  state.missing = null;
  const asked = state.params.get('run');
  if (asked && state.run === asked && !state.runs.some((r) => r.id === asked)) {
    const every = await api('runs', { store: state.store });
    const owner = every.find((r) => r.id === asked);
    if (owner) {
      state.skill = owner.skill_name;
      fill($('skill-picker'), state.skills.map((s) => ({ value: s.skill_name, n: s.n_runs })), state.skill,
        (s) => `${s.value} (${s.n} run${s.n === 1 ? '' : 's'})`);
      state.runs = await api('runs', { store: state.store, skill: state.skill });
    } else {
      state.missing = { run: asked, runs: every };
    }
  }
  // A/A runs (the gate's noise calibration) are listed apart and are never the default selection; the
  // default is the newest live run, else the newest
  const ordinary = state.runs.filter((r) => r.kind !== 'aa');
  if (!state.runs.some((r) => r.id === state.run)) {
    state.run = (ordinary.find((r) => r.alive) || ordinary[0] || state.runs[0])?.id || null;
  }
  fillRuns($('run-picker'), ordinary, state.runs.filter((r) => r.kind === 'aa'), state.run);
}

function fillRuns(select, ordinary, aa, value) {
  const option = (r) => h('option', { value: r.id, selected: r.id === value },
    r.kind === 'aa' ? `${r.id} · A/A ${r.rounds_done}/${r.rounds_target} copies · ${r.alive ? 'RUNNING' : r.status}`
      : `${r.id} · ${r.strategy} · ${r.rounds_done}/${r.rounds_target} · ${r.alive ? 'RUNNING' : r.status}`);
  const groups = [];
  if (ordinary.length) groups.push(aa.length ? h('optgroup', { label: 'runs' }, ordinary.map(option)) : ordinary.map(option));
  if (aa.length) groups.push(h('optgroup', { label: 'A/A runs (gate calibration)' }, aa.map(option)));
  select.replaceChildren(...(groups.length ? groups.flat() : [h('option', { value: '' }, '(none)')]));
}

// Pages drawn from one run refetch only when that run (or, for Home and History, the run list) moved; the
// others when anything in the store moved. A live refresh keeps the reader's place (see keepPlace).
const RUN_PAGES = new Set(['home', 'round', 'lineage', 'history', 'compare', 'attempts']);
let wanted = null;

async function refresh({ pickers = true, page = true, live = false } = {}) {
  if (rendering) {
    wanted = { pickers: pickers || !!wanted?.pickers, page: page || !!wanted?.page, live: live && (wanted?.live ?? true) };
    return rendering;
  }
  rendering = (async () => {
    try {
      if (pickers) await loadPickers();
      for (const a of document.querySelectorAll('#links a')) a.classList.toggle('active', a.dataset.page === state.page);
      for (const a of document.querySelectorAll('#links a')) a.href = link(a.dataset.page);
      connect();
      if (page) {
        const place = live ? keepPlace($('page')) : null;
        state.ui[state.page] = state.ui[state.page] || {};
        if (state.missing) unknownRun($('page'), state.missing);   // never another run's figures
        else await PAGES[state.page].render($('page'), state, state.ui[state.page]);
        if (place) place.restore();
        state.renders = (state.renders || 0) + 1;
        document.body.dataset.renders = state.renders;   // page renders so far (tests wait on it)
      }
      await redrawDrawer();
    } catch (err) {
      console.warn('refresh failed:', err.message);
      $('page').replaceChildren(h('p', { class: 'error' }, `Could not load: ${err.message}`));
    } finally {
      rendering = null;
      if (wanted) { const next = wanted; wanted = null; refresh(next); }
    }
  })();
  return rendering;
}

function unknownRun(root, { run, runs }) {
  root.replaceChildren(h('section', { id: 'unknown' }, h('h2', {}, `No run ${run} in this store`),
    h('p', {}, runs.length ? 'The runs it holds:' : 'It holds no run yet.'),
    h('ul', { id: 'known-runs' }, runs.map((r) => h('li', {}, h('a', { href: link(state.page, state.page === 'round' ? null : state.arg, { skill: r.skill_name, run: r.id }) },
      `${r.id} · ${r.skill_name} · ${r.kind === 'aa' ? 'A/A' : r.strategy} · ${r.rounds_done}/${r.rounds_target} · ${r.alive ? 'RUNNING' : r.status}`))))));
}

// What a re-render must not take from the reader: scroll position, which sections are open, values they
// typed or picked (fields they changed from their defaults) and keyboard focus. Charts keep their zoom
// themselves (lib/charts.js), the lineage tree its pan/zoom in the page's ui state.
// A section's identity across renders: its id, else its class under the nearest identified ancestor (a test
// card, an attempt, a round) and its place among that ancestor's sections of the same class.
function sectionKey(el) {
  if (el.id) return el.id;
  const owner = el.parentElement?.closest('[id],[data-test],[data-attempt],[data-round],[data-key]');
  const mark = owner ? owner.id || ['test', 'attempt', 'round', 'key'].map((k) => owner.dataset[k] || '').join('.') : '';
  const peers = owner ? [...owner.querySelectorAll('details')].filter((d) => d.className === el.className) : [];
  return `${el.className}|${mark}|${peers.indexOf(el)}`;
}

function keepPlace(root) {
  const x = window.scrollX, y = window.scrollY;
  const open = new Map([...root.querySelectorAll('details')].map((d) => [sectionKey(d), d.open]));
  const typed = new Map();
  for (const el of root.querySelectorAll('input, textarea, select')) {
    const name = el.id || el.name;
    const changed = el.tagName === 'SELECT' ? !el.options[el.selectedIndex]?.defaultSelected : el.value !== el.defaultValue;
    if (name && changed) typed.set(name, el.value);
  }
  const focus = document.activeElement && root.contains(document.activeElement) ? document.activeElement.id : null;
  return {
    restore() {
      [...root.querySelectorAll('details')].forEach((d) => {
        const was = open.get(sectionKey(d));
        if (was !== undefined && d.open !== was) d.open = was;
      });
      for (const el of root.querySelectorAll('input, textarea, select')) {
        const name = el.id || el.name;
        if (!typed.has(name)) continue;
        if (el.tagName !== 'SELECT' || [...el.options].some((o) => o.value === typed.get(name))) el.value = typed.get(name);
      }
      if (focus) document.getElementById(focus)?.focus({ preventScroll: true });
      window.scrollTo(x, y);
    },
  };
}

let seen = null;   // the last change event: {version, runs, run, children}
let worker = null;
let watching = null;

// One live stream per browser (lib/liveworker.js, a SharedWorker shared by every tab); a browser without
// SharedWorker opens its own EventSource per tab. Every change reaches onChange; the page then fires
// `sm-live` (after handling it) and `sm-live-watch` when it starts following something else (tests count
// them).
function connect() {
  const key = `${state.store}|${state.run || ''}`;
  if (!state.store || watching === key) return;
  watching = key;
  seen = null;
  window.dispatchEvent(new CustomEvent('sm-live-watch'));
  if (window.SharedWorker) {
    if (!worker) {
      worker = new SharedWorker('/lib/liveworker.js', { name: 'skill-mutator-live' });
      worker.port.onmessage = (m) => {
        if (m.data.type === 'change') onChange(m.data.data);
        else $('live').classList.toggle('offline', m.data.type === 'offline');
      };
      worker.port.start();
      window.addEventListener('pagehide', () => worker.port.postMessage({ type: 'close' }));
      window.addEventListener('pageshow', (e) => { if (e.persisted) { watching = null; connect(); } });
    }
    worker.port.postMessage({ type: 'watch', store: state.store, run: state.run || null });
    return;
  }
  if (events) events.close();
  events = new EventSource(`/api/events?store=${state.store}${state.run ? '&run=' + encodeURIComponent(state.run) : ''}`);
  events.addEventListener('change', (e) => onChange(JSON.parse(e.data)));
  events.onerror = () => $('live').classList.add('offline');
  events.onopen = () => $('live').classList.remove('offline');
}

function onChange(data) {
  $('banner').hidden = !data.code_stale;
  $('live').classList.add('pulse');
  setTimeout(() => $('live').classList.remove('pulse'), 400);
  const before = seen;
  seen = data;
  try {
    if (!before) return;   // the baseline of what this page follows
    if (state.paused) { state.missed = true; return; }
    const runs = before.runs !== data.runs, run = before.run !== data.run;
    const moved = !RUN_PAGES.has(state.page) ? before.version !== data.version
      : run || (['history', 'compare', 'attempts'].includes(state.page) && runs) || (state.page === 'home' && (runs || before.children !== data.children));
    if (runs || moved) refresh({ pickers: runs, page: moved, live: true });
  } finally {
    window.dispatchEvent(new CustomEvent('sm-live'));
  }
}

// ---- wiring -------------------------------------------------------------------------------------------
function pick(key, value) {
  state[key] = value;
  if (key === 'store') { state.skill = null; state.run = null; }
  if (key === 'skill') state.run = null;
  closeDrawer();
  go(state.page, state.page === 'round' ? null : state.arg);
}

$('store-picker').addEventListener('change', (e) => pick('store', e.target.value));
$('skill-picker').addEventListener('change', (e) => pick('skill', e.target.value));
$('run-picker').addEventListener('change', (e) => pick('run', e.target.value));
$('drawer-close').addEventListener('click', closeDrawer);
$('pause').addEventListener('click', () => {
  state.paused = !state.paused;
  $('pause').textContent = state.paused ? 'Resume' : 'Pause';
  $('live').classList.toggle('paused', state.paused);
  if (!state.paused && state.missed) { state.missed = false; refresh({ live: true }); }
});
onRefresh(refresh);
window.addEventListener('hashchange', () => { parseHash(); refresh(); });
parseHash();
refresh();
