// The after-the-run pages (Proposals, Health, Cost): adds their nav links to the header and hands their
// modules to the router. Imported by app.js before it first renders, so the links are live from the start.
import * as proposals from './proposals.js';
import * as health from './health.js';
import * as cost from './cost.js';

export const AFTER_PAGES = { proposals, health, cost };

const LABELS = { proposals: 'Proposals', health: 'Health', cost: 'Cost' };
const links = document.getElementById('links');
for (const [page, label] of Object.entries(LABELS)) {
  if (links && !links.querySelector(`a[data-page="${page}"]`)) {
    const a = document.createElement('a');
    a.href = `#/${page}`;
    a.dataset.page = page;
    a.textContent = label;
    links.append(a);
  }
}
