// A run's or an attempt's name, tags and note (run.py --annotate keeps them in the store's notes table), and the
// command line that started a run. Editing posts to /api/notes, which runs `run.py --annotate` as a process: the
// page shows the change when the store moves (the server never writes the store itself).
import { openDrawer, closeDrawer } from './shell.js';
import { h, post } from './util.js';

function editForm(store, target, notes) {
  const status = h('p', { class: 'hint notes-status' });
  const form = h('form', { class: 'notes-form', id: 'notes-form', onsubmit: async (e) => {
    e.preventDefault();
    const body = Object.fromEntries(new FormData(form).entries());
    try {
      status.textContent = 'saving…';
      const res = await post('notes', { store, target, ...body });
      status.textContent = `saved by run.py --annotate (pid ${res.process.pid}); the page updates when the store does`;
      setTimeout(closeDrawer, 300);
    } catch (err) { status.textContent = `refused: ${err.message}`; }
  } },
  h('h3', {}, `Notes for ${/^\d+$/.test(target) ? 'attempt ' + target : target}`),
  h('label', {}, 'name', h('input', { name: 'name', id: 'notes-name', maxlength: 200, value: notes?.name || '' })),
  h('label', {}, 'tags (comma-separated)', h('input', { name: 'tags', id: 'notes-tags', maxlength: 500, value: (notes?.tags || []).join(', ') })),
  h('label', {}, 'note', h('textarea', { name: 'note', id: 'notes-note', maxlength: 4000, rows: 6 }, notes?.note || '')),
  h('button', { type: 'submit', class: 'primary', id: 'notes-save' }, 'Save'), status);
  return form;
}

export function notesView(store, target, notes) {
  return h('div', { class: 'notes', id: 'notes', 'data-target': target },
    notes?.name ? h('b', { class: 'notes-name' }, notes.name, ' ') : null,
    (notes?.tags || []).map((t) => h('span', { class: 'chip tag' }, t)),
    notes?.note ? h('p', { class: 'notes-note' }, notes.note) : null,
    h('button', { class: 'small', id: 'notes-edit', title: 'name, tags and a note, kept in the store by run.py --annotate',
      onclick: () => openDrawer(() => editForm(store, target, notes), { live: false }) }, notes ? 'edit notes' : '+ notes'));
}

export function commandView(command) {
  if (!command) return h('p', { class: 'hint', id: 'run-command' }, 'command line: not recorded (a run started before it was kept)');
  const copy = h('button', { class: 'small', id: 'copy-command', title: 'copy: running it again resumes the run',
    onclick: async () => { try { await navigator.clipboard.writeText(command); copy.textContent = 'copied'; } catch { copy.textContent = 'select and copy'; } } }, 'copy');
  return h('p', { id: 'run-command', title: 'the command line that (re)started this run, secrets redacted; running it again resumes the run' },
    'command: ', h('code', {}, command), ' ', copy);
}
