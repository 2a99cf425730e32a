// vmplane console. Every read and every action is a call to /v1 with the
// signed-in key as Authorization: Bearer, so the console sees exactly what
// the API shows that key. The key lives in sessionStorage (this tab, until it
// closes or signs out), never in a URL or a cookie. Streams are read with
// fetch, since EventSource cannot send the Authorization header.
'use strict';

const KEY = 'vmplane.key', ROLE = 'vmplane.role';
const ACTIONS = JSON.parse(document.getElementById('actions').textContent || '[]');
const HOST_ACTIONS = ['enable', 'disable', 'prepare_for_maintenance', 'cancel_maintenance'];
const VM_STATES = ['Building', 'Active', 'Stopped', 'Paused', 'Suspended', 'Rescued', 'Resized', 'Error', 'Deleted', 'Shelved'];
const JOB_STATES = ['pending', 'running', 'succeeded', 'failed', 'cancelled', 'rejected'];
const ENDED = new Set(['succeeded', 'failed', 'cancelled', 'rejected']);
const main = document.getElementById('main');
let page = new AbortController();

const key = () => sessionStorage.getItem(KEY) || '';
const isAdmin = () => sessionStorage.getItem(ROLE) === 'admin';
const sleep = (ms, signal) => new Promise(r => { const t = setTimeout(r, ms); signal?.addEventListener('abort', () => { clearTimeout(t); r(); }); });

// h builds an element; text goes in as text, never as HTML.
function h(tag, attrs, ...kids) { return build(document.createElement(tag), attrs, kids); }
function s(tag, attrs, ...kids) { return build(document.createElementNS('http://www.w3.org/2000/svg', tag), attrs, kids); }
function build(el, attrs, kids) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}

function uuid() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40; b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map(v => v.toString(16).padStart(2, '0')).join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

class APIError extends Error { constructor(status, body) { super(body?.error?.message || `HTTP ${status}`); this.status = status; this.body = body; } }

// api calls /v1; every write carries a fresh Idempotency-Key.
async function api(method, path, body, bearer) {
  const headers = { Authorization: 'Bearer ' + (bearer || key()) };
  if (method !== 'GET') headers['Idempotency-Key'] = uuid();
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch('/v1' + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: bearer ? undefined : page.signal });
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (res.status === 401 && !bearer) signOut('The API refused the key (expired or revoked?); sign in again.');
  if (!res.ok) throw new APIError(res.status, data);
  return data;
}
const items = async path => (await api('GET', path)).items || [];

// stream reads a Server-Sent Event stream until the page changes or on()
// returns false, resuming after a drop from the last event id.
async function stream(path, on) {
  const signal = page.signal;
  let last = '';
  while (!signal.aborted) {
    try {
      const headers = { Authorization: 'Bearer ' + key(), Accept: 'text/event-stream' };
      if (last) headers['Last-Event-ID'] = last;
      const res = await fetch('/v1' + path, { headers, signal });
      if (res.status === 401) { signOut('The API refused the key; sign in again.'); return; }
      if (!res.ok) throw new Error('stream ' + res.status);
      on('open', null);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value.replace(/\r\n/g, '\n');
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i); buf = buf.slice(i + 2);
          let ev = 'message', data = '';
          for (const line of block.split('\n')) {
            if (!line || line.startsWith(':')) continue;
            const c = line.indexOf(':');
            const f = c < 0 ? line : line.slice(0, c), v = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
            if (f === 'event') ev = v; else if (f === 'data') data += (data ? '\n' : '') + v; else if (f === 'id') last = v;
          }
          if (!data) continue;
          let d = null; try { d = JSON.parse(data); } catch { d = null; }
          if (on(ev, d) === false) return;
        }
      }
    } catch (e) { if (signal.aborted) return; }
    on('closed', null);
    await sleep(1000, signal);
  }
}

// debounce per key: a burst of events for one VM or job is one read.
function debouncer(ms, fn) {
  const t = new Map();
  return id => { clearTimeout(t.get(id)); t.set(id, setTimeout(() => { t.delete(id); if (!page.signal.aborted) fn(id); }, ms)); };
}

// show puts a page's parts in main; parts may be arrays or null.
function show(...parts) { main.replaceChildren(...parts.flat(Infinity).filter(p => p !== null && p !== undefined && p !== false)); }

function say(msg, ok) { const el = document.getElementById('status'); el.textContent = msg || ''; el.classList.toggle('ok', !!ok); }
function fail(e) { if (e?.name === 'AbortError' || page.signal.aborted) return; say(e.message || String(e)); }

function tag(state) {
  const st = String(state || '');
  const cls = /^(active|succeeded|up|enabled|poweron)$/i.test(st) ? 's-ok'
    : /^(error|failed|rejected|down|alert|disconnected)$/i.test(st) ? 's-bad' : /ing$|pending|running|maintenance/i.test(st) ? 's-busy' : '';
  return h('span', { class: 'tag ' + cls, text: st || '—' });
}
const when = t => t ? new Date(t).toLocaleString() : '—';
const short = id => String(id || '').slice(0, 8);

// bar draws used against capacity as an SVG, labelled for screen readers.
function bar(label, used, cap, unit) {
  const pct = cap > 0 ? Math.min(used / cap, 1) * 100 : 0;
  const text = `${label}: ${used} of ${cap}${unit ? ' ' + unit : ''} used (${Math.round(pct)}%)`;
  return h('div', { class: 'barbox' },
    s('svg', { class: 'bar', viewBox: '0 0 100 10', preserveAspectRatio: 'none', role: 'img', 'aria-label': text, 'data-used': used, 'data-cap': cap },
      s('title', { text }), s('rect', { class: 'cap', x: 0, y: 0, width: 100, height: 10 }),
      s('rect', { class: used > cap ? 'over' : 'used', x: 0, y: 0, width: pct.toFixed(2), height: 10 })),
    h('span', { class: 'muted', text: `${label} ${used} / ${cap}${unit ? ' ' + unit : ''}` }));
}

function progress(job) {
  const p = job.progress;
  if (!p || !p.total) return h('span', { class: 'muted', text: ENDED.has(job.state) ? '' : '…' });
  return h('span', {}, h('progress', { class: 'progress', max: p.total, value: p.done, 'aria-label': `job progress ${p.done} of ${p.total}` }), ` ${p.done}/${p.total}`);
}

// ---- sign-in, nav, routing ----

function signOut(msg) {
  sessionStorage.removeItem(KEY); sessionStorage.removeItem(ROLE);
  page.abort();
  location.hash = '#/signin';
  route();
  say(msg || '');
}
document.getElementById('signout').addEventListener('click', () => { signOut(); say('Signed out.', true); });

function signinPage() {
  const input = h('input', { id: 'key', name: 'key', type: 'password', autocomplete: 'off', required: true, 'aria-describedby': 'key-help', spellcheck: 'false' });
  const form = h('form', { class: 'stack', 'aria-labelledby': 'signin-h', onsubmit: async ev => {
    ev.preventDefault();
    const k = input.value.trim();
    try {
      await api('GET', '/vms?limit=1', undefined, k);
      let role = 'user';
      try { await api('GET', '/hosts?limit=1', undefined, k); role = 'admin'; } catch (e) { if (e.status !== 403) throw e; }
      sessionStorage.setItem(KEY, k); sessionStorage.setItem(ROLE, role);
      say('');
      location.hash = '#/vms';
      route();
    } catch (e) { say(e.status === 401 ? 'That key was refused.' : e.message); input.focus(); }
  } },
  h('label', { for: 'key' }, 'API key'), input,
  h('p', { id: 'key-help', class: 'muted', text: 'A key looks like vmp_<id>_<secret>. It is kept in this tab only (sessionStorage) and sent to the API as a Bearer token; closing the tab or signing out forgets it. Under `make run` the admin key is in var/dev/admin-key.' }),
  h('button', { class: 'primary', type: 'submit', id: 'signin' }, 'Sign in'));
  show(h('h1', { id: 'signin-h', text: 'Sign in' }), form);
  input.focus();
}

const routes = [
  [/^\/vms$/, vmsPage], [/^\/vms\/([^/]+)$/, vmPage], [/^\/deploy$/, deployPage],
  [/^\/jobs$/, jobsPage], [/^\/jobs\/([^/]+)$/, jobPage],
  [/^\/hosts$/, hostsPage], [/^\/hosts\/([^/]+)$/, hostPage],
  [/^\/leases$/, leasesPage], [/^\/leases\/([^/]+)$/, leasePage],
  [/^\/alerts$/, alertsPage], [/^\/offerings$/, offeringsPage],
  [/^\/accounts$/, accountsPage], [/^\/charts$/, chartsPage],
];

function route() {
  page.abort();
  page = new AbortController();
  const signedIn = !!key();
  document.getElementById('nav').hidden = !signedIn;
  document.getElementById('who').hidden = !signedIn;
  for (const li of document.querySelectorAll('[data-role="admin"]')) li.hidden = !isAdmin();
  if (!signedIn) { signinPage(); return; }
  document.getElementById('who-role').textContent = isAdmin() ? 'admin' : 'user';
  const [path, query] = (location.hash.slice(1) || '/vms').split('?');
  for (const a of document.querySelectorAll('#nav a')) {
    if (path.startsWith(a.getAttribute('href').slice(1))) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  say('');
  for (const [re, fn] of routes) {
    const m = path.match(re);
    if (!m) continue;
    show(h('p', { class: 'muted', text: 'Loading…' }));
    fn(decodeURIComponent(m[1] || ''), new URLSearchParams(query || '')).then(() => {
      const h1 = main.querySelector('h1');
      if (h1) { h1.tabIndex = -1; h1.focus(); document.title = h1.textContent + ' — vmplane'; }
    }).catch(e => { fail(e); if (e.status === 404) show(h('h1', { text: 'Not found' }), h('p', { text: 'No such resource for this key.' })); });
    return;
  }
  show(h('h1', { text: 'Not found' }));
}
window.addEventListener('hashchange', route);

// ---- VMs ----

function vmRow(vm) {
  const tds = [
    h('td', { 'data-label': 'Name' }, h('a', { href: '#/vms/' + encodeURIComponent(vm.id), text: vm.name || vm.id })),
    h('td', { 'data-label': 'State', class: 'vm-state' }, tag(vm.vm_state), vm.task_state ? h('span', { class: 'muted', text: ' ' + vm.task_state }) : null),
    h('td', { 'data-label': 'Power' }, tag(vm.power_state)),
    h('td', { 'data-label': 'Host', class: 'mono', text: vm.host_id || '—' }),
    h('td', { 'data-label': 'Offering', text: vm.offering }),
  ];
  if (isAdmin()) tds.push(h('td', { 'data-label': 'Account', text: vm.account }));
  return h('tr', { id: 'vm-' + vm.id, 'data-vm': vm.id, 'data-state': vm.vm_state }, tds);
}

async function vmsPage(_, q) {
  const state = q.get('state') || '';
  const list = await items('/vms?limit=500' + (state ? '&state=' + encodeURIComponent(state) : ''));
  const live = h('span', { class: 'muted', id: 'live', text: 'connecting…' });
  const select = h('select', { id: 'state-filter', onchange: e => { location.hash = '#/vms' + (e.target.value ? '?state=' + e.target.value : ''); } },
    h('option', { value: '', text: 'any' }), VM_STATES.map(v => h('option', { value: v, selected: v === state, text: v })));
  const tbody = h('tbody', {}, list.map(vmRow));
  const head = ['Name', 'State', 'Power', 'Host', 'Offering'].concat(isAdmin() ? ['Account'] : []);
  show(
    h('h1', { text: 'VMs' }),
    h('div', { class: 'filters' }, h('label', { for: 'state-filter' }, 'State '), select, h('a', { href: '#/deploy' }, 'Deploy a VM'), live),
    h('table', { class: 'responsive', 'aria-label': 'VMs' }, h('thead', {}, h('tr', {}, head.map(t => h('th', { scope: 'col', text: t })))), tbody),
    list.length ? null : h('p', { class: 'muted', id: 'empty', text: 'No VMs' + (state ? ' in state ' + state : '') + '.' }));
  const refresh = debouncer(150, async id => {
    let vm = null;
    try { vm = await api('GET', '/vms/' + encodeURIComponent(id)); } catch (e) { if (e.status !== 404) return fail(e); }
    const old = document.getElementById('vm-' + id);
    if (!vm || (state && vm.vm_state !== state)) { old?.remove(); return; }
    if (old) old.replaceWith(vmRow(vm)); else tbody.prepend(vmRow(vm));
    document.getElementById('empty')?.remove();
  });
  stream('/events', (ev, d) => {
    if (ev === 'open') live.textContent = 'live';
    else if (ev === 'closed') live.textContent = 'reconnecting…';
    else if (d?.vm_id) refresh(d.vm_id);
  });
}

function reasonFor(vm, name) {
  if (!vm.allowed_actions?.length && vm.vm_state === 'Building') return 'Not allowed yet: the VM is being built.';
  const st = vm.vm_state + (vm.task_state ? ' (' + vm.task_state + ')' : '');
  return `Not allowed while the VM is ${st}.`;
}

const PARAM_LABELS = { snapshot_name: 'Snapshot name', offering: 'New offering (name or id)', volume_id: 'Volume id', size_gb: 'Size (GiB)' };

// actionForm opens, in box, a small form for an action's required
// parameters: a labelled input each, run and cancel. It takes the focus,
// and gives it back to the action's button when it closes (Escape
// cancels). The box sits outside the buttons, which are redrawn live.
function actionForm(box, vm, a, run) {
  const expand = on => { for (const b of document.querySelectorAll('#vm-actions button[aria-expanded]')) b.setAttribute('aria-expanded', String(on && b.dataset.action === a.name)); };
  const back = () => { box.replaceChildren(); expand(false); document.querySelector(`#vm-actions button[data-action="${a.name}"]`)?.focus(); };
  const inputs = a.required.map(p => h('input', { id: 'param-' + p, name: p, required: true, autocomplete: 'off',
    type: p === 'size_gb' ? 'number' : 'text', min: p === 'size_gb' ? 1 : null }));
  const title = a.name.replace(/_/g, ' ');
  const form = h('form', { class: 'stack inline-form', id: 'action-params', 'data-action': a.name, 'aria-labelledby': 'action-params-h',
    onkeydown: ev => { if (ev.key === 'Escape') { ev.preventDefault(); back(); } },
    onsubmit: async ev => {
      ev.preventDefault();
      const body = { action: a.name };
      a.required.forEach((p, i) => { body[p] = p === 'size_gb' ? Number(inputs[i].value) : inputs[i].value.trim(); });
      if (await run(body)) back(); else inputs[0].focus();
    } },
    h('h3', { id: 'action-params-h', text: `${title} ${vm.name || vm.id}` }),
    a.required.map((p, i) => h('label', {}, PARAM_LABELS[p] || p.replace(/_/g, ' '), inputs[i])),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', id: 'action-params-submit' }, title),
      h('button', { type: 'button', id: 'action-params-cancel', onclick: back }, 'Cancel')));
  box.replaceChildren(form);
  expand(true);
  inputs[0].focus();
}

function actionButtons(vm, onJob, box) {
  const allowed = new Set(vm.allowed_actions || []);
  return h('div', { class: 'actions', role: 'group', 'aria-label': 'VM actions' }, ACTIONS.map(a => {
    const ok = allowed.has(a.name);
    const why = 'why-' + a.name;
    return [h('button', {
      type: 'button', 'data-action': a.name, disabled: !ok, title: ok ? a.doc : reasonFor(vm, a.name), 'aria-describedby': ok ? null : why,
      'aria-expanded': a.required?.length ? String(!!box.firstChild && box.firstChild?.dataset.action === a.name) : null,
      onclick: async () => {
        const run = async body => {
          try { onJob(await api('POST', `/vms/${encodeURIComponent(vm.id)}/actions`, body)); say(''); return true; } catch (e) { fail(e); return false; }
        };
        if (a.required?.length) { actionForm(box, vm, a, run); return; }
        if (a.name === 'terminate' && !confirm(`Terminate ${vm.name}?`)) return;
        await run({ action: a.name });
      } }, a.name.replace(/_/g, ' ')),
    ok ? null : h('span', { id: why, hidden: true, text: reasonFor(vm, a.name) })];
  }));
}

// jobItem renders a job with its steps and follows it live until it ends.
function jobItem(job) {
  const li = h('li', { id: 'job-' + job.id, 'data-job': job.id });
  const draw = j => {
    job = Object.assign(job, j);
    const steps = job.steps || [];
    li.dataset.state = job.state;
    li.replaceChildren();
    build(li, {}, [
      h('a', { href: '#/jobs/' + job.id, text: job.type }), ' ', tag(job.state), ' ', progress(job),
      job.reason ? h('span', { class: 'muted', text: ' ' + job.reason }) : null,
      steps.length ? h('ol', { class: 'steps', 'aria-label': 'steps' }, steps.map((st, i) =>
        h('li', { class: i === steps.length - 1 && !ENDED.has(job.state) ? 'current' : '', text: `${st.step || st.task_state}${st.text ? ' — ' + st.text : ''}` }))) : null]);
  };
  draw({});
  if (!ENDED.has(job.state)) followJob(job.id, draw);
  return li;
}

function followJob(id, draw) {
  const reread = debouncer(100, async () => {
    try { draw(await api('GET', `/jobs/${encodeURIComponent(id)}?steps=true`)); } catch (e) { fail(e); }
  });
  stream(`/jobs/${encodeURIComponent(id)}/events`, (ev, d) => {
    if (ev === 'job' && d) { draw(d); if (ENDED.has(d.state)) return false; }
    else if (ev !== 'open' && ev !== 'closed') reread(id);
    if (ev === 'JobSucceeded' || ev === 'JobFailed' || ev === 'JobCancelled' || ev === 'JobRejected') { reread(id); }
  });
}

async function vmPage(id) {
  const path = '/vms/' + encodeURIComponent(id);
  let vm = await api('GET', path);
  const [jobs, alerts] = await Promise.all([items(`/jobs?vm=${encodeURIComponent(id)}&limit=20`), items(`/alerts?vm=${encodeURIComponent(id)}`).catch(() => [])]);
  const facts = h('dl', { class: 'facts', id: 'vm-facts' });
  const acts = h('div', { id: 'vm-actions' }), actBox = h('div', { id: 'action-form' });
  const jobList = h('ol', { id: 'vm-jobs', reversed: true });
  const seen = new Set();
  const addJob = j => { if (seen.has(j.id)) return; seen.add(j.id); jobList.prepend(jobItem(j)); };
  const draw = () => {
    document.querySelector('h1').textContent = 'VM ' + (vm.name || vm.id);
    facts.replaceChildren(...[
      ['State', [tag(vm.vm_state), vm.task_state ? ' ' + vm.task_state : '']], ['Power', tag(vm.power_state)],
      ['Host', vm.host_id ? (isAdmin() ? h('a', { href: '#/hosts/' + encodeURIComponent(vm.host_id), text: vm.host_id }) : vm.host_id) : '—'],
      ['Offering', `${vm.offering} (${vm.cpu} CPU, ${vm.memory_mb} MB)`], ['HA', vm.ha ? 'yes' : 'no'], ['Zone', vm.zone_id],
      ['Account', vm.account], ['Id', h('span', { class: 'mono', text: vm.id })], ['Updated', when(vm.updated_at)],
    ].flatMap(([k, v]) => [h('dt', { text: k }), h('dd', { 'data-field': k.toLowerCase() }, v)]));
    acts.replaceChildren(actionButtons(vm, j => { addJob(j); }, actBox));
    vols.replaceChildren(table(['Volume', 'Kind', 'Size', 'Device', 'State'], (vm.volumes || []).map(v =>
      [v.name || v.id, v.kind || v.type, (v.size_gb ?? '') + ' GiB', v.device, v.state || v.status])));
    nics.replaceChildren(table(['Network', 'IP', 'MAC'], (vm.nics || []).map(n => [n.network_id, n.ip, n.mac])));
  };
  const vols = h('div'), nics = h('div');
  const hist = vmHistory(id);
  show(h('h1', {}), facts, h('h2', { text: 'Actions' }), acts, actBox,
    h('div', { class: 'grid2' }, h('section', { 'aria-labelledby': 'vol-h' }, h('h2', { id: 'vol-h', text: 'Volumes' }), vols),
      h('section', { 'aria-labelledby': 'nic-h' }, h('h2', { id: 'nic-h', text: 'NICs' }), nics)),
    h('h2', { text: 'Jobs' }), jobList, hist.box,
    h('h2', { text: 'Alerts' }), alerts.length ? table(['Kind', 'Message', 'Raised', 'Acked'], alerts.map(a => [a.kind, a.message || a.text, when(a.raised_at || a.created_at), a.acked ? 'yes' : 'no'])) : h('p', { class: 'muted', text: 'No alerts.' }));
  draw();
  jobs.slice().reverse().forEach(addJob);
  const reread = debouncer(150, async () => {
    try { vm = await api('GET', path); draw(); } catch (e) { fail(e); }
    hist.reload();
  });
  hist.reload();
  stream('/events?vm=' + encodeURIComponent(id), (ev, d) => {
    if (d?.job_id && !seen.has(d.job_id)) api('GET', `/jobs/${encodeURIComponent(d.job_id)}?steps=true`).then(addJob, () => {});
    if (ev !== 'open' && ev !== 'closed') reread(id);
  });
}

// vmHistory is the VM's past from the history (ClickHouse): a slider over
// its events, from its creation to now, showing the VM as it was at the
// instant chosen. reload rereads the events, keeping the slider at now if
// it was there.
function vmHistory(id) {
  const path = `/vms/${encodeURIComponent(id)}/history`;
  let events = [], asked = '';
  const slider = h('input', { type: 'range', id: 'history-at', min: 0, max: 0, step: 1, value: 0, 'aria-describedby': 'history-when' });
  const at = h('output', { id: 'history-when', for: 'history-at' });
  const facts = h('dl', { class: 'facts', id: 'history-vm', 'aria-live': 'polite' });
  const body = h('div', {}, h('p', { class: 'muted', text: 'Loading the history…' }));
  const box = h('section', { 'aria-labelledby': 'history-h' }, h('h2', { id: 'history-h', text: 'History' }), body);
  const instant = i => i < events.length ? events[i].at : new Date().toISOString();
  const label = i => i < events.length ? `${when(events[i].at)} — ${events[i].type}` : 'now';
  const showAt = debouncer(120, async () => {
    const i = Number(slider.value), t = instant(i);
    at.textContent = label(i);
    slider.setAttribute('aria-valuetext', label(i));
    asked = t;
    try {
      const v = await api('GET', `${path}?at=${encodeURIComponent(t)}`);
      if (asked !== t) return;
      const x = v.vm;
      facts.dataset.state = x.vm_state;
      facts.dataset.pos = String(i);
      facts.replaceChildren(...[['State', [tag(x.vm_state), x.task_state ? ' ' + x.task_state : '']], ['Power', tag(x.power_state)],
        ['Host', x.host_id || '—'], ['Since', when(v.since)], ['Job in flight', v.pending_job ? h('a', { href: '#/jobs/' + encodeURIComponent(v.pending_job), text: short(v.pending_job) }) : '—']]
        .flatMap(([k, val]) => [h('dt', { text: k }), h('dd', { 'data-field': 'as-of-' + k.toLowerCase() }, val)]));
    } catch (e) {
      if (e.status === 404) { facts.dataset.state = ''; facts.dataset.pos = String(i); facts.replaceChildren(h('dt', { text: 'State' }), h('dd', { text: 'not yet created' })); } else fail(e);
    }
  });
  slider.addEventListener('input', () => showAt('at'));
  slider.addEventListener('focus', () => reload('list'));
  const reload = debouncer(500, async () => {
    let list;
    try { list = await items(path); } catch (e) {
      if (e.status === 503) body.replaceChildren(h('p', { class: 'muted', id: 'history-off', text: 'No history here: the event history (ClickHouse) is not configured on this gateway.' }));
      else fail(e);
      return;
    }
    const atEnd = Number(slider.value) >= events.length;
    events = list.slice().sort((a, b) => new Date(a.at) - new Date(b.at));
    slider.max = events.length;
    if (atEnd) slider.value = events.length;
    if (!body.contains(slider)) {
      body.replaceChildren(h('div', { class: 'history' }, h('label', { for: 'history-at' }, 'As of'), slider, at),
        h('p', { class: 'muted', text: 'Move the slider (or use the arrow keys, Home and End) from the VM’s creation to now, one event at a time.' }), facts);
    }
    showAt('at');
  });
  return { box, reload: () => reload('list') };
}

function table(head, rows, label) {
  if (!rows.length) return h('p', { class: 'muted', text: 'None.' });
  return h('table', { class: 'responsive', 'aria-label': label || null },
    h('thead', {}, h('tr', {}, head.map(t => h('th', { scope: 'col', text: t })))),
    h('tbody', {}, rows.map(r => h('tr', {}, r.map((c, i) => h('td', { 'data-label': head[i] }, c ?? '—'))))));
}

async function deployPage() {
  const [offerings, templates] = await Promise.all([items('/offerings'), items('/templates').catch(() => [])]);
  const f = (label, input, help) => h('label', {}, label, input, help ? h('span', { class: 'muted', text: help }) : null);
  const name = h('input', { name: 'name', id: 'deploy-name', required: true, pattern: '[a-z0-9][a-z0-9-]{0,62}', autocomplete: 'off' });
  const offering = h('select', { name: 'offering', id: 'deploy-offering', required: true }, offerings.map(o => h('option', { value: o.name, text: `${o.name} — ${o.cpu} CPU, ${o.memory_mb} MB` })));
  const template = h('select', { name: 'template', id: 'deploy-template' }, h('option', { value: '', text: 'none' }), templates.map(t => h('option', { value: t.id, text: t.name || t.id })));
  const ha = h('input', { type: 'checkbox', name: 'ha', id: 'deploy-ha' });
  const affinity = h('input', { name: 'affinity_group', id: 'deploy-affinity', autocomplete: 'off' });
  show(h('h1', { text: 'Deploy a VM' }), h('form', { class: 'stack', id: 'deploy-form', onsubmit: async ev => {
    ev.preventDefault();
    const body = { name: name.value.trim(), offering: offering.value };
    if (template.value) body.template = template.value;
    if (ha.checked) body.ha = true;
    if (affinity.value.trim()) body.affinity_group = affinity.value.trim();
    try { const job = await api('POST', '/vms', body); location.hash = '#/vms/' + encodeURIComponent(job.vm_id); } catch (e) { fail(e); }
  } },
  f('Name', name, 'lower case letters, digits and dashes'), f('Offering', offering), f('Template', template),
  h('label', { class: 'check' }, ha, 'High availability (restart elsewhere if its host fails)'),
  f('Affinity group', affinity, 'VMs of one group are kept on different hosts'),
  h('button', { class: 'primary', type: 'submit', id: 'deploy-submit' }, 'Deploy')));
}

// ---- jobs ----

function jobRow(j) {
  return h('tr', { id: 'jobrow-' + j.id, 'data-job': j.id, 'data-state': j.state },
    h('td', { 'data-label': 'Job' }, h('a', { class: 'mono', href: '#/jobs/' + j.id, text: short(j.id) })),
    h('td', { 'data-label': 'Type', text: j.type }),
    h('td', { 'data-label': 'VM' }, j.vm_id ? h('a', { class: 'mono', href: '#/vms/' + j.vm_id, text: short(j.vm_id) }) : '—'),
    h('td', { 'data-label': 'State' }, tag(j.state), j.error_code ? h('span', { class: 'muted', text: ' ' + j.error_code }) : null),
    h('td', { 'data-label': 'Progress' }, progress(j)),
    h('td', { 'data-label': 'Created', text: when(j.created_at) }));
}

async function jobsPage(_, q) {
  const state = q.get('state') || '';
  const list = await items('/jobs?limit=100' + (state ? '&state=' + state : ''));
  const tbody = h('tbody', {}, list.map(jobRow));
  const live = h('span', { class: 'muted', id: 'live', text: 'connecting…' });
  show(h('h1', { text: 'Jobs' }),
    h('div', { class: 'filters' }, h('label', { for: 'job-state' }, 'State '),
      h('select', { id: 'job-state', onchange: e => { location.hash = '#/jobs' + (e.target.value ? '?state=' + e.target.value : ''); } },
        h('option', { value: '', text: 'any' }), JOB_STATES.map(v => h('option', { value: v, selected: v === state, text: v }))), live),
    h('table', { class: 'responsive', 'aria-label': 'Jobs' }, h('thead', {}, h('tr', {}, ['Job', 'Type', 'VM', 'State', 'Progress', 'Created'].map(t => h('th', { scope: 'col', text: t })))), tbody));
  const refresh = debouncer(150, async id => {
    try {
      const j = await api('GET', '/jobs/' + id);
      const old = document.getElementById('jobrow-' + id);
      if (state && j.state !== state) { old?.remove(); return; }
      if (old) old.replaceWith(jobRow(j)); else tbody.prepend(jobRow(j));
    } catch (e) { if (e.status !== 404) fail(e); }
  });
  stream('/events', (ev, d) => {
    if (ev === 'open') live.textContent = 'live'; else if (ev === 'closed') live.textContent = 'reconnecting…';
    else if (d?.job_id) refresh(d.job_id);
  });
}

async function jobPage(id) {
  const job = await api('GET', `/jobs/${encodeURIComponent(id)}?steps=true`);
  const facts = h('dl', { class: 'facts' });
  const box = h('ul', { class: 'plain' });
  const journal = h('div');
  const cancel = h('button', { type: 'button', id: 'cancel', onclick: async () => { try { await api('POST', `/jobs/${encodeURIComponent(id)}/cancel`); } catch (e) { fail(e); } } }, 'Cancel job');
  const drawFacts = j => {
    facts.replaceChildren(...[['Type', j.type], ['State', tag(j.state)], ['VM', j.vm_id ? h('a', { href: '#/vms/' + j.vm_id, text: j.vm_id }) : '—'],
      ['Reason', j.reason || '—'], ['Error', j.error_code || '—'], ['Caller', j.caller ? `${j.caller.account} ${j.caller.key_id || ''}` : '—'],
      ['Created', when(j.created_at)], ['Finished', when(j.finished_at)]].flatMap(([k, v]) => [h('dt', { text: k }), h('dd', {}, v)]));
    cancel.disabled = ENDED.has(j.state);
    if (ENDED.has(j.state)) loadJournal();
  };
  const loadJournal = async () => {
    try {
      const lines = await items(`/jobs/${encodeURIComponent(id)}/journal`);
      journal.replaceChildren(table(['Seq', 'Kind', 'Step', 'Text', 'At'], lines.map(l => [l.seq, l.kind || l.type, l.step || l.task_state, l.text, when(l.at)]), 'Journal'));
    } catch (e) { journal.replaceChildren(h('p', { class: 'muted', text: 'Journal: ' + e.message })); }
  };
  const item = jobItem(job);
  const orig = item; // jobItem follows the stream; facts follow it too
  new MutationObserver(() => drawFacts(Object.assign({}, job, { state: orig.dataset.state }))).observe(orig, { attributes: true, attributeFilter: ['data-state'] });
  box.append(item);
  show(h('h1', { text: 'Job ' + short(job.id) + ' — ' + job.type }), facts, h('p', {}, cancel), h('h2', { text: 'Steps' }), box, h('h2', { text: 'Journal' }), journal);
  drawFacts(job);
  if (!ENDED.has(job.state)) loadJournal();
}

// ---- hosts (admin) ----

function hostBars(host) {
  return [bar('CPU', host.used_cpu, host.cpu_capacity || host.cpu, 'vCPU'), bar('Memory', host.used_memory_mb, host.memory_capacity_mb || host.memory_mb, 'MB')];
}

function hostButtons(host, after) {
  const rs = host.resource_state || '', maint = /Maintenance/i.test(rs);
  // What the host's resource state makes pointless; the host processor
  // remains the judge of the rest.
  const why = { enable: rs === 'Enabled' && 'Already enabled.', disable: rs === 'Disabled' && 'Already disabled.',
    prepare_for_maintenance: maint && 'Already in maintenance.', cancel_maintenance: !maint && 'Not in maintenance.' };
  return h('div', { class: 'actions', role: 'group', 'aria-label': 'host actions for ' + host.name }, HOST_ACTIONS.map(a =>
    h('button', { type: 'button', 'data-host-action': a, disabled: !!why[a], title: why[a] || null, 'aria-label': why[a] ? `${a.replace(/_/g, ' ')} (${why[a]})` : null, onclick: async () => {
      try {
        const r = await api('POST', `/hosts/${encodeURIComponent(host.id)}/actions`, { action: a });
        say(`${a} accepted for ${host.name} (${r.command})`, true);
        if (a === 'prepare_for_maintenance') followMaintenance(host, r.command_id);
        after();
      } catch (e) { fail(e); }
    } }, a.replace(/_/g, ' '))));
}

// A maintenance is a job whose id is its command's (design.md §7): the
// host's row and page follow it live, steps and progress, once the read
// model has it. Its element is made once per host and page, so that the
// redraws every 2 s move it rather than open another stream.
const maintenance = new Map();

async function followMaintenance(host, id) {
  const signal = page.signal;
  const box = h('div', { class: 'maintenance', 'data-maintenance': host.id, 'aria-live': 'polite' },
    h('p', { class: 'muted', text: 'Maintenance job ' + id + ': waiting for it to be recorded…' }));
  maintenance.set(host.id, box);
  signal.addEventListener('abort', () => maintenance.delete(host.id));
  for (let i = 0; i < 60 && !signal.aborted; i++) {
    try {
      const job = await api('GET', `/jobs/${encodeURIComponent(id)}?steps=true`);
      box.replaceChildren(h('p', { text: 'Maintenance of ' + (host.name || host.id) }),
        h('ol', { class: 'jobs', 'aria-label': 'maintenance job of ' + (host.name || host.id) }, jobItem(job)));
      return;
    } catch (e) {
      if (e.status !== 404) { fail(e); return; }
    }
    await sleep(500, signal);
  }
}

async function zoneCapacity(zones) {
  const out = [];
  for (const z of zones) {
    try {
      const c = await api('GET', '/zones/' + encodeURIComponent(z) + '/capacity');
      out.push(h('section', { 'aria-label': 'zone ' + z, class: 'zone', 'data-zone': z }, h('h2', { text: 'Zone ' + z }),
        h('p', { class: 'muted', text: `${c.total.hosts} hosts, ${c.total.reservable_hosts} reservable, ${c.total.reserved_hosts} reserved` }),
        bar('Zone CPU', c.total.used_cpu, c.total.cpu, 'vCPU'), bar('Zone memory', c.total.used_memory_mb, c.total.memory_mb, 'MB')));
    } catch (e) { out.push(h('p', { class: 'muted', text: `Zone ${z}: ${e.message}` })); }
  }
  return out;
}

async function hostsPage() {
  const draw = async () => {
    const hosts = await items('/hosts?limit=500');
    const zones = [...new Set(hosts.map(x => x.zone_id))].sort();
    const cap = await zoneCapacity(zones);
    if (page.signal.aborted) return;
    const rows = hosts.map(x => h('tr', { id: 'host-' + x.id, 'data-host': x.id },
      h('td', { 'data-label': 'Host' }, h('a', { href: '#/hosts/' + encodeURIComponent(x.id), text: x.name || x.id })),
      h('td', { 'data-label': 'Status' }, tag(x.status), ' ', tag(x.resource_state)),
      h('td', { 'data-label': 'CPU', class: 'cpu' }, hostBars(x)[0]),
      h('td', { 'data-label': 'Memory' }, hostBars(x)[1]),
      h('td', { 'data-label': 'VMs', text: x.vm_count }),
      h('td', { 'data-label': 'Actions' }, hostButtons(x, draw), maintenance.get(x.id))));
    show(h('h1', { text: 'Hosts' }), ...cap,
      h('h2', { text: 'Hosts' }), h('p', { class: 'muted', text: 'Bars show what is used against the overcommitted capacity; refreshed every 2 s.' }),
      h('table', { class: 'responsive', 'aria-label': 'Hosts' }, h('thead', {}, h('tr', {}, ['Host', 'Status', 'CPU', 'Memory', 'VMs', 'Actions'].map(t => h('th', { scope: 'col', text: t })))), h('tbody', {}, rows)));
  };
  await draw();
  poll(2000, draw);
}

// poll redraws a page that has no stream of its own, keeping the focus.
async function poll(ms, draw) {
  const signal = page.signal;
  for (;;) {
    await sleep(ms, signal);
    if (signal.aborted) return;
    const focused = document.activeElement?.id;
    try { await draw(); } catch (e) { fail(e); }
    if (focused) document.getElementById(focused)?.focus();
  }
}

async function hostPage(id) {
  const draw = async () => {
    const [x, vms] = await Promise.all([api('GET', '/hosts/' + encodeURIComponent(id)), items('/vms?limit=500&host=' + encodeURIComponent(id))]);
    if (page.signal.aborted) return;
    show(h('h1', { text: 'Host ' + (x.name || x.id) }),
      h('dl', { class: 'facts' }, [['Status', tag(x.status)], ['Resource state', tag(x.resource_state)], ['Zone / cluster', `${x.zone_id} / ${x.cluster_id}`],
        ['Hypervisor', x.hypervisor], ['Reservable', x.reservable ? 'yes' : 'no'], ['Overcommit', `CPU ×${x.cpu_overcommit}, memory ×${x.mem_overcommit}`],
        ['Tags', (x.tags || []).join(', ') || '—'], ['Last ping', when(x.last_ping_at)]].flatMap(([k, v]) => [h('dt', { text: k }), h('dd', {}, v)])),
      h('h2', { text: 'Capacity' }), hostBars(x), h('h2', { text: 'Actions' }), hostButtons(x, draw), maintenance.get(x.id),
      x.reservation ? [h('h2', { text: 'Reservation' }), h('p', { text: `${x.reservation.planner} ${x.reservation.resource_usage} ${x.reservation.account || ''}` })] : null,
      h('h2', { text: 'VMs' }), table(['VM', 'State', 'Account'], vms.map(v => [h('a', { href: '#/vms/' + v.id, text: v.name }), tag(v.vm_state), v.account])));
  };
  await draw();
  poll(2000, draw);
}

// ---- leases, alerts, offerings, accounts, charts ----

const leaseHosts = l => (l.reservations || []).flatMap(r => r.hosts || []);

// leaseTimeline draws, for every host a lease holds, a row of bars from
// each lease's start to its end, with now marked. Each bar is labelled with
// its lease and times for a screen reader; the row with its host.
function leaseTimeline(list) {
  const byHost = new Map();
  for (const l of list) for (const x of new Set(leaseHosts(l))) (byHost.get(x) || byHost.set(x, []).get(x)).push(l);
  if (!byHost.size) return h('p', { class: 'muted', id: 'lease-timeline-empty', text: 'No lease holds a host yet.' });
  const now = Date.now(), leases = [...byHost.values()].flat();
  const from = Math.min(now, ...leases.map(l => new Date(l.start).getTime()));
  const to = Math.max(now, ...leases.map(l => new Date(l.end).getTime()));
  const W = 600, x = t => ((t - from) / Math.max(to - from, 1) * W).toFixed(1);
  const rows = [...byHost.keys()].sort().map(host => h('tr', { 'data-timeline-host': host },
    h('th', { scope: 'row', class: 'mono' }, isAdmin() ? h('a', { href: '#/hosts/' + encodeURIComponent(host), text: host }) : host),
    h('td', {}, s('svg', { class: 'timeline', viewBox: `0 0 ${W} 16`, preserveAspectRatio: 'none', role: 'group', 'aria-label': 'Leases of host ' + host },
      s('rect', { class: 'track', x: 0, y: 0, width: W, height: 16 }),
      byHost.get(host).map(l => {
        const text = `${l.name || l.id}: ${when(l.start)} to ${when(l.end)} (${l.status})`;
        const a = new Date(l.start).getTime(), b = new Date(l.end).getTime();
        return s('rect', { class: 'lease-bar', 'data-lease': l.name || l.id, role: 'img', 'aria-label': text,
          x: x(a), y: 2, width: Math.max(Number(x(b)) - Number(x(a)), 2).toFixed(1), height: 12 }, s('title', { text }));
      }),
      s('line', { class: 'now', x1: x(now), x2: x(now), y1: 0, y2: 16 }, s('title', { text: 'now' }))))));
  return h('table', { class: 'timeline-table', id: 'lease-timeline', 'aria-label': 'Leases per host over time' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Host' }),
      h('th', { scope: 'col' }, h('span', { class: 'axis' }, h('span', { text: when(from) }), h('span', { text: 'red line: now' }), h('span', { text: when(to) }))))),
    h('tbody', {}, rows));
}

async function leasesPage() {
  const list = await items('/leases?limit=200');
  const name = h('input', { id: 'lease-name', required: true, autocomplete: 'off' });
  const min = h('input', { id: 'lease-min', type: 'number', min: 1, value: 1, required: true });
  const max = h('input', { id: 'lease-max', type: 'number', min: 1, value: 1 });
  const props = h('input', { id: 'lease-props', autocomplete: 'off', placeholder: 'gpu=yes rack=42' });
  const start = h('input', { id: 'lease-start', type: 'datetime-local' });
  const end = h('input', { id: 'lease-end', type: 'datetime-local', required: true,
    value: new Date(Date.now() + 86400e3 - new Date().getTimezoneOffset() * 60e3).toISOString().slice(0, 16) });
  show(h('h1', { text: 'Leases' }),
    table(['Lease', 'Status', 'Hosts', 'Start', 'End'], list.map(l => [h('a', { href: '#/leases/' + encodeURIComponent(l.id), text: l.name || l.id }),
      [tag(l.status), l.degraded ? ' degraded' : ''], leaseHosts(l).length, when(l.start), when(l.end)]), 'Leases'),
    h('h2', { text: 'Hosts over time' }), leaseTimeline(list),
    h('h2', { text: 'Reserve hosts' }),
    h('form', { class: 'stack', id: 'lease-form', onsubmit: async ev => {
      ev.preventDefault();
      const host_properties = Object.fromEntries(props.value.split(/\s+/).filter(Boolean).map(kv => kv.split('=', 2)));
      const body = { name: name.value.trim(), end: new Date(end.value).toISOString(),
        reservations: [{ min_hosts: Number(min.value), max_hosts: Number(max.value || min.value), host_properties }] };
      if (start.value) body.start = new Date(start.value).toISOString();
      try { const l = await api('POST', '/leases', body); location.hash = '#/leases/' + encodeURIComponent(l.id); } catch (e) { fail(e); }
    } }, h('label', {}, 'Name', name), h('label', {}, 'Minimum hosts', min), h('label', {}, 'Maximum hosts', max),
    h('label', {}, 'Host properties (key=value, space separated)', props),
    h('label', {}, 'Start (empty: now)', start), h('label', {}, 'End', end), h('button', { class: 'primary', type: 'submit', id: 'lease-submit' }, 'Create lease')));
}

async function leasePage(id) {
  const path = '/leases/' + encodeURIComponent(id);
  const draw = async () => {
    const [l, events] = await Promise.all([api('GET', path), items(path + '/events').catch(() => [])]);
    if (page.signal.aborted) return;
    const flags = r => [r.missing_resources && 'missing hosts (healing)', r.resources_changed && 'hosts replaced'].filter(Boolean).join(', ') || '—';
    show(h('h1', { text: 'Lease ' + (l.name || l.id) }),
      h('dl', { class: 'facts' }, [['Status', tag(l.status)], ['Degraded', l.degraded ? 'yes' : 'no'], ['Zone', l.zone_id], ['Project', l.project || '—'],
        ['Start', when(l.start)], ['End', when(l.end)], ['Reason', l.reason || '—']].flatMap(([k, v]) => [h('dt', { text: k }), h('dd', { 'data-field': k.toLowerCase() }, v)])),
      h('h2', { text: 'Reservations' }),
      table(['Status', 'Hosts wanted', 'Properties', 'Hosts', 'Healing'], (l.reservations || []).map(r => [tag(r.status), `${r.min_hosts}–${r.max_hosts}`,
        Object.entries(r.host_properties || {}).map(([k, v]) => `${k}=${v}`).join(' ') || '—',
        (r.hosts || []).length ? (r.hosts || []).map((x, i) => [i ? ', ' : '', isAdmin() ? h('a', { href: '#/hosts/' + encodeURIComponent(x), class: 'lease-host', text: x }) : h('span', { class: 'lease-host', text: x })]) : '—',
        flags(r)]), 'Reservations'),
      h('h2', { text: 'Events' }),
      table(['At', 'Event', 'Status', 'Host', 'Detail'], events.slice(-50).reverse().map(e => [when(e.at), e.event, e.status, e.host_id, e.detail]), 'Lease events'),
      h('p', {}, h('button', { type: 'button', id: 'lease-delete', onclick: async () => {
        if (!confirm('End and delete this lease?')) return;
        try { await api('DELETE', path); say('Lease deleted.', true); } catch (e) { fail(e); }
      } }, 'Delete lease')));
  };
  await draw();
  poll(2000, draw);
}

async function alertsPage() {
  const list = await items('/alerts?limit=200');
  show(h('h1', { text: 'Alerts' }), table(['Kind', 'VM / host', 'Message', 'Raised', ''], list.map(a => [a.kind, a.vm_id || a.host_id,
    a.message || a.text, when(a.raised_at || a.created_at), a.acked ? 'acked' : h('button', { type: 'button', onclick: async () => { try { await api('POST', `/alerts/${a.id}/ack`); route(); } catch (e) { fail(e); } } }, 'Acknowledge')]), 'Alerts'));
}

async function offeringsPage() {
  const [offs, planners] = await Promise.all([items('/offerings'), items('/planners').catch(() => [])]);
  show(h('h1', { text: 'Offerings' }),
    table(['Name', 'CPU', 'Memory MB', 'HA', 'Planner'], offs.map(o => [o.name, o.cpu, o.memory_mb, o.ha ? 'yes' : 'no', o.planner || '—']), 'Offerings'),
    h('h2', { text: 'Planners' }), table(['Planner', 'Description'], planners.map(p => [p.name || p.id, p.description || p.doc || '']), 'Planners'));
}

async function accountsPage() {
  const accounts = await items('/accounts');
  const id = h('input', { id: 'account-id', required: true, autocomplete: 'off', pattern: '[a-z0-9][a-z0-9-]{0,62}' });
  const name = h('input', { id: 'account-name', autocomplete: 'off' });
  const keyAccount = h('select', { id: 'key-account', required: true }, accounts.map(a => h('option', { value: a.id, text: a.id })));
  const role = h('select', { id: 'key-role' }, h('option', { value: 'user', text: 'user' }), h('option', { value: 'admin', text: 'admin' }));
  const expires = h('input', { id: 'key-expires', placeholder: '720h', autocomplete: 'off' });
  const shown = h('output', { id: 'new-key', class: 'mono', 'aria-live': 'polite' });
  show(h('h1', { text: 'Accounts' }),
    table(['Account', 'Name', 'Created', 'Keys'], accounts.map(a => [a.id, a.name, when(a.created_at),
      h('button', { type: 'button', onclick: async ev => {
        try {
          const keys = await items(`/accounts/${encodeURIComponent(a.id)}/keys`);
          ev.target.replaceWith(h('span', { text: keys.map(k => `${k.id} (${k.role}${k.revoked ? ', revoked' : ''})`).join(', ') || 'none' }));
        } catch (e) { fail(e); }
      } }, 'Show keys')]), 'Accounts'),
    h('div', { class: 'grid2' },
      h('form', { class: 'stack', 'aria-labelledby': 'acc-h', onsubmit: async ev => {
        ev.preventDefault();
        try {
          const want = id.value.trim();
          await api('POST', '/accounts', { id: want, name: name.value.trim() || undefined });
          // The list is the read model's: wait (briefly) for the projector.
          for (let i = 0; i < 20 && !(await items('/accounts')).some(a => a.id === want); i++) await sleep(250, page.signal);
          route(); say(`Account ${want} created.`, true);
        } catch (e) { fail(e); }
      } }, h('h2', { id: 'acc-h', text: 'New account' }), h('label', {}, 'Id', id), h('label', {}, 'Name', name),
      h('button', { type: 'submit', class: 'primary', id: 'account-submit' }, 'Create account')),
      h('form', { class: 'stack', 'aria-labelledby': 'key-h', onsubmit: async ev => {
        ev.preventDefault();
        const body = { role: role.value };
        if (expires.value.trim()) body.expires_in = expires.value.trim();
        try {
          const k = await api('POST', `/accounts/${encodeURIComponent(keyAccount.value)}/keys`, body);
          shown.textContent = k.key;
          say('Key created: copy it now, it is shown only once.', true);
        } catch (e) { fail(e); }
      } }, h('h2', { id: 'key-h', text: 'New API key' }), h('label', {}, 'Account', keyAccount), h('label', {}, 'Role', role),
      h('label', {}, 'Expires in (empty: never)', expires), h('button', { type: 'submit', class: 'primary', id: 'key-submit' }, 'Create key'), shown)));
}

// jobsByDay asks the history (ClickHouse, docs/analytics.md) for the jobs
// that ended each of the last 14 days: how many succeeded and failed, and
// how long they ran.
const JOBS_BY_DAY = `SELECT toString(day) AS date, countIf(outcome = 'succeeded') AS succeeded,
  countIf(outcome = 'failed') AS failed, round(avg(duration_ms)) AS avg_ms, round(quantile(0.95)(duration_ms)) AS p95_ms
FROM job_ends FINAL WHERE day >= today() - 13 GROUP BY day ORDER BY day`;

function dayChart(rows) {
  const W = 560, H = 160, left = 40, bottom = 20, bw = (W - left) / 14;
  const max = Math.max(1, ...rows.map(r => r.succeeded + r.failed));
  const y = v => (H - bottom) * (1 - v / max);
  return s('svg', { class: 'chart', 'data-chart': 'jobs', viewBox: `0 0 ${W} ${H}`, role: 'img',
    'aria-label': 'Jobs ended per day: ' + rows.map(r => `${r.day} ${r.succeeded} succeeded, ${r.failed} failed`).join('; ') },
    s('text', { x: 0, y: 10, text: String(max) }), s('text', { x: 0, y: H - bottom, text: '0' }),
    s('line', { x1: left - 4, y1: H - bottom, x2: W, y2: H - bottom, stroke: '#d0d7de' }),
    rows.map((r, i) => {
      const x = left + i * bw;
      return [s('rect', { class: 'ok', x, y: y(r.succeeded), width: bw - 4, height: (H - bottom) - y(r.succeeded) }, s('title', { text: `${r.day}: ${r.succeeded} succeeded` })),
        s('rect', { class: 'bad', x, y: y(r.succeeded + r.failed), width: bw - 4, height: y(r.succeeded) - y(r.succeeded + r.failed) }, s('title', { text: `${r.day}: ${r.failed} failed` })),
        s('text', { x, y: H - 5, text: r.day.slice(5) })];
    }));
}

function durationChart(rows) {
  const W = 560, H = 20 * rows.length + 10, left = 80;
  const max = Math.max(1, ...rows.map(r => r.p95_ms));
  return s('svg', { class: 'chart', 'data-chart': 'durations', viewBox: `0 0 ${W} ${H}`, role: 'img',
    'aria-label': 'Job durations per day: ' + rows.map(r => `${r.day} average ${r.avg_ms} ms, p95 ${r.p95_ms} ms`).join('; ') },
    rows.map((r, i) => [s('text', { x: 0, y: i * 20 + 15, text: r.day }),
      s('rect', { x: left, y: i * 20 + 4, width: ((W - left - 190) * r.p95_ms / max).toFixed(1), height: 12, fill: '#c8d7ea' }),
      s('rect', { class: 'avg', x: left, y: i * 20 + 4, width: ((W - left - 190) * r.avg_ms / max).toFixed(1), height: 12, fill: '#0550ae' }),
      s('text', { x: W - 180, y: i * 20 + 15, text: `avg ${r.avg_ms} ms, p95 ${r.p95_ms} ms` })]));
}

async function chartsPage() {
  const draw = async () => {
    const hosts = await items('/hosts?limit=500');
    const zones = [...new Set(hosts.map(x => x.zone_id))].sort();
    const cap = await zoneCapacity(zones);
    let history;
    try {
      const res = await api('POST', '/journal/query', { sql: JOBS_BY_DAY });
      const rows = res.rows.map(r => Object.fromEntries(res.columns.map((c, i) => c === 'date' ? ['day', r[i]] : [c, Number(r[i])])));
      history = rows.length ? [h('h2', { text: 'Jobs ended per day (green succeeded, red failed)' }), dayChart(rows),
        h('h2', { text: 'How long jobs ran (average, and 95th percentile in light)' }), durationChart(rows)]
        : h('p', { class: 'muted', text: 'No job has ended in the last 14 days.' });
    } catch (e) { history = h('p', { class: 'muted', text: 'Job history: ' + e.message }); }
    if (page.signal.aborted) return;
    show(h('h1', { text: 'Charts' }), cap, history,
      h('h2', { text: 'Hosts by CPU used' }),
      s('svg', { class: 'chart', viewBox: `0 0 400 ${hosts.length * 18 + 4}`, role: 'img', 'aria-label': 'CPU used per host' },
        hosts.flatMap((x, i) => {
          const c = x.cpu_capacity || x.cpu || 1, w = Math.min(x.used_cpu / c, 1) * 280;
          return [s('text', { x: 0, y: i * 18 + 13, text: x.name || x.id }), s('rect', { x: 110, y: i * 18 + 3, width: 280, height: 12, fill: '#eaeef2' }),
            s('rect', { class: 'ok', x: 110, y: i * 18 + 3, width: w.toFixed(1), height: 12 })];
        })));
  };
  await draw();
  poll(5000, draw);
}

route();
