// What the mutator saw (Round Analysis): its prompt and briefing, its transcript (each turn's tool calls and
// tokens), what it returned (as its workspace holds them), and the read-only evidence staged for it (the workspace's,
// else what the evidence store keeps of it).
import { openDrawer } from './shell.js';
import { api, h, usd } from './util.js';
import { markdown } from './markdown.js';

function text(file, id) {
  return file ? h('pre', { class: 'log', id }, file.text || '(empty)', file.truncated ? '\n… (truncated)' : '') : h('p', { class: 'hint' }, 'not recorded');
}

function turnView(t) {
  if (t.kind === 'assistant') {
    return h('div', { class: 'ev ev-assistant' }, h('b', {}, 'assistant'), ` (${t.input_tokens ?? '—'} in / ${t.output_tokens ?? '—'} out tokens) `, t.text,
      t.tools.map((c) => h('div', { class: 'tool' }, `→ ${c.name} ${c.input}`)));
  }
  if (t.kind === 'tool_result') return h('div', { class: 'ev ev-user' }, h('b', {}, '← '), t.text);
  return h('div', { class: 'ev ev-result' }, h('b', {}, `result/${t.subtype || ''}`), ` · ${t.num_turns ?? '—'} turns · the transcript's own cost ${usd(t.cost_usd)} (as the mutator's CLI reported it; the charge is in the header)${t.is_error ? ' · error' : ''}`);
}

async function drawer(store, attemptId) {
  const d = await api(`attempts/${attemptId}/mutator`, { store });
  const a = d.attempt;
  const head = h('p', { title: 'the attempt\'s mutator call as stored: USD priced from config.json, tokens from its stream' },
    `${usd(a.mutator_cost_usd)} · ${a.mutator_input_tokens ?? '—'} in / ${a.mutator_output_tokens ?? '—'} out tokens · cache ${a.mutator_cache_write_tokens ?? '—'} written / ${a.mutator_cache_read_tokens ?? '—'} read · ${a.mutator_retries ?? 0} retries`);
  if (!d.found && !d.staged.length) return h('div', { class: 'mutator-drawer' }, h('h3', {}, 'What the mutator saw'), head, h('p', { class: 'hint', id: 'mutator-missing' }, 'its workspace is not in this store (the seed and A/A copies have none; a copied store may lack workspaces/)'));
  const fileBox = h('div', { id: 'staged-file' });
  const open = async (path) => {
    const f = await api(`attempts/${attemptId}/mutator`, { store, file: path });
    fileBox.replaceChildren(h('h4', {}, path), text(f.file, 'staged-text'));
  };
  return h('div', { class: 'mutator-drawer', 'data-attempt': attemptId },
    h('h3', {}, 'What the mutator saw'), head,
    d.found ? null : h('p', { class: 'hint', id: 'mutator-missing' }, 'its workspace is gone (briefing, transcript and result were kept only there): the staged evidence below is what the evidence store keeps of it'),
    h('details', { open: true }, h('summary', {}, 'briefing.md'), d.texts['briefing.md']
      ? markdown(d.texts['briefing.md'].text + (d.texts['briefing.md'].truncated ? '\n\n… (truncated)' : ''), { id: 'mutator-briefing' }) : text(null)),
    h('details', {}, h('summary', {}, 'prompt'), text(d.texts['prompt.md'], 'mutator-prompt')),
    h('details', { open: true }, h('summary', {}, `transcript (${d.turns.length} entries)`), h('div', { class: 'stream', id: 'mutator-turns' }, d.turns.map(turnView))),
    h('details', {}, h('summary', {}, 'result.json'), text(d.texts['result.json'], 'mutator-result')),
    h('details', { open: true }, h('summary', { title: 'read through the store\'s reader of staged evidence: the workspace\'s read-only folders, or (the workspace gone) the diffs and train rollouts data/evidence/ keeps' }, `staged evidence (${d.staged.length} files, read-only, from the ${d.source || 'workspace'}) — click one`),
      h('ul', { id: 'staged-files' }, d.staged.map((f) => h('li', {}, h('a', { href: '#', 'data-path': f.path, onclick: (e) => { e.preventDefault(); open(f.path); } }, f.path), ` (${f.bytes} B)`))), fileBox));
}

export function mutatorButton(store, attempt) {
  if (!attempt.genome_hash && !attempt.mutator_cost_usd) return null;
  return h('button', { class: 'small', id: 'open-mutator', onclick: () => openDrawer(() => drawer(store, attempt.id), { live: false }) }, 'What the mutator saw →');
}
