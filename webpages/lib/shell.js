// What the pages share with the shell (app.js): the app state, links and navigation, the side drawer and a
// refresh the shell registers. Pages import this module, never app.js, so the router has no import circle.
const $ = (id) => document.getElementById(id);

export const state = {
  meta: null, store: null, skill: null, run: null, skills: [], runs: [],
  page: 'home', arg: null, params: new URLSearchParams(), paused: false, ui: {},
};

export function link(page, arg = null, extra = {}) {
  const params = new URLSearchParams({ store: state.store || '', skill: state.skill || '', run: state.run || '', ...extra });
  return `#/${page}${arg !== null && arg !== undefined ? '/' + arg : ''}?${params}`;
}

export function go(page, arg = null, extra = {}) { location.hash = link(page, arg, extra); }

let refresher = null;
export function onRefresh(fn) { refresher = fn; }
export function refresh(options) { return refresher ? refresher(options) : Promise.resolve(); }

// ---- drawer -------------------------------------------------------------------------------------------
// A live drawer re-renders on every refresh (an attempt's stages move); a form is opened with
// { live: false } so a refresh never wipes what the user typed or the status it shows.
// onClose runs when this drawer goes (closed, or replaced by another): e.g. the timeline unmarks its node.
let drawerRender = null;
let drawerClosed = null;
export function openDrawer(render, { live = true, onClose = null } = {}) {
  const before = drawerClosed;
  drawerClosed = null;
  if (before) before();
  const draw = async () => {
    const content = await render();
    $('drawer-body').replaceChildren(content);
  };
  drawerRender = live ? draw : null;
  drawerClosed = onClose;
  $('drawer').hidden = false;
  return draw();
}
export async function redrawDrawer() { if (drawerRender) await drawerRender(); }
export function closeDrawer() {
  const closed = drawerClosed;
  drawerRender = null;
  drawerClosed = null;
  $('drawer').hidden = true;
  if (closed) closed();
}
