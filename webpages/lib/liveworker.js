// One live stream per browser, however many tabs: a SharedWorker holding the one EventSource of every tab of
// this origin (Chromium allows six HTTP/1.1 connections per host; one stream per tab froze the seventh). Each
// tab says what it shows ({type: 'watch', store, run}); the stream follows the union (`/api/events?watch=`,
// reopened when the union changes) and each tab gets its own slice ({version, runs, run, code_stale,
// children}) only when that slice moved. A tab leaving says {type: 'close'}.
const tabs = new Map();   // port -> {store, run, last}
let source = null;
let following = '';
let latest = null;

function union() {
  const pairs = new Set();
  for (const t of tabs.values()) if (t.store) pairs.add(`${t.store}:${t.run || ''}`);
  return [...pairs].sort().join(',');
}

function slice(tab) {
  const s = latest && latest.stores && latest.stores[tab.store];
  if (!s || (tab.run && !(tab.run in s.run))) return null;   // not in this stream yet: wait for the next
  return { version: s.version, runs: s.runs, run: tab.run ? s.run[tab.run] : undefined,
    code_stale: latest.code_stale, children: latest.children };
}

function send(port, tab) {
  const data = slice(tab);
  if (!data) return;
  const text = JSON.stringify(data);
  if (text === tab.last) return;
  tab.last = text;
  port.postMessage({ type: 'change', data: { ...data, at: latest.at } });
}

function everyone(message) { for (const port of tabs.keys()) port.postMessage(message); }

function follow() {
  const wanted = union();
  if (wanted === following && (source || !wanted)) return;
  if (source) source.close();
  source = null;
  following = wanted;
  if (!wanted) return;
  source = new EventSource(`/api/events?watch=${encodeURIComponent(wanted)}`);
  source.addEventListener('change', (e) => {
    latest = JSON.parse(e.data);
    for (const [port, tab] of tabs) send(port, tab);
  });
  source.onerror = () => everyone({ type: 'offline' });
  source.onopen = () => everyone({ type: 'online' });
}

onconnect = (e) => {
  const port = e.ports[0];
  tabs.set(port, {});
  port.onmessage = (m) => {
    if (m.data.type === 'watch') {
      const tab = { store: m.data.store, run: m.data.run || null, last: null };
      tabs.set(port, tab);
      follow();
      send(port, tab);
    } else if (m.data.type === 'close') {
      tabs.delete(port);
      follow();
    }
  };
  port.start();
};
