// flowfabric dashboard: a single page over the JSON API served by the
// same handler. Every value from the API reaches the DOM as text
// (textContent, createTextNode, setAttribute), never as markup.
'use strict';

(function () {
  const STATES = ['waiting', 'delayed', 'rate_limited', 'waiting_children', 'active', 'suspended',
    'completed', 'failed', 'cancelled', 'expired', 'skipped'];
  const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'expired', 'skipped']);
  const BACKLOG = ['waiting', 'delayed', 'rate_limited', 'waiting_children'];
  const TOKEN_KEY = 'flowfabric.token';
  const SAMPLE_MS = 3000;
  const SAMPLES = 60;

  // The API lives next to the ui/ directory, wherever the host mounted it.
  const apiBase = new URL('../', location.href);

  // ---- DOM helpers -------------------------------------------------------

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    setAttrs(el, attrs);
    append(el, children);
    return el;
  }

  const SVGNS = 'http://www.w3.org/2000/svg';
  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVGNS, tag);
    setAttrs(el, attrs);
    append(el, children);
    return el;
  }

  function setAttrs(el, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'text') el.textContent = String(v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }

  function append(el, children) {
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }

  const $ = (id) => document.getElementById(id);

  function showError(msg) {
    const e = $('error');
    if (!msg) { e.hidden = true; e.textContent = ''; return; }
    e.textContent = msg;
    e.hidden = false;
  }

  function setStatus(msg) { $('status').textContent = msg; }

  function stateBadge(state, id) {
    return h('span', { class: 'badge st-' + state, 'data-state': state, id }, state);
  }

  function fmtTime(t) {
    if (!t) return '';
    const d = new Date(t);
    return isNaN(d) ? String(t) : d.toISOString().replace('T', ' ').replace('Z', '');
  }

  function execLink(id, label) {
    return h('a', { href: '#/execution/' + encodeURIComponent(id), class: 'mono' }, label || id);
  }

  function flowLink(id) {
    return h('a', { href: '#/flow/' + encodeURIComponent(id), class: 'mono' }, id);
  }

  function table(id, headers, rows) {
    return h('table', { id },
      h('thead', {}, h('tr', {}, headers.map((c) => h('th', { class: c.num ? 'num' : null }, c.label || c)))),
      h('tbody', {}, rows));
  }

  // ---- API ---------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.error) || ('HTTP ' + status));
      this.status = status;
      this.kind = body && body.kind;
    }
  }

  let tokenWait = null;

  // askToken shows the token dialog once, however many calls wait for it.
  function askToken(why) {
    if (!tokenWait) {
      tokenWait = new Promise((resolve) => {
        const d = $('token-dialog');
        const input = $('token-input');
        $('token-text').textContent = why;
        input.value = '';
        const done = () => {
          if (!input.value.trim()) return;
          sessionStorage.setItem(TOKEN_KEY, input.value.trim());
          $('token-ok').removeEventListener('click', done);
          input.removeEventListener('keydown', onKey);
          d.close();
          tokenWait = null;
          resolve();
        };
        const onKey = (ev) => { if (ev.key === 'Enter') done(); };
        $('token-ok').addEventListener('click', done);
        input.addEventListener('keydown', onKey);
        d.addEventListener('cancel', (ev) => ev.preventDefault(), { once: true });
        d.showModal();
        input.focus();
      });
    }
    return tokenWait;
  }

  // api calls the JSON API: path is relative to the mount point
  // ("v1/lanes"), params a query object, body a JSON value. raw answers
  // the bytes. A 401 asks for the token and tries again.
  async function api(method, path, opts) {
    const o = opts || {};
    const url = new URL(path, apiBase);
    for (const [k, v] of Object.entries(o.params || {})) {
      if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, v);
    }
    for (;;) {
      const headers = { Accept: o.raw ? 'application/octet-stream' : 'application/json' };
      const tok = sessionStorage.getItem(TOKEN_KEY);
      if (tok) headers.Authorization = 'Bearer ' + tok;
      const init = { method, headers, cache: 'no-store', credentials: 'same-origin' };
      if (o.body !== undefined) {
        headers['Content-Type'] = 'application/json';
        init.body = JSON.stringify(o.body);
      }
      const res = await fetch(url, init);
      if (res.status === 401) {
        await askToken(tok ? 'The token was refused; enter it again.' :
          'This flowfabric API needs a token. It is kept in this tab\'s session storage only.');
        continue;
      }
      if (!res.ok) {
        let body = null;
        try { body = await res.json(); } catch (e) { /* not JSON */ }
        throw new ApiError(res.status, body);
      }
      return o.raw ? new Uint8Array(await res.arrayBuffer()) : res.json();
    }
  }

  const execPath = (id, rest) => 'v1/executions/' + encodeURIComponent(id) + (rest || '');

  // ---- confirmation ------------------------------------------------------

  // confirmAction asks before an action; it resolves to the reason typed
  // (or '') when confirmed and to null when backed out.
  function confirmAction(title, text, withReason) {
    return new Promise((resolve) => {
      const d = $('confirm');
      $('confirm-title').textContent = title;
      $('confirm-text').textContent = text;
      $('confirm-reason-label').hidden = !withReason;
      $('confirm-reason').value = '';
      const finish = (v) => {
        $('confirm-ok').removeEventListener('click', ok);
        $('confirm-no').removeEventListener('click', no);
        d.removeEventListener('cancel', no);
        d.close();
        resolve(v);
      };
      const ok = () => finish($('confirm-reason').value);
      const no = (ev) => { if (ev) ev.preventDefault(); finish(null); };
      $('confirm-ok').addEventListener('click', ok);
      $('confirm-no').addEventListener('click', no);
      d.addEventListener('cancel', no);
      d.showModal();
    });
  }

  // ---- counts sampler (throughput chart) --------------------------------

  const samples = [];
  let sampling = false;

  async function sample() {
    if (sampling || tokenWait) return;
    sampling = true;
    try {
      const c = await api('GET', 'v1/counts');
      const by = c.by_state || {};
      samples.push({ t: Date.now(), by });
      if (samples.length > SAMPLES + 1) samples.shift();
      // the lanes page refreshes its table with each sample (unless a
      // dialog is open over it)
      if (currentPage === 'lanes' && !document.querySelector('dialog[open]')) {
        lanesPage(renderSeq).catch((e) => setStatus(e.message));
      }
      setStatus('updated ' + new Date().toLocaleTimeString());
    } catch (e) {
      setStatus('counts: ' + e.message);
    } finally {
      sampling = false;
    }
  }

  // series derives the charted values: completions and failures per
  // second between samples (never negative: a replay or a deletion lowers
  // a count) and the backlog and active counts at each sample.
  function series() {
    const out = { completed: [], failed: [], backlog: [], active: [] };
    samples.forEach((smp, i) => {
      const b = smp.by, t = smp.t;
      out.backlog.push([t, BACKLOG.reduce((n, k) => n + (b[k] || 0), 0)]);
      out.active.push([t, b.active || 0]);
      if (i === 0) return;
      const a = samples[i - 1].by;
      const dt = Math.max(0.001, (t - samples[i - 1].t) / 1000);
      const rate = (...ks) => Math.round(ks.reduce((n, k) => n + Math.max(0, (b[k] || 0) - (a[k] || 0)), 0) / dt * 100) / 100;
      out.completed.push([t, rate('completed')]);
      out.failed.push([t, rate('failed', 'expired')]);
    });
    return out;
  }

  function lineChart(id, lines, from, to) {
    const W = 600, H = 170, L = 40, R = 10, T = 10, B = 20;
    const svg = s('svg', { id, class: 'chart', viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img' });
    let peak = 0, minT = from, maxT = to;
    for (const l of lines) for (const [, v] of l.points) peak = Math.max(peak, v);
    const maxY = Math.max(1, peak);
    svg.setAttribute('data-peak', peak);
    if (maxT <= minT) maxT = minT + 1;
    const x = (t) => L + (t - minT) / (maxT - minT) * (W - L - R);
    const y = (v) => T + (1 - v / maxY) * (H - T - B);
    for (let i = 0; i <= 4; i++) {
      const v = maxY * i / 4;
      svg.append(s('line', { class: 'grid', x1: L, x2: W - R, y1: y(v), y2: y(v) }));
      svg.append(s('text', { x: L - 4, y: y(v) + 3, 'text-anchor': 'end' }, Number.isInteger(v) ? v : v.toFixed(1)));
    }
    svg.append(s('line', { class: 'axis', x1: L, x2: L, y1: T, y2: H - B }));
    svg.append(s('line', { class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B }));
    const span = Math.round((maxT - minT) / 1000);
    svg.append(s('text', { x: W - R, y: H - 5, 'text-anchor': 'end' }, 'last ' + span + ' s'));
    for (const l of lines) {
      if (l.points.length === 0) continue;
      const d = l.points.map(([t, v], i) => (i ? 'L' : 'M') + x(t).toFixed(1) + ' ' + y(v).toFixed(1)).join(' ');
      svg.append(s('path', { d, fill: 'none', stroke: l.color, 'stroke-width': 2, 'vector-effect': 'non-scaling-stroke', 'data-series': l.key }));
      const [lt, lv] = l.points[l.points.length - 1];
      svg.append(s('circle', { cx: x(lt), cy: y(lv), r: 3, fill: l.color }));
    }
    return svg;
  }

  function legend(lines) {
    return h('div', { class: 'legend' }, lines.map((l) => {
      const last = l.points.length ? l.points[l.points.length - 1][1] : 0;
      const sw = h('span', { class: 'swatch' });
      sw.style.background = l.color;
      return h('span', {}, sw, l.name + ': ' + last);
    }));
  }

  function drawCharts() {
    const box = $('charts');
    if (!box) return;
    const sr = series();
    const thr = [
      { key: 'completed', name: 'completed / s', color: '#2e9b45', points: sr.completed },
      { key: 'failed', name: 'failed or expired / s', color: '#d0392b', points: sr.failed },
    ];
    const blg = [
      { key: 'backlog', name: 'backlog', color: '#2f6fb3', points: sr.backlog },
      { key: 'active', name: 'active', color: '#8a5cc2', points: sr.active },
    ];
    const from = samples.length ? samples[0].t : 0, to = samples.length ? samples[samples.length - 1].t : 1;
    const note = samples.length < 2 ? h('p', { class: 'muted' }, 'Collecting samples every ' + SAMPLE_MS / 1000 + ' s…') : null;
    box.replaceChildren(
      h('div', { class: 'panel' }, h('h2', {}, 'Throughput'), note, lineChart('chart-throughput', thr, from, to), legend(thr)),
      h('div', { class: 'panel' }, h('h2', {}, 'Backlog and active'), lineChart('chart-backlog', blg, from, to), legend(blg)));
  }

  // ---- pages -------------------------------------------------------------

  let currentPage = '';
  let renderSeq = 0;

  // page shows a page built by the render numbered seq, unless a later
  // render started meanwhile (then it answers false and shows nothing).
  function page(seq, name, ...children) {
    if (seq !== renderSeq) return false;
    const v = $('view');
    v.replaceChildren(...children.flat().filter(Boolean));
    v.setAttribute('data-page', name);
    currentPage = name;
    for (const a of document.querySelectorAll('header nav a')) {
      a.classList.toggle('current', a.id === 'nav-' + (name === 'execution' ? 'executions' : name === 'flow' ? 'flows' : name));
    }
    return true;
  }

  async function lanesPage(seq) {
    const [ls, counts] = await Promise.all([api('GET', 'v1/lanes'), api('GET', 'v1/counts')]);
    const lanes = ls.lanes || [];
    const rows = lanes.map((l) => {
      const c = l.counts || {};
      const flags = [];
      if (l.paused) flags.push(h('span', { class: 'badge paused' }, 'paused'));
      if (l.unserved) flags.push(h('span', { class: 'badge unserved', title: 'backlog and no live worker' }, 'unserved'));
      const btn = l.paused
        ? h('button', { type: 'button', class: 'lane-resume', 'data-lane': l.lane, onclick: () => laneAction(l.lane, 'resume') }, 'Resume')
        : h('button', { type: 'button', class: 'lane-pause danger', 'data-lane': l.lane, onclick: () => laneAction(l.lane, 'pause') }, 'Pause');
      return h('tr', { 'data-lane': l.lane },
        h('td', {}, h('a', { href: '#/executions?lane=' + encodeURIComponent(l.lane) }, l.lane || '(default)')),
        STATES.map((st) => {
          const n = c[st] || 0;
          return h('td', { class: 'num' + (n ? '' : ' zero'), 'data-state': st },
            n ? h('a', { href: '#/executions?lane=' + encodeURIComponent(l.lane) + '&state=' + st }, n) : '0');
        }),
        h('td', { class: 'num' }, l.backlog), h('td', { class: 'num' }, l.workers),
        h('td', {}, flags), h('td', {}, btn));
    });
    const by = counts.by_state || {};
    const totals = h('tr', { class: 'totals' }, h('th', {}, 'all lanes'),
      STATES.map((st) => h('th', { class: 'num' }, by[st] || 0)), h('th', { class: 'num' },
        BACKLOG.reduce((n, k) => n + (by[k] || 0), 0)), h('th'), h('th'), h('th'));
    const headers = ['lane', ...STATES.map((st) => ({ label: st.replace('_', ' '), num: true })),
      { label: 'backlog', num: true }, { label: 'workers', num: true }, '', ''];
    const t = table('lanes-table', headers, rows);
    t.append(h('tfoot', {}, totals));
    if (!page(seq, 'lanes',
      h('h1', {}, 'Lanes'),
      lanes.length ? t : h('p', { class: 'muted', id: 'lanes-empty' }, 'No lanes yet: nothing was submitted and no worker runs.'),
      h('p', { class: 'muted' }, 'Total executions: ' + (counts.total || 0)),
      h('div', { id: 'charts', class: 'grid2' }))) return;
    drawCharts();
  }

  async function laneAction(lane, act) {
    const reason = await confirmAction(act === 'pause' ? 'Pause lane' : 'Resume lane',
      act === 'pause' ? 'No new attempt starts on lane "' + lane + '" in any process until it is resumed. Running attempts finish.'
        : 'Waiting work on lane "' + lane + '" becomes claimable at once.', act === 'pause');
    if (reason === null) return;
    try {
      await api('POST', 'v1/lanes/' + encodeURIComponent(lane) + '/' + act, { body: act === 'pause' ? { reason } : {} });
      showError('');
    } catch (e) {
      showError(act + ' ' + lane + ': ' + e.message);
    }
    route();
  }

  // The executions page keeps its cursors here, per filter.
  let execPaging = { key: '', cursors: [''], index: 0 };

  async function executionsPage(seq, q) {
    const filter = { state: q.get('state') || '', lane: q.get('lane') || '', kind: q.get('kind') || '' };
    const limit = Math.min(200, Math.max(1, parseInt(q.get('limit'), 10) || 25));
    const key = JSON.stringify([filter, limit]);
    if (execPaging.key !== key) execPaging = { key, cursors: [''], index: 0 };
    const cursor = execPaging.cursors[execPaging.index];
    const [found, ls, counts] = await Promise.all([
      api('GET', 'v1/executions/search', { params: { ...filter, cursor, limit } }),
      api('GET', 'v1/lanes'), api('GET', 'v1/counts')]);
    const snaps = await Promise.all((found.ids || []).map((id) =>
      api('GET', execPath(id)).catch((e) => ({ id, state: '', error: e.message }))));

    const stateSel = h('select', { id: 'f-state' }, h('option', { value: '' }, 'any state'),
      STATES.map((st) => h('option', { value: st, selected: st === filter.state }, st)));
    const laneSel = h('select', { id: 'f-lane' }, h('option', { value: '' }, 'any lane'),
      (ls.lanes || []).map((l) => h('option', { value: l.lane, selected: l.lane === filter.lane }, l.lane || '(default)')));
    if (filter.lane && !(ls.lanes || []).some((l) => l.lane === filter.lane)) {
      laneSel.append(h('option', { value: filter.lane, selected: true }, filter.lane));
    }
    const kinds = [...new Set((counts.rows || []).map((r) => r.kind))].sort();
    const kindIn = h('input', { id: 'f-kind', list: 'f-kinds', value: filter.kind, placeholder: 'any kind', autocomplete: 'off' });
    const apply = () => {
      const p = new URLSearchParams();
      if (stateSel.value) p.set('state', stateSel.value);
      if (laneSel.value) p.set('lane', laneSel.value);
      if (kindIn.value.trim()) p.set('kind', kindIn.value.trim());
      const next = '#/executions' + (p.toString() ? '?' + p : '');
      if (location.hash === next) route(); else location.hash = next;
    };
    kindIn.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') apply(); });
    const toolbar = h('div', { class: 'toolbar', id: 'exec-filter' },
      h('label', {}, 'State', stateSel), h('label', {}, 'Lane', laneSel),
      h('label', {}, 'Kind', kindIn, h('datalist', { id: 'f-kinds' }, kinds.map((k) => h('option', { value: k })))),
      h('button', { type: 'button', id: 'f-apply', onclick: apply }, 'Filter'));

    const rows = snaps.map((x) => h('tr', { 'data-id': x.id, 'data-state': x.state },
      h('td', {}, execLink(x.id)),
      h('td', {}, x.state ? stateBadge(x.state) : h('span', { class: 'muted' }, x.error || 'gone')),
      h('td', {}, x.lane || ''), h('td', {}, x.kind || ''), h('td', { class: 'num' }, x.attempts ?? ''),
      h('td', {}, fmtTime(x.created_at)), h('td', {}, fmtTime(x.terminal_at))));
    const hasNext = !!found.next;
    const pager = h('div', { class: 'pager' },
      h('button', { type: 'button', id: 'page-prev', disabled: execPaging.index === 0, onclick: () => { execPaging.index--; route(); } }, '← Previous'),
      h('span', { id: 'page-info', class: 'muted' }, 'page ' + (execPaging.index + 1) + ' · ' + rows.length + ' shown · ' + found.examined + ' examined'),
      h('button', { type: 'button', id: 'page-next', disabled: !hasNext, onclick: () => {
        execPaging.cursors[execPaging.index + 1] = found.next;
        execPaging.index++;
        route();
      } }, 'Next →'));
    page(seq, 'executions',
      h('h1', {}, 'Executions'), toolbar,
      rows.length ? table('exec-table', ['id', 'state', 'lane', 'kind', { label: 'attempts', num: true }, 'created', 'ended'], rows)
        : h('p', { id: 'exec-empty', class: 'muted' }, hasNext ? 'None on this page; more may follow.' : 'No executions match.'),
      pager);
  }

  function fieldList(id, pairs) {
    return h('dl', { class: 'fields', id }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== '')
      .map(([k, v]) => [h('dt', {}, k), h('dd', { 'data-field': k }, v)]));
  }

  // bytesView shows stored bytes: as text when they are printable UTF-8
  // (pretty JSON when they parse), otherwise their size and leading hex.
  function bytesView(id, bytes) {
    if (bytes.length === 0) return h('p', { id, class: 'muted' }, 'empty');
    let text = null;
    try { text = new TextDecoder('utf-8', { fatal: true }).decode(bytes); } catch (e) { text = null; }
    if (text !== null && !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text)) {
      try { text = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* plain text */ }
      return h('pre', { id }, text);
    }
    const hex = Array.from(bytes.slice(0, 256), (b) => b.toString(16).padStart(2, '0')).join(' ');
    return h('div', { id }, h('p', { class: 'muted' }, bytes.length + ' bytes, not printable text; the first ' +
      Math.min(256, bytes.length) + ' in hex:'), h('pre', {}, hex));
  }

  async function rawOrNote(id, path) {
    try {
      return bytesView(id, await api('GET', path, { raw: true }));
    } catch (e) {
      if (e.status === 404) return h('p', { id, class: 'muted' }, e.kind === 'result_not_found' ? 'no result (yet)' : e.message);
      return h('p', { id, class: 'error' }, e.message);
    }
  }

  async function executionPage(seq, id) {
    const x = await api('GET', execPath(id));
    const [att, lh] = await Promise.all([api('GET', execPath(id, '/attempts')), api('GET', execPath(id, '/lease-history'))]);
    const attempts = att.attempts || [];
    const [payload, result] = await Promise.all([rawOrNote('payload', execPath(id, '/payload')), rawOrNote('result', execPath(id, '/result'))]);

    const terminal = TERMINAL.has(x.state);
    const act = (name, label, path, withReason, text, enabled) => h('button', {
      type: 'button', id: 'act-' + name, class: name === 'cancel' ? 'danger' : null, disabled: !enabled,
      onclick: async () => {
        const reason = await confirmAction(label + ' execution', text, withReason);
        if (reason === null) return;
        try {
          await api('POST', execPath(id, path), { body: withReason && reason ? { reason } : {} });
          showError('');
        } catch (e) {
          showError(label + ': ' + e.message);
        }
        route();
      },
    }, label);
    const actions = h('div', { class: 'toolbar', id: 'exec-actions' },
      act('cancel', 'Cancel', '/cancel', true, 'Cancel ' + id + '? A running attempt loses its lease; the execution ends cancelled.', !terminal),
      act('replay', 'Replay', '/replay', true, 'Replay ' + id + '? It runs again as a new attempt.', terminal),
      act('retry', 'Retry now', '/retry-now', false, 'Run ' + id + ' now instead of waiting for its delay or backoff?', x.state === 'delayed'));

    const sv = x.state_vector || {};
    const fields = fieldList('exec-fields', [
      ['state', stateBadge(x.state, 'exec-state')], ['namespace', x.namespace], ['lane', x.lane], ['kind', x.kind],
      ['priority', x.priority], ['flow', x.flow_id ? flowLink(x.flow_id) : ''],
      ['lifecycle', [sv.lifecycle_phase, sv.ownership_state, sv.eligibility_state, sv.blocking_reason, sv.terminal_outcome, sv.attempt_state].join(' · ')],
      ['blocking detail', sv.blocking_detail], ['attempts', x.attempts], ['retries', x.retry_count + ' of ' + ((x.retry_policy || {}).max_retries ?? '?')],
      ['reclaims', x.reclaim_count + ' of ' + x.max_reclaims], ['replays', x.replay_count + ' of ' + x.max_replays],
      ['lease', x.lease ? 'epoch ' + x.lease.epoch + ' · worker ' + x.lease.worker_id + ' · expires ' + fmtTime(x.lease.expires_at) : ''],
      ['progress', x.progress ? x.progress.percent + '% ' + (x.progress.message || '') : ''],
      ['failure', x.failure_reason ? x.failure_reason + (x.failure_category ? ' (' + x.failure_category + ')' : '') : ''],
      ['cancelled', x.cancellation_reason || x.cancelled_by ? (x.cancellation_reason || '') + (x.cancelled_by ? ' by ' + x.cancelled_by : '') : ''],
      ['capabilities', (x.required_capabilities || []).join(', ')],
      ['tags', x.tags ? Object.entries(x.tags).map(([k, v]) => k + '=' + v).join(', ') : ''],
      ['created', fmtTime(x.created_at)], ['started', fmtTime(x.started_at)], ['delay until', fmtTime(x.delay_until)],
      ['deadline', fmtTime(x.deadline)], ['ended', fmtTime(x.terminal_at)],
    ]);

    const attRows = attempts.map((a) => h('tr', { 'data-index': a.index },
      h('td', { class: 'num' }, a.index), h('td', {}, a.type), h('td', {}, a.status), h('td', { class: 'num' }, a.lease_epoch),
      h('td', { class: 'mono' }, a.worker_id || ''), h('td', {}, fmtTime(a.started_at)), h('td', {}, fmtTime(a.ended_at)),
      h('td', {}, a.failure_reason ? a.failure_reason + (a.failure_category ? ' (' + a.failure_category + ')' : '') : '')));
    const leaseRows = (lh.events || []).map((ev) => h('tr', {},
      h('td', { class: 'num' }, ev.seq), h('td', {}, ev.kind), h('td', { class: 'num' }, ev.lease_epoch),
      h('td', { class: 'num' }, ev.attempt_index), h('td', { class: 'mono' }, ev.worker_instance_id || ''),
      h('td', {}, fmtTime(ev.at)), h('td', {}, ev.reason || '')));

    const frames = h('div', { id: 'frames' });
    const attSel = h('select', { id: 'frames-attempt' }, attempts.map((a, i) =>
      h('option', { value: a.index, selected: i === attempts.length - 1 }, 'attempt ' + a.index)));
    const loadFrames = async () => {
      if (!attempts.length) { frames.replaceChildren(h('p', { class: 'muted' }, 'no attempt yet')); return; }
      try {
        const pg = await api('GET', execPath(id, '/attempts/' + attSel.value + '/stream'), { params: { limit: 200 } });
        const fr = (pg.frames || []).map((f) => h('tr', {},
          h('td', { class: 'num' }, f.seq), h('td', {}, fmtTime(f.time)), h('td', {}, f.type), h('td', {}, f.mode),
          h('td', {}, f.payload !== undefined ? h('pre', {}, f.payload) : h('span', { class: 'muted' }, 'base64: ' + f.payload_base64))));
        frames.replaceChildren(fr.length ? table('frames-table', [{ label: 'seq', num: true }, 'time', 'type', 'mode', 'payload'], fr)
          : h('p', { class: 'muted', id: 'frames-empty' }, 'no frames'),
        h('p', { class: 'muted' }, pg.closed ? 'stream closed' + (pg.closed_reason ? ' (' + pg.closed_reason + ')' : '') : 'stream open'));
      } catch (e) {
        frames.replaceChildren(h('p', { class: 'muted' }, e.status === 404 ? 'no stream' : e.message));
      }
    };
    attSel.addEventListener('change', loadFrames);

    if (!page(seq, 'execution',
      h('h1', {}, 'Execution ', h('span', { class: 'mono', id: 'exec-id' }, x.id)),
      actions, fields,
      h('h2', {}, 'Attempts'),
      attRows.length ? table('attempts-table', [{ label: '#', num: true }, 'type', 'status', { label: 'epoch', num: true }, 'worker', 'started', 'ended', 'failure'], attRows)
        : h('p', { class: 'muted' }, 'no attempt yet'),
      h('h2', {}, 'Lease history'),
      leaseRows.length ? table('lease-table', [{ label: 'seq', num: true }, 'event', { label: 'epoch', num: true }, { label: 'attempt', num: true }, 'worker instance', 'at', 'reason'], leaseRows)
        : h('p', { class: 'muted' }, 'no lease events'),
      h('h2', {}, 'Stream frames ', attempts.length ? attSel : null), frames,
      h('div', { class: 'grid2' },
        h('div', {}, h('h2', {}, 'Payload'), payload),
        h('div', {}, h('h2', {}, 'Result'), result)))) return;
    await loadFrames();
  }

  let flowPaging = { key: '', cursors: [''], index: 0 };

  async function flowsPage(seq, q) {
    const finished = q.get('finished') === 'true';
    const key = String(finished);
    if (flowPaging.key !== key) flowPaging = { key, cursors: [''], index: 0 };
    const res = await api('GET', 'v1/flows', { params: { finished, cursor: flowPaging.cursors[flowPaging.index], limit: 25 } });
    const flows = res.flows || [];
    const sel = h('select', { id: 'flows-finished', onchange: (ev) => { location.hash = '#/flows' + (ev.target.value === 'true' ? '?finished=true' : ''); } },
      h('option', { value: 'false', selected: !finished }, 'live flows'), h('option', { value: 'true', selected: finished }, 'finished flows'));
    const rows = flows.map((f) => h('tr', { 'data-id': f.id, 'data-state': f.state },
      h('td', {}, flowLink(f.id)), h('td', {}, stateBadge(f.state)), h('td', { class: 'num' }, f.member_count), h('td', { class: 'num' }, f.edge_count),
      h('td', {}, Object.entries(f.counts || {}).map(([st, n]) => [stateBadge(st), ' ', n, ' '])),
      h('td', {}, fmtTime(f.created_at))));
    page(seq, 'flows',
      h('h1', {}, 'Flows'), h('div', { class: 'toolbar' }, h('label', {}, 'Show', sel)),
      rows.length ? table('flows-table', ['id', 'state', { label: 'members', num: true }, { label: 'edges', num: true }, 'members by state', 'created'], rows)
        : h('p', { class: 'muted', id: 'flows-empty' }, 'No ' + (finished ? 'finished' : 'live') + ' flows.'),
      h('div', { class: 'pager' },
        h('button', { type: 'button', id: 'flows-prev', disabled: flowPaging.index === 0, onclick: () => { flowPaging.index--; route(); } }, '← Previous'),
        h('button', { type: 'button', id: 'flows-next', disabled: !res.next, onclick: () => {
          flowPaging.cursors[flowPaging.index + 1] = res.next;
          flowPaging.index++;
          route();
        } }, 'Next →')));
  }

  // layout places each node in the layer of its longest path from a root
  // (a node with no upstream), then orders each layer by the mean position
  // of its upstreams to keep edges short.
  function layout(nodes, edges) {
    const ups = new Map(nodes.map((n) => [n.id, []]));
    const downs = new Map(nodes.map((n) => [n.id, []]));
    for (const e of edges) {
      if (ups.has(e.downstream) && downs.has(e.upstream)) {
        ups.get(e.downstream).push(e.upstream);
        downs.get(e.upstream).push(e.downstream);
      }
    }
    const layer = new Map();
    const indeg = new Map(nodes.map((n) => [n.id, ups.get(n.id).length]));
    const queue = nodes.filter((n) => indeg.get(n.id) === 0).map((n) => n.id);
    for (const id of queue) layer.set(id, 0);
    while (queue.length) {
      const id = queue.shift();
      for (const d of downs.get(id)) {
        layer.set(d, Math.max(layer.get(d) || 0, layer.get(id) + 1));
        indeg.set(d, indeg.get(d) - 1);
        if (indeg.get(d) === 0) queue.push(d);
      }
    }
    for (const n of nodes) if (!layer.has(n.id)) layer.set(n.id, 0); // on a cycle: never expected
    const layers = [];
    for (const n of nodes) (layers[layer.get(n.id)] ||= []).push(n.id);
    const pos = new Map();
    layers.forEach((ids, li) => {
      if (li > 0) {
        const key = (id) => {
          const p = ups.get(id).filter((u) => pos.has(u)).map((u) => pos.get(u));
          return p.length ? p.reduce((a, b) => a + b, 0) / p.length : 0;
        };
        ids.sort((a, b) => key(a) - key(b));
      }
      ids.forEach((id, i) => pos.set(id, i));
    });
    return { layer, pos, layers };
  }

  function dag(graph) {
    const NW = 170, NH = 46, GX = 70, GY = 22, PAD = 16;
    const { layer, pos, layers } = layout(graph.nodes, graph.edges);
    const tallest = Math.max(1, ...layers.map((l) => (l ? l.length : 0)));
    const W = PAD * 2 + layers.length * NW + Math.max(0, layers.length - 1) * GX;
    const H = PAD * 2 + tallest * NH + (tallest - 1) * GY;
    const at = (id) => {
      const n = layers[layer.get(id)].length;
      const off = (tallest - n) * (NH + GY) / 2;
      return { x: PAD + layer.get(id) * (NW + GX), y: PAD + off + pos.get(id) * (NH + GY) };
    };
    const svg = s('svg', { id: 'dag', class: 'dag', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'flow graph' },
      s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
        s('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: '#7d8791' }))));
    const known = new Set(graph.nodes.map((n) => n.id));
    for (const e of graph.edges) {
      if (!known.has(e.upstream) || !known.has(e.downstream)) continue;
      const a = at(e.upstream), b = at(e.downstream);
      const x1 = a.x + NW, y1 = a.y + NH / 2, x2 = b.x, y2 = b.y + NH / 2, mx = (x1 + x2) / 2;
      svg.append(s('path', { class: 'edge ' + e.state, d: `M ${x1} ${y1} C ${mx} ${y1}, ${mx} ${y2}, ${x2} ${y2}`,
        'marker-end': 'url(#arrow)', 'data-from': e.upstream, 'data-to': e.downstream },
      s('title', {}, e.state + (e.pass_result ? ' · passes its result' : ''))));
    }
    for (const n of graph.nodes) {
      const p = at(n.id);
      const kind = n.kind.length > 22 ? n.kind.slice(0, 21) + '…' : n.kind;
      const g = s('g', { class: 'node st-' + n.state, 'data-id': n.id, 'data-state': n.state, transform: `translate(${p.x} ${p.y})`, tabindex: 0 },
        s('title', {}, n.id + '\n' + n.kind + ' · ' + n.state + (n.lane ? ' · lane ' + n.lane : '')),
        s('rect', { width: NW, height: NH, rx: 6 }),
        s('text', { x: 10, y: 19 }, kind),
        s('text', { x: 10, y: 36, class: 'sub' }, n.state));
      const open = () => { location.hash = '#/execution/' + encodeURIComponent(n.id); };
      g.addEventListener('click', open);
      g.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') open(); });
      svg.append(g);
    }
    return svg;
  }

  async function flowPage(seq, id) {
    const g = await api('GET', 'v1/flows/' + encodeURIComponent(id) + '/graph');
    const f = g.flow;
    const present = [...new Set(g.nodes.map((n) => n.state))];
    const legendBox = h('div', { class: 'legend' }, STATES.filter((st) => present.includes(st)).map((st) =>
      h('span', {}, h('span', { class: 'swatch st-' + st }), st)));
    const rows = g.nodes.map((n) => h('tr', { 'data-id': n.id, 'data-state': n.state },
      h('td', {}, execLink(n.id)), h('td', {}, n.kind), h('td', {}, n.lane), h('td', {}, stateBadge(n.state))));
    page(seq, 'flow',
      h('h1', {}, 'Flow ', h('span', { class: 'mono', id: 'flow-id' }, f.id)),
      fieldList('flow-fields', [['state', stateBadge(f.state, 'flow-state')], ['members', f.member_count], ['edges', f.edge_count],
        ['sealed', String(f.sealed)], ['created', fmtTime(f.created_at)],
        ['cancelled', f.cancel_policy ? f.cancel_policy + (f.cancel_reason ? ': ' + f.cancel_reason : '') : ''],
        ['tags', f.tags ? Object.entries(f.tags).map(([k, v]) => k + '=' + v).join(', ') : '']]),
      h('h2', {}, 'Graph'), legendBox,
      h('div', { class: 'dag-wrap' }, dag(g)),
      h('h2', {}, 'Members'),
      table('members-table', ['id', 'kind', 'lane', 'state'], rows));
  }

  // ---- routing -----------------------------------------------------------

  async function route() {
    const seq = ++renderSeq;
    const hash = location.hash.replace(/^#/, '') || '/lanes';
    const [path, query] = hash.split('?');
    const q = new URLSearchParams(query || '');
    const parts = path.split('/').filter(Boolean);
    try {
      switch (parts[0]) {
        case 'executions': await executionsPage(seq, q); break;
        case 'execution': await executionPage(seq, decodeURIComponent(parts.slice(1).join('/'))); break;
        case 'flows': await flowsPage(seq, q); break;
        case 'flow': await flowPage(seq, decodeURIComponent(parts.slice(1).join('/'))); break;
        default: await lanesPage(seq);
      }
    } catch (e) {
      page(seq, 'error', h('h1', {}, 'Could not load this page'), h('p', { id: 'page-error', class: 'error' }, e.message));
    }
  }

  window.addEventListener('hashchange', () => { showError(''); route(); });
  route();
  sample();
  setInterval(sample, SAMPLE_MS);
})();
