// Proposals: each finished run's champion, awaiting review. Accept deploys it into the skill folder recorded
// on the proposal (atomic, previous version kept for `run.py --rollback`); reject records the reason.
// Both buttons are disabled unless the proposal is still `proposed`; every decision is listed with its time.
import { api, post, mount, h, short, num, usd, when, table } from '../lib/util.js';

const COLOURS = { proposed: '#ddf4ff', accepted: '#fff8c5', deployed: '#dafbe1', rejected: '#fff1e5', failed: '#ffebe9', rolled_back: '#eaeef2' };

function statusBadge(status) {
  return h('span', { class: `badge p-${status}`, style: { background: COLOURS[status] || '#eaeef2' } }, status);
}

async function decide(state, ui, proposal, action) {
  const text = document.getElementById(`proposal-text-${proposal.id}`)?.value || '';
  const question = action === 'accept'
    ? `Deploy proposal ${proposal.id} (champion ${short(proposal.genome_hash)} of ${proposal.run_id}) into\n${proposal.target_offered}?\n\n`
      + 'The folder is replaced atomically; its current version is kept for python run.py --rollback.'
    : `Reject proposal ${proposal.id} (champion ${short(proposal.genome_hash)})? This cannot be undone.`;
  if (!window.confirm(question)) { ui.message = `Proposal ${proposal.id}: nothing done.`; return; }
  try {
    await post(`proposals/${proposal.id}/${action}`, { store: state.store, [action === 'accept' ? 'note' : 'reason']: text });
    ui.message = `${action === 'accept' ? 'Deploying' : 'Rejecting'} proposal ${proposal.id}… (a run.py process; the page updates when it is recorded)`;
  } catch (err) { ui.message = `Could not ${action}: ${err.message}`; }
}

const TICK_COLOURS = { proposed: '#dafbe1', 'skipped-trigger': '#eaeef2', 'skipped-delta': '#fff8c5', failed: '#ffebe9' };

// The watch's ticks (python run.py --watch DIR ...): each one counted the eligible requests newer than the last
// run and either ran the loop (proposed / skipped-delta / failed) or waited for --min-traces (skipped-trigger).
function triggersView(found) {
  const ticks = found.ticks || [];
  if (!ticks.length) {
    return h('p', { id: 'triggers-empty', class: 'hint' }, 'No watch ticks yet: python run.py --watch ~/.claude/projects '
      + '--skill-dir SKILL --out suites/NAME --once (opt-in; see the README, "Mining traces").');
  }
  const counts = Object.entries(found.counts || {}).map(([k, v]) => `${k} ${v}`).join(' · ');
  return h('div', {},
    h('p', { class: 'hint' }, `Every tick of the watch, newest first (${counts}). It rebuilds the mined suites and runs `
      + 'the loop only past --min-traces new eligible requests; it never deploys.'),
    table(['tick', 'when', 'suites', 'read', 'eligible', 'new', 'judge pass', 'outcome', 'run', 'proposal', 'why'], ticks.map((t) => [
      t.id, when(t.at), h('span', { title: t.suites }, t.suites_name),
      h('span', { title: 'requests read from the transcripts' }, String(t.traces_seen)),
      h('span', { title: 'requests that used the skill, held no secret and passed the low-signal filter' }, String(t.eligible)),
      h('span', { title: `newer than the last run; the trigger needs ${t.min_traces}` }, `${t.new_eligible} / ${t.min_traces}`),
      h('span', { class: 'judge-cost', title: 'what the judge pass over the mined requests cost (counted in the store\'s spend and the daily budget; the loop\'s own spend is its run\'s)' }, t.judge_cost_usd ? usd(t.judge_cost_usd) : '—'),
      h('span', { class: `badge t-${t.outcome}`, style: { background: TICK_COLOURS[t.outcome] || '#eaeef2' } }, t.outcome),
      t.run_id || '—', t.proposal_id ? `#${t.proposal_id}` : '—', t.reason || '',
    ]), { id: 'triggers' }));
}

function detailView(d) {
  const val = d.val || {};
  return h('div', { class: 'proposal-detail', id: `proposal-detail-${d.id}` },
    h('h3', {}, `Proposal ${d.id} · champion ${short(d.genome_hash)} vs seed ${short(d.seed_hash)}`),
    h('p', {}, `val ${val.suite}: composite ${num(val.composite)} (seed ${num(val.seed_composite)}), eval ${num(val.eval, 3)} (seed ${num(val.seed_eval, 3)})`,
      d.test ? ` · test ${d.test.suite}: composite ${num(d.test.composite)}, eval ${num(d.test.eval, 3)}` : ' · not tested yet (run.py --test-run)'),
    d.gates && d.gates.length ? table(['critic gate', 'verdict', 'reason'], d.gates.map((g) => [g.gate, g.verdict, g.reason || ''])) : null,
    h('h4', {}, 'Decisions'),
    table(['when', 'action', 'from', 'to', 'note'], d.decisions.map((x) => [when(x.at), x.action, x.status_from || '—', x.status_to, x.note || ''])),
    d.deployments.length ? table(['deploy', 'into', 'status', 'previous version kept at', 'error'],
      d.deployments.map((x) => [x.id, x.target_dir, x.status, x.backup_dir || '—', x.error || ''])) : null,
    h('h4', {}, 'Diff vs the seed'),
    h('pre', { class: 'diff' }, d.diff || '(no diff)'));
}

export async function render(root, state, ui) {
  if (!state.store) { mount(root, h('p', {}, 'No store yet.')); return; }
  const list = await api('proposals', { store: state.store });
  const rows = list.map((p) => {
    const open = p.status === 'proposed';
    const val = p.val || {};
    return [
      h('a', { href: '#', onclick: (e) => { e.preventDefault(); ui.open = ui.open === p.id ? null : p.id; render(root, state, ui); } }, `#${p.id}`),
      p.run_id, short(p.genome_hash), statusBadge(p.status),
      `${num(val.composite)} (seed ${num(val.seed_composite)})`, p.test ? num(p.test.composite) : '—',
      p.target_offered || (p.target_dir ? h('span', { class: 'hint', title: p.target_dir }, 'the demo\'s own seed folder: not offered (run.py --accept ID --to SKILL_DIR)') : '—'),
      when(p.created_at),
      h('span', {},
        h('input', { id: `proposal-text-${p.id}`, placeholder: 'note / reason', disabled: !open, size: 18 }), ' ',
        h('button', { class: 'accept', disabled: !open || !p.target_offered,
          title: !open ? `already ${p.status}` : p.target_offered ? 'deploy into the folder shown, after you confirm (atomic; previous version kept)'
            : `no folder to offer: deploy with python run.py --accept ${p.id} --to SKILL_DIR`,
          onclick: async () => { await decide(state, ui, p, 'accept'); render(root, state, ui); } }, 'Accept'), ' ',
        h('button', { class: 'reject', disabled: !open, title: open ? 'reject this champion' : `already ${p.status}`,
          onclick: async () => { await decide(state, ui, p, 'reject'); render(root, state, ui); } }, 'Reject')),
    ];
  });
  const detail = ui.open ? await api(`proposals/${ui.open}`, { store: state.store }).catch(() => null) : null;
  const ticks = await api('triggers', { store: state.store }).catch(() => ({ ticks: [], counts: {} }));
  mount(root,
    h('h2', {}, 'Proposals'),
    h('p', { class: 'hint' }, 'A finished run\'s champion becomes a proposal; nothing is deployed until you accept it. '
      + 'Accept deploys into the folder shown, atomically, keeping the previous version (undo: python run.py --rollback SKILL_DIR).'),
    ui.message ? h('p', { id: 'proposal-message' }, ui.message) : null,
    list.length ? table(['id', 'run', 'champion', 'status', 'val composite', 'test composite', 'deploys into', 'proposed', 'decide'], rows, { id: 'proposals' })
      : h('p', { id: 'proposals-empty' }, 'No proposals yet: a run proposes its champion when it finishes (or python run.py --propose RUN).'),
    detail ? detailView(detail) : null,
    h('h3', {}, 'Watch ticks'),
    triggersView(ticks));
}
