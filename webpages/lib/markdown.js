// A small, safe markdown renderer for what the mutator read (briefing.md): headings, paragraphs, lists, code
// blocks, pipe tables, inline code, bold, italics and links shown as text. It builds DOM nodes (lib/util.js h),
// never HTML strings, so nothing in the text can run or load anything.
import { h } from './util.js';

function inline(text) {
  const out = [];
  const pattern = /(`[^`]+`|\*\*[^*]+\*\*|\*[^*\s][^*]*\*|\[[^\]]+\]\([^)]+\))/g;
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const t = m[0];
    if (t.startsWith('`')) out.push(h('code', {}, t.slice(1, -1)));
    else if (t.startsWith('**')) out.push(h('b', {}, inline(t.slice(2, -2))));
    else if (t.startsWith('[')) { const [, label, url] = t.match(/^\[([^\]]+)\]\(([^)]+)\)$/); out.push(h('span', { class: 'md-link', title: url }, label)); }
    else out.push(h('i', {}, inline(t.slice(1, -1))));
    last = m.index + t.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

const cells = (line) => line.trim().replace(/^\||\|$/g, '').split('|').map((c) => c.trim());

export function markdown(text, attrs = {}) {
  const lines = String(text || '').replace(/\r\n?/g, '\n').split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length;) {
    const line = lines[i];
    if (/^```/.test(line)) {
      const body = [];
      for (i += 1; i < lines.length && !/^```/.test(lines[i]); i += 1) body.push(lines[i]);
      blocks.push(h('pre', { class: 'md-code' }, body.join('\n')));
      i += 1;
    } else if (/^#{1,6}\s/.test(line)) {
      const level = Math.min(6, line.match(/^#+/)[0].length + 2);
      blocks.push(h(`h${level}`, {}, inline(line.replace(/^#+\s*/, ''))));
      i += 1;
    } else if (/^\s*\|.*\|\s*$/.test(line) && /^\s*\|?\s*:?-{2,}/.test(lines[i + 1] || '')) {
      const head = cells(line);
      const rows = [];
      for (i += 2; i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i]); i += 1) rows.push(cells(lines[i]));
      blocks.push(h('div', { class: 'md-table' }, h('table', { class: 'figs' }, h('thead', {}, h('tr', {}, head.map((c) => h('th', {}, inline(c))))),
        h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, inline(c)))))))));
    } else if (/^\s*([-*+]|\d+\.)\s/.test(line)) {
      const ordered = /^\s*\d+\./.test(line);
      const items = [];
      for (; i < lines.length && /^\s*([-*+]|\d+\.)\s/.test(lines[i]); i += 1) items.push(h('li', {}, inline(lines[i].replace(/^\s*([-*+]|\d+\.)\s+/, ''))));
      blocks.push(h(ordered ? 'ol' : 'ul', {}, items));
    } else if (!line.trim()) {
      i += 1;
    } else {
      const para = [];
      for (; i < lines.length && lines[i].trim() && !/^(```|#{1,6}\s|\s*([-*+]|\d+\.)\s|\s*\|)/.test(lines[i]); i += 1) para.push(lines[i]);
      if (!para.length) { para.push(line); i += 1; }
      blocks.push(h('p', {}, inline(para.join(' '))));
    }
  }
  return h('div', { class: 'markdown', ...attrs }, blocks);
}
