/* Capsule Memory console: a small client of the public HTTP API (/v1), with the same auth.
 *
 * No framework and no build step. Every piece of memory text reaches the page through
 * textContent (see el()), never through innerHTML, so stored text cannot inject markup.
 */
(function () {
  'use strict';

  const TOKEN_KEY = 'capsule.console.token';
  const PROJECT_KEY = 'capsule.console.project';
  const FORGOTTEN_KEY = 'capsule.console.forgotten';
  const ACTIVITY_KEY = 'capsule.console.activity';
  const VOTES_KEY = 'capsule.console.votes';
  const LATENCY_KEY = 'capsule.console.latency';
  const MAX_LATENCIES = 40;
  const CHART_PROJECTS = 5;
  const CHART_PAGES = 3;  // of 100 memories: the charts' reads stay bounded
  const MAX_K = 20;  // the API's limit for k (SearchRequest.k)
  const PAGE_SIZE = 20;
  const MAX_FORGOTTEN = 25;
  const MAX_ACTIVITY = 30;
  const CLAMP_CHARS = 700;
  const COMPONENTS = [
    ['vector', 'vector', 'meaning: cosine similarity of the embeddings'],
    ['bm25', 'bm25', 'keyword: BM25 match of the query words'],
    ['time', 'time', 'recency: halves every 30 days'],
    ['feedback', 'feedback', 'feedback: Wilson lower bound of helpful votes'],
    ['outcome', 'outcome', 'outcome: +0.10 success, -0.05 failure'],
    ['boost', 'boost', 'query aids: the author or date the query names, neighbouring turns, priors'],
  ];
  const TEXT_FILTERS = [['search-category', 'category'], ['search-component', 'component'], ['search-path', 'path_prefix']];
  const WEIGHTS = [['search-w-vector', 'vector'], ['search-w-bm25', 'bm25'], ['search-w-time', 'time'],
    ['search-w-feedback', 'feedback']];

  const state = {
    token: sessionStorage.getItem(TOKEN_KEY) || '',
    project: sessionStorage.getItem(PROJECT_KEY) || '',
    projects: [],
    view: 'recent',
    cursor: null,
    candStatus: 'pending',  // the capture queue's view
    candCursor: null,
    lastQuery: '',
    forgotten: readList(FORGOTTEN_KEY),
    activity: readList(ACTIVITY_KEY),
    votes: readVotes(),
    latencies: readList(LATENCY_KEY),  // this tab's search round trips, [{at, ms}]
    detail: null,
    solution: null,  // the solution open in its detail  // the memory in the detail view as last read: its sha256 is the edit's If-Match
  };

  // Answers that arrive after a newer request of the same kind was sent are dropped.
  const latest = { list: 0, search: 0, candidates: 0, table: 0, audit: 0 };

  // ---- small helpers ------------------------------------------------------

  const $ = (id) => document.getElementById(id);

  /** Build an element. Strings become text nodes; attributes are set one by one. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = value;
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function readList(key) {
    try {
      const items = JSON.parse(sessionStorage.getItem(key) || '[]');
      return Array.isArray(items) ? items : [];
    } catch (_) {
      return [];
    }
  }

  /** This tab's vote per memory id (true: helpful): a vote is sent once, not once per click. */
  function readVotes() {
    try {
      const votes = JSON.parse(sessionStorage.getItem(VOTES_KEY) || '{}');
      return votes && typeof votes === 'object' && !Array.isArray(votes) ? votes : {};
    } catch (_) {
      return {};
    }
  }

  function saveForgotten() {
    sessionStorage.setItem(FORGOTTEN_KEY, JSON.stringify(state.forgotten));
  }

  function snippet(text, n) {
    const flat = String(text || '').replace(/\s+/g, ' ').trim();
    return flat.length > n ? flat.slice(0, n - 1) + '…' : flat;
  }

  // The id's first 12 characters, as the CLI's tables print them (and as capsule get/pin take
  // them); the whole id is the element's title and what every request sends.
  function shortId(id) {
    return id.slice(0, 12);
  }

  function whenText(iso) {
    const at = new Date(iso);
    if (Number.isNaN(at.getTime())) return String(iso || '');
    const secs = Math.round((Date.now() - at.getTime()) / 1000);
    if (secs < 45) return 'just now';
    const mins = Math.round(secs / 60);
    if (mins < 60) return mins + ' min ago';
    const hours = Math.round(mins / 60);
    if (hours < 24) return hours + ' h ago';
    const days = Math.round(hours / 24);
    if (days < 60) return days + ' days ago';
    return at.toLocaleDateString();
  }

  function plural(n, one, many) {
    return n + ' ' + (n === 1 ? one : many);
  }

  function fixed(value) {
    return (typeof value === 'number' ? value : Number(value || 0)).toFixed(3);
  }

  function parseTags(text) {
    return String(text || '').split(',').map((t) => t.trim()).filter(Boolean);
  }

  const utf8Bytes = (text) => new TextEncoder().encode(text).length;

  // The API's limits (capsule.core.limits and the request models), checked before anything is sent.
  const LIMITS = { content: 65536, tags: 32, tag: 64, reason: 4096, ttl: 316224000, ingest: 1048576,
    body: 1048576 + 65536 };

  /** What is wrong with these tags for the API, or ''. */
  function tagsProblem(tags) {
    if (tags.length > LIMITS.tags) return 'At most ' + LIMITS.tags + ' tags.';
    const long = tags.find((t) => t.length > LIMITS.tag);
    return long ? 'The tag "' + snippet(long, 30) + '" is over ' + LIMITS.tag + ' characters.' : '';
  }

  /** Refuse on the page (nothing is sent): the error names the field, and focus goes to it. */
  function refuse(operation, inputId, message) {
    fail(operation, new ApiError(0, 'invalid', message, null));
    $(inputId).focus();
  }

  // ---- the API ------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message, details) {
      super(message);
      this.status = status;
      this.code = code;
      this.details = details;
    }
  }

  /** Requests in flight: shown in the top bar, and readable as body[data-pending]. */
  let pending = 0;

  function setPending(delta) {
    pending += delta;
    document.body.dataset.pending = String(pending);
    $('working').hidden = pending === 0;
  }

  async function api(method, path, body, extraHeaders) {
    setPending(1);
    try {
      return await request(method, path, body, extraHeaders);
    } finally {
      setPending(-1);
    }
  }

  async function request(method, path, body, extraHeaders) {
    const headers = Object.assign({ Accept: 'application/json' }, extraHeaders || {});
    if (state.token) headers.Authorization = 'Bearer ' + state.token;
    const init = { method, headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (exc) {
      throw new ApiError(0, 'unreachable', 'The server did not answer: ' + exc.message, null);
    }
    const text = await response.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (_) {
      data = null;
    }
    if (!response.ok) {
      const err = (data && data.error) || {};
      throw new ApiError(response.status, err.code || 'http_' + response.status,
        err.message || 'The server answered ' + response.status + ' ' + response.statusText,
        err.details === undefined ? null : err.details);
    }
    return data || {};
  }

  /** A JSON Lines answer (the export): its text and the next page's cursor. */
  async function apiLines(path) {
    setPending(1);
    try {
      const headers = { Accept: 'application/x-ndjson, application/json', Authorization: 'Bearer ' + state.token };
      let response;
      try {
        response = await fetch(path, { headers, cache: 'no-store' });
      } catch (exc) {
        throw new ApiError(0, 'unreachable', 'The server did not answer: ' + exc.message, null);
      }
      const text = await response.text();
      if (!response.ok) {
        let err = {};
        try { err = JSON.parse(text).error || {}; } catch (_) { err = {}; }
        throw new ApiError(response.status, err.code || 'http_' + response.status, err.message || text, err.details);
      }
      return { text, next: response.headers.get('X-Capsule-Next-Cursor') };
    } finally {
      setPending(-1);
    }
  }

  const memoryPath = (id, action) =>
    '/v1/memories/' + encodeURIComponent(id) + (action ? '/' + action : '');

  // ---- messages: the last operation's explanation or error ----------------

  function detailsText(details) {
    if (details === null || details === undefined || details === '') return '';
    if (Array.isArray(details)) {
      return details.map((item) => {
        if (item && typeof item === 'object' && ('message' in item || 'msg' in item)) {
          const where = item.field || (Array.isArray(item.loc) ? item.loc.join('.') : item.loc) || '';
          return (where ? where + ': ' : '') + (item.message || item.msg);
        }
        return typeof item === 'string' ? item : JSON.stringify(item);
      }).join('\n');
    }
    return typeof details === 'string' ? details : JSON.stringify(details, null, 2);
  }

  function showBox(prefix, title, text, details) {
    $(prefix + '-title').textContent = title;
    $(prefix + '-text').textContent = text;
    const pre = $(prefix + '-details');
    const more = detailsText(details) === text ? '' : detailsText(details);
    pre.textContent = more;
    pre.hidden = !more;
    $(prefix).classList.remove('is-idle');
  }

  /** Idle boxes stay in the accessibility tree (so the next message is announced): empty them, so
   *  no stale text is left there to read. */
  function hideBox(prefix) {
    $(prefix).classList.add('is-idle');
    for (const part of ['-title', '-text', '-details']) $(prefix + part).textContent = '';
  }

  /** Report a success; ``undo`` (optional) puts an Undo button beside the explanation. */
  function say(operation, explanation, undo) {
    hideBox('alert');
    showBox('notice', operation, explanation || 'Done.', null);
    const button = $('notice-undo');
    button.hidden = !undo;
    button.onclick = undo ? () => { button.hidden = true; undo(button); } : null;
    logActivity(operation, explanation || 'Done.', false);
  }

  /** A new action or another project: the last one's message no longer applies. */
  function clearMessages() {
    hideBox('alert');
    hideBox('notice');
    $('notice-undo').hidden = true;
  }

  function fail(operation, error) {
    const status = error.status ? ' (' + error.status + ')' : '';
    const title = operation + ' failed: ' + (error.code || 'error') + status;
    hideBox('notice');
    showBox('alert', title, error.message || String(error), error.details);
    logActivity(operation, (error.code || 'error') + status + ': ' + (error.message || error), true);
    if (error.status === 401) signOut('The API refused the token (' + (error.message || '401') + ').');
  }

  /** The activity log lives in the tab's session storage, so a reload keeps it. */
  function logActivity(operation, text, isError) {
    const entry = { at: new Date().toISOString(), op: operation, text, error: Boolean(isError) };
    state.activity = [entry, ...state.activity].slice(0, MAX_ACTIVITY);
    sessionStorage.setItem(ACTIVITY_KEY, JSON.stringify(state.activity));
    renderActivity();
  }

  function renderActivity() {
    $('activity').replaceChildren(...state.activity.map((entry) =>
      el('li', { class: entry.error ? 'act act-error' : 'act' },
        el('time', { datetime: entry.at, class: 'act-time' }, new Date(entry.at).toLocaleTimeString()),
        el('strong', { class: 'act-op' }, entry.op),
        el('span', { class: 'act-text' }, entry.text))));
  }

  /** Run one API operation with its button disabled; report its explanation or its error. */
  async function run(operation, button, work) {
    hideBox('alert');  // an error belongs to the action that caused it, not to the next one
    if (button) {
      button.disabled = true;
      button.setAttribute('aria-busy', 'true');
    }
    try {
      return await work();
    } catch (error) {
      fail(operation, error);
      return undefined;
    } finally {
      if (button) {
        button.disabled = false;
        button.removeAttribute('aria-busy');
      }
    }
  }

  // ---- connecting ---------------------------------------------------------

  function showWorkspace(connected) {
    $('connect').hidden = connected;
    $('workspace').hidden = !connected;
    $('session').hidden = !connected;
  }

  /** Drop the token. Signing out on purpose also drops this tab's history; a refused token keeps it. */
  function signOut(reason, wipe) {
    state.token = '';
    sessionStorage.removeItem(TOKEN_KEY);
    if (wipe) {
      Object.assign(state, { project: '', projects: [], cursor: null, activity: [], forgotten: [], votes: {},
        latencies: [], solution: null });
      sessionStorage.clear();
      for (const id of ['memory-list', 'hit-list', 'project-list', 'project-options', 'ingest-results', 'solution-list',
        'key-list', 'charts', 'pattern-list', 'golden-list', 'candidate-list']) $(id).replaceChildren();
      for (const id of ['ingest-progress', 'keys-explanation', 'patterns-explanation', 'solutions-explanation',
        'candidates-explanation']) {
        $(id).textContent = '';
      }
      $('new-key').value = '';  // a new key is shown once, and not to whoever uses the tab next
      Object.assign(table, { key: null, rows: [], cursors: [null], page: 0, next: null });
      table.selected.clear();
      table.open.clear();
      $('table-body').replaceChildren();
      Object.assign(auditLog, { key: null, params: new URLSearchParams(), cursors: [null], page: 0, next: null });
      $('audit-log-body').replaceChildren();
      $('audit-log-explanation').textContent = '';
      $('whoami').textContent = '';
      $('principal-scopes').replaceChildren();
      $('principal-scopes-explanation').textContent = '';
      for (const id of ['sync-targets', 'usage-chart', 'usage-totals-body']) $(id).replaceChildren();
      for (const id of ['sync-explanation', 'usage-explanation', 'usage-limit']) $(id).textContent = '';
      shownView = null;
      $('new-key-box').hidden = true;
      $('solution-detail').hidden = true;
      closeDetail();
      for (const id of ['list-explanation', 'search-explanation']) $(id).textContent = '';
      $('project-name').textContent = 'none chosen';
      $('search-results').hidden = true;
      $('load-more').hidden = true;
      $('candidates-more').hidden = true;
      hideBox('notice');
      hideBox('alert');
      renderActivity();
      renderForgotten();
    }
    showWorkspace(false);
    $('connect-error').textContent = reason || '';
    $('token').value = '';
    $('token').focus();
  }

  async function connect(token) {
    state.token = token;
    const button = $('connect-button');
    button.disabled = true;
    try {
      const result = await api('GET', '/v1/projects');
      sessionStorage.setItem(TOKEN_KEY, token);
      $('connect-error').textContent = '';
      showWorkspace(true);
      applyProjects(result);
      logActivity('Connect', result.explanation || 'Connected.', false);
      const asked = parseHash().params.get('project');
      const first = asked || state.project || (state.projects[0] && state.projects[0].project) || '';
      if (first) await openProject(first);
      else $('project-input').focus();
      renderForgotten();
      await route();
      return true;
    } catch (error) {
      state.token = '';
      sessionStorage.removeItem(TOKEN_KEY);
      showWorkspace(false);
      const why = error.status === 401 ? 'The API refused this token.' : 'Could not connect.';
      $('connect-error').textContent = why + ' ' + error.code + ': ' + error.message;
      return false;
    } finally {
      button.disabled = false;
    }
  }

  // ---- projects -----------------------------------------------------------

  function applyProjects(result) {
    state.projects = result.projects || [];
    renderProjects();
  }

  async function loadProjects() {
    const result = await api('GET', '/v1/projects');
    applyProjects(result);
    return result;
  }

  function renderProjects() {
    const list = $('project-list');
    const options = $('project-options');
    list.replaceChildren();
    options.replaceChildren();
    if (!state.projects.length) {
      list.append(el('li', { class: 'empty' }, 'No projects yet: type a name above to start one.'));
    }
    for (const info of state.projects) {
      options.append(el('option', { value: info.project }));
      const current = info.project === state.project;
      const counts = plural(info.memories, 'memory', 'memories') + ' · ' + info.pinned + ' pinned'
        + (info.forgotten ? ' · ' + info.forgotten + ' forgotten' : '');
      list.append(el('li', {},
        el('button', {
          type: 'button', class: 'project-item', 'aria-current': current ? 'true' : null,
          title: info.project, onclick: () => go('projects', new URLSearchParams({ project: info.project })),
        },
        el('span', { class: 'project-item-name' }, info.project),
        el('span', { class: 'project-item-counts' }, counts))));
    }
    renderSettings();
    renderDashboard();
  }

  async function openProject(name) {
    if (name !== state.project) {
      clearMessages();
      state.lastQuery = '';
      state.cursor = null;
      $('hit-list').replaceChildren();
      $('search-explanation').textContent = '';
      $('search-results').hidden = true;
      closeDetail();
      $('ingest-results').replaceChildren();  // they were the last project's
      $('ingest-progress').textContent = '';
      $('candidate-list').replaceChildren();
      $('candidates-explanation').textContent = '';
      state.candCursor = null;
      $('capture-threshold').value = '';
    }
    state.project = name;
    sessionStorage.setItem(PROJECT_KEY, name);
    $('project-name').textContent = name;
    $('project-name').title = name;
    $('project-input').value = '';
    renderProjects();
    await Promise.all([loadMemories(false), loadCandidates(false)]);
  }

  function requireProject(operation) {
    if (state.project) return true;
    fail(operation, new ApiError(0, 'no_project', 'Choose or type a project first.', null));
    $('project-input').focus();
    return false;
  }

  // ---- memory cards -------------------------------------------------------

  function contentBlock(id, text) {
    const full = String(text);
    const long = full.length > CLAMP_CHARS;
    const body = el('p', { class: 'content', id: 'content-' + id }, long ? full.slice(0, CLAMP_CHARS) + '…' : full);
    if (!long) return [body];
    let open = false;
    const toggle = el('button', { type: 'button', class: 'btn btn-link', 'aria-expanded': 'false',
      'aria-controls': 'content-' + id });
    toggle.textContent = 'Show all (' + full.length + ' characters)';
    toggle.addEventListener('click', () => {
      open = !open;
      body.textContent = open ? full : full.slice(0, CLAMP_CHARS) + '…';
      toggle.textContent = open ? 'Show less' : 'Show all (' + full.length + ' characters)';
      toggle.setAttribute('aria-expanded', String(open));
    });
    return [body, toggle];
  }

  function metaLine(item, showProject) {
    const meta = item.meta || {};
    const parts = [];
    if (item.pinned) parts.push(el('span', { class: 'badge badge-pin' }, 'Pinned'));
    if (item.status === 'pending_embedding') {
      parts.push(el('span', { class: 'badge badge-warn', title: 'Found by keyword until the embedding is made' }, 'pending embedding'));
    }
    if (meta.type) parts.push(el('span', { class: 'badge' }, meta.type));
    if (item.visibility && item.visibility !== 'private') {
      parts.push(el('span', { class: 'badge badge-visibility', 'data-visibility': item.visibility }, item.visibility));
    }
    if (item.subject) parts.push(el('span', { class: 'badge badge-subject', title: 'subject' }, 'about ' + item.subject));
    const kept = item.effective_retention || item.retention;
    if (kept && kept !== 'replaceable') parts.push(el('span', { class: 'badge badge-retention' }, kept));
    if (meta.outcome_status && meta.outcome_status !== 'unknown') {
      parts.push(el('span', { class: 'badge badge-' + meta.outcome_status }, meta.outcome_status));
    }
    if (item.chunk && typeof item.chunk.index === 'number') {
      parts.push(el('span', { class: 'badge badge-chunk', 'data-chunk': item.chunk.index },
        'chunk ' + (item.chunk.index + 1) + ' of ' + item.chunk.of));
    }
    for (const tag of meta.tags || []) parts.push(el('span', { class: 'tag' }, '#' + tag));
    if (showProject) parts.push(el('span', { class: 'meta-project', title: item.project }, item.project));
    if (item.path) parts.push(el('span', { class: 'meta-path', title: item.path }, item.path));
    return el('div', { class: 'meta' }, parts);
  }

  function footLine(item) {
    const bits = [
      el('code', { class: 'mem-id', title: item.id }, shortId(item.id)),
      el('time', { datetime: item.created_at, title: item.created_at }, whenText(item.created_at)),
    ];
    if (typeof item.helpful === 'number') {
      bits.push(el('span', { class: 'votes', title: 'helpful / not helpful votes' },
        '▲ ' + item.helpful + '  ▼ ' + item.unhelpful));
    }
    return el('div', { class: 'foot' }, bits);
  }

  function actionBar(item, source) {
    const label = snippet(item.content, 40);
    const vote = state.votes[item.id];
    const act = (text, aria, cls, handler, pressed) =>
      el('button', { type: 'button', class: 'btn btn-small ' + cls, 'aria-label': aria + ': ' + label,
        'aria-pressed': pressed === undefined ? null : String(pressed),
        'data-action': text, onclick: (event) => handler(item, event.currentTarget, source) }, text);
    if (source === 'forgotten') {
      return el('div', { class: 'actions' },
        act('Details', 'Show details', '', showDetail),
        act('Restore', 'Restore', 'btn-good', (m, b) => restoreMemory(m.id, b)));
    }
    return el('div', { class: 'actions' },
      act('Details', 'Show details', '', showDetail),
      item.pinned ? act('Unpin', 'Unpin', '', unpinMemory) : act('Pin', 'Pin', '', pinMemory),
      act('Helpful', 'Mark helpful', 'btn-good', (m, b) => sendFeedback(m, b, true), vote === true),
      act('Not helpful', 'Mark not helpful', 'btn-bad', (m, b) => sendFeedback(m, b, false), vote === false),
      act('Forget', 'Forget', 'btn-danger', askForget));
  }

  /** Forget asks first, in place: the card's actions become Confirm forget / Cancel. */
  function askForget(item, button) {
    clearMessages();
    const bar = button.closest('.actions');
    const keep = [...bar.childNodes];
    const label = snippet(item.content, 40);
    const cancel = el('button', { type: 'button', class: 'btn btn-small', 'data-action': 'Cancel',
      'aria-label': 'Cancel forgetting: ' + label }, 'Cancel');
    const confirm = el('button', { type: 'button', class: 'btn btn-small btn-danger', 'data-action': 'Confirm forget',
      'aria-label': 'Confirm forget: ' + label }, 'Confirm forget');
    const question = el('span', { class: 'confirm-text', role: 'status' }, 'Forget this memory? (restorable for 30 days)');
    cancel.addEventListener('click', () => {
      bar.replaceChildren(...keep);
      bar.querySelector("[data-action='Forget']").focus();
    });
    confirm.addEventListener('click', () => forgetMemory(item, confirm));
    bar.replaceChildren(question, confirm, cancel);
    confirm.focus();
  }

  function scoreBlock(hit) {
    const comps = hit.components || {};
    const rows = COMPONENTS.map(([key, name, help]) => {
      const value = Number(comps[key] || 0);
      const fill = el('span', { class: value < 0 ? 'fill fill-neg' : 'fill' });
      fill.style.width = Math.min(100, Math.abs(value) * 100).toFixed(1) + '%';  // CSSOM: allowed by the CSP
      return el('div', { class: 'comp', 'data-component': key, title: help },
        el('dt', {}, name),
        el('dd', {},
          el('span', { class: 'bar', 'aria-hidden': 'true' }, fill),
          el('span', { class: 'comp-value' }, fixed(value))));
    });
    return el('div', { class: 'score' },
      el('div', { class: 'score-total' },
        el('span', { class: 'score-label' }, 'score'),
        el('span', { class: 'score-value', 'data-score': hit.score }, fixed(hit.score))),
      el('dl', { class: 'components', 'aria-label': 'Score components' }, rows));
  }

  function card(item, source) {
    const isHit = source === 'search';
    const older = isHit && (item.superseded || []).length
      ? el('ol', { class: 'superseded', 'aria-label': 'Superseded by this memory' },
        item.superseded.map((s) => el('li', { 'data-id': s.id }, 'superseded: ' + snippet(s.content, 160))))
      : null;
    const body = el('div', { class: 'card-body' },
      metaLine(item, isHit && item.project !== state.project),
      contentBlock(source + '-' + item.id, item.content),
      older,
      footLine(item),
      actionBar(item, source));
    const article = el('article', { class: 'card' + (item.pinned ? ' is-pinned' : '') + (isHit ? ' card-hit' : '') },
      body, isHit ? scoreBlock(item) : null);
    return el('li', { 'data-id': item.id, class: 'card-item' }, article);
  }

  function cardsFor(id) {
    return document.querySelectorAll('li.card-item[data-id="' + CSS.escape(id) + '"]');
  }

  /** Re-draw every card of this memory with fields from the API's answer. */
  function updateCards(memory) {
    for (const node of cardsFor(memory.id)) {
      const source = node.closest('#hit-list') ? 'search' : (state.view === 'forgotten' ? 'forgotten' : 'list');
      const old = node._item || {};
      const merged = Object.assign({}, old, {
        pinned: memory.pinned, helpful: memory.helpful, unhelpful: memory.unhelpful, meta: memory.meta,
        visibility: memory.visibility, subject: memory.subject,
      });
      const fresh = card(merged, source);
      fresh._item = merged;
      node.replaceWith(fresh);
    }
  }

  function appendCard(list, item, source) {
    const node = card(item, source);
    node._item = item;
    list.append(node);
  }

  // ---- listing --------------------------------------------------------------

  async function loadMemories(more) {
    if (!state.project) return;
    const params = new URLSearchParams({ project: state.project, limit: String(PAGE_SIZE) });
    if (state.view === 'pinned') params.set('pinned_only', 'true');
    if (state.view === 'forgotten') params.set('forgotten', 'true');
    if ($('list-visibility').value) params.set('visibility', $('list-visibility').value);
    const subject = $('list-subject').value.trim();
    if (subject) params.set('subject', subject);
    if (more && state.cursor) params.set('cursor', state.cursor);
    const button = more ? $('load-more') : null;
    const ticket = ++latest.list;
    await run('List', button, async () => {
      const result = await api('GET', '/v1/memories?' + params.toString());
      if (ticket !== latest.list) return;  // a newer listing (another project, view or store) wins
      const list = $('memory-list');
      if (!more) list.replaceChildren();
      const source = state.view === 'forgotten' ? 'forgotten' : 'list';
      for (const memory of inChunkOrder(result.memories || [])) appendCard(list, memory, source);
      state.cursor = result.next_cursor || null;
      $('load-more').hidden = !state.cursor;
      $('memory-empty').hidden = list.children.length > 0;
      $('list-explanation').textContent = result.explanation || '';
    });
  }

  /** Newest first, but the chunks of one ingest (same path, same time) in their own order. */
  function inChunkOrder(memories) {
    const key = (m) => (m.chunk ? (m.path || '') + '\u0000' + m.created_at : null);
    const out = [];
    for (let i = 0; i < memories.length;) {
      let j = i + 1;
      while (key(memories[i]) !== null && j < memories.length && key(memories[j]) === key(memories[i])) j += 1;
      out.push(...memories.slice(i, j).sort((a, b) => (a.chunk ? a.chunk.index : 0) - (b.chunk ? b.chunk.index : 0)));
      i = j;
    }
    return out;
  }

  function setView(view) {
    state.view = view;
    $('view-recent').setAttribute('aria-pressed', String(view === 'recent'));
    $('view-pinned').setAttribute('aria-pressed', String(view === 'pinned'));
    $('view-forgotten').setAttribute('aria-pressed', String(view === 'forgotten'));
    state.cursor = null;
    loadMemories(false);
  }

  // ---- operations ---------------------------------------------------------

  async function storeMemory(event) {
    event.preventDefault();
    if (!requireProject('Store')) return;
    const content = $('store-content').value;
    if (!content.trim()) {
      fail('Store', new ApiError(0, 'invalid', 'Write something to remember first.', null));
      $('store-content').focus();
      return;
    }
    const tags = parseTags($('store-tags').value);
    const problem = tagsProblem(tags);
    if (problem) return refuse('Store', 'store-tags', problem);
    const body = {
      project: state.project, content, pinned: $('store-pinned').checked, tags, meta: { author: 'console' },
    };
    // Only when not the API's defaults (private, no subject), so a plain store sends what it always did.
    if ($('store-visibility').value !== 'private') body.visibility = $('store-visibility').value;
    const subject = $('store-subject').value.trim();
    if (subject) body.subject = subject;
    await run('Store', $('store-button'), async () => {
      const result = await api('POST', '/v1/memories', body);
      say('Store', result.explanation);
      $('store-content').value = '';
      $('store-tags').value = '';
      $('store-pinned').checked = false;
      $('store-visibility').value = 'private';
      $('store-subject').value = '';
      await Promise.all([loadMemories(false), loadProjects()]);
    });
  }

  /** k within what the API accepts (1-20), shown in the input as it will be sent. */
  function clampK() {
    const input = $('search-k');
    const typed = Number.parseInt(input.value, 10);
    const k = Number.isFinite(typed) ? Math.min(MAX_K, Math.max(1, typed)) : 8;
    input.value = String(k);
    return k;
  }

  async function search(event) {
    event.preventDefault();
    const query = $('search-query').value.trim();
    const global = $('search-global').checked;
    if (!query) {
      fail('Search', new ApiError(0, 'invalid', 'Type what to look for.', null));
      $('search-query').focus();
      return;
    }
    if (!global && !requireProject('Search')) return;
    const body = { query, mode: $('search-mode').value, k: clampK() };
    if (global) body.global = true;
    else body.project = state.project;
    if (!searchOptions(body)) return;
    const ticket = ++latest.search;
    await run('Search', $('search-button'), async () => {
      const started = performance.now();
      const result = await api('POST', '/v1/memories/search', body);
      recordLatency(performance.now() - started);
      if (ticket !== latest.search) return;  // an answer to an older query arrived late
      state.lastQuery = query;
      const list = $('hit-list');
      list.replaceChildren();
      for (const hit of result.results || []) appendCard(list, hit, 'search');
      if (!list.children.length) list.append(el('li', { class: 'empty' }, 'Nothing matched.'));
      $('search-explanation').textContent = result.explanation || '';
      $('search-results').hidden = false;
      logActivity('Search', result.explanation || '', false);
    });
  }

  /** A datetime-local text (read as UTC) as RFC 3339; what does not parse goes as written (the API names it). */
  function utcIso(raw) {
    const at = new Date(raw + (raw.length === 16 ? ':00' : '') + 'Z');
    return Number.isNaN(at.getTime()) ? raw : at.toISOString();
  }

  /** A datetime-local value (read as UTC) as the API's ISO time, or '' when empty. */
  function isoOf(id) {
    const raw = $(id).value;
    if (!raw) return '';
    const at = new Date(raw + (raw.length === 16 ? ':00' : '') + 'Z');
    return Number.isNaN(at.getTime()) ? null : at.toISOString();
  }

  /** A number in [0, 1] from an input, '' when empty, null when out of range. */
  function unitOf(id) {
    const raw = $(id).value.trim();
    if (!raw) return '';
    const n = Number(raw);
    return Number.isFinite(n) && n >= 0 && n <= 1 ? n : null;
  }

  /** Filters, time travel, relevance floor, weights: each only when set; false when one is refused. */
  function searchOptions(body) {
    const filters = {};
    const tags = parseTags($('search-tags').value);
    const problem = tagsProblem(tags);
    if (problem) return refuse('Search', 'search-tags', problem);
    if (tags.length) filters.tags = tags;
    for (const [id, key] of TEXT_FILTERS) {
      const value = $(id).value.trim();
      if (value) filters[key] = value;
    }
    if ($('search-retention').value) filters.retention = $('search-retention').value;
    if ($('search-visibility').value) filters.visibility = $('search-visibility').value;
    const subject = $('search-subject').value.trim();
    if (subject) filters.subject = subject;
    for (const [id, key] of [['search-since', 'since'], ['search-until', 'until']]) {
      const at = isoOf(id);
      if (at === null) return refuse('Search', id, 'Not a date and time.');
      if (at) filters[key] = at;
    }
    if (Object.keys(filters).length) body.filters = filters;
    const asOf = isoOf('search-as-of');
    if (asOf === null) return refuse('Search', 'search-as-of', 'Not a date and time.');
    if (asOf) body.as_of = asOf;
    const floor = unitOf('search-min-relevance');
    if (floor === null) return refuse('Search', 'search-min-relevance', 'Minimum relevance is a number from 0 to 1.');
    if (floor !== '') body.min_relevance = floor;
    const weights = {};
    for (const [id, key] of WEIGHTS) {
      const w = unitOf(id);
      if (w === null) return refuse('Search', id, 'A weight is a number from 0 to 1.');
      if (w !== '') weights[key] = w;
    }
    if (Object.keys(weights).length) body.weights = weights;
    if ($('search-superseded').checked) body.include_superseded = true;
    return true;
  }

  function clearFilters() {
    for (const input of $('search-filters').querySelectorAll('input, select')) {
      if (input.type === 'checkbox') input.checked = false;
      else input.value = '';
    }
    $('search-tags').value = '';
  }

  async function pinMemory(item, button) {
    await run('Pin', button, async () => {
      const result = await api('POST', memoryPath(item.id, 'pin'));
      say('Pin', result.explanation);
      updateCards(result.memory);
      await afterChange();
    });
  }

  async function unpinMemory(item, button) {
    await run('Unpin', button, async () => {
      const result = await api('POST', memoryPath(item.id, 'unpin'));
      say('Unpin', result.explanation);
      updateCards(result.memory);
      await afterChange();
    });
  }

  /** The pinned view and the project counts change with a pin; reload them, keep the rest. */
  async function afterChange() {
    const reloads = [loadProjects()];
    if (state.view === 'pinned') reloads.push(loadMemories(false));
    await Promise.all(reloads);
  }

  async function sendFeedback(item, button, helpful) {
    const op = helpful ? 'Helpful' : 'Not helpful';
    const before = state.votes[item.id];
    if (before !== undefined) {
      // The API counts every vote it is sent and has no way to take one back: one vote per tab.
      clearMessages();
      say(op, 'Already marked ' + (before ? 'helpful' : 'not helpful') + ' from this tab; a vote is counted once'
        + (before === helpful ? '.' : ', and a vote sent cannot be taken back.'));
      return;
    }
    const body = { helpful };
    if (button.closest('#hit-list') && state.lastQuery) body.context = 'console search: ' + snippet(state.lastQuery, 200);
    await run(op, button, async () => {
      const result = await api('POST', memoryPath(item.id, 'feedback'), body);
      state.votes[item.id] = helpful;
      sessionStorage.setItem(VOTES_KEY, JSON.stringify(state.votes));
      say(op, result.explanation);
      updateCards(result.memory);
    });
  }

  async function forgetMemory(item, button) {
    await run('Forget', button, async () => {
      const result = await api('DELETE', memoryPath(item.id));
      say('Forget', result.explanation, (undoButton) => restoreMemory(item.id, undoButton));
      for (const node of document.querySelectorAll('#hit-list li.card-item[data-id="' + CSS.escape(item.id) + '"]')) {
        node.remove();
      }
      rememberForgotten(result.memory || item);
      // The list is read again so its count and paging stay true; focus moves to its heading.
      await Promise.all([loadMemories(false), loadProjects()]);
      if (!document.activeElement || document.activeElement === document.body) $('memories-title').focus();
    });
  }

  function rememberForgotten(memory) {
    state.forgotten = state.forgotten.filter((f) => f.id !== memory.id);
    state.forgotten.unshift({ id: memory.id, project: memory.project, text: snippet(memory.content, 90) });
    state.forgotten = state.forgotten.slice(0, MAX_FORGOTTEN);
    saveForgotten();
    renderForgotten();
  }

  function renderForgotten() {
    const list = $('forgotten-list');
    list.replaceChildren();
    for (const item of state.forgotten) {
      list.append(el('li', { class: 'forgotten', 'data-id': item.id },
        el('div', { class: 'forgotten-text' },
          el('span', { class: 'forgotten-snippet' }, item.text || item.id),
          el('code', { class: 'mem-id', title: item.id }, shortId(item.id))),
        el('button', { type: 'button', class: 'btn btn-small', 'aria-label': 'Restore: ' + (item.text || item.id),
          onclick: (event) => restoreMemory(item.id, event.currentTarget) }, 'Restore')));
    }
    $('forgotten-empty').hidden = state.forgotten.length > 0;
  }

  async function restoreMemory(id, button) {
    await run('Restore', button, async () => {
      const result = await api('POST', memoryPath(id, 'restore'));
      say('Restore', result.explanation);
      state.forgotten = state.forgotten.filter((f) => f.id !== id);
      saveForgotten();
      renderForgotten();
      const project = result.memory && result.memory.project;
      if (project && project !== state.project) await openProject(project);
      else await loadMemories(false);
      await loadProjects();
      if (!document.activeElement || document.activeElement === document.body) $('memories-title').focus();
    });
  }

  // ---- the capture queue: candidates proposed from conversations (capsule.capture) ---------

  const candidatePath = (id, action) => '/v1/memories/candidates/' + encodeURIComponent(id) + '/' + action;

  async function loadCandidates(more) {
    if (!state.project) return;
    const params = new URLSearchParams({ project: state.project, status: state.candStatus, limit: String(PAGE_SIZE) });
    if (more && state.candCursor) params.set('cursor', state.candCursor);
    const ticket = ++latest.candidates;
    await run('Candidates', more ? $('candidates-more') : null, async () => {
      const result = await api('GET', '/v1/memories/candidates?' + params.toString());
      if (ticket !== latest.candidates) return;  // a newer listing (another project or status) wins
      const list = $('candidate-list');
      if (!more) list.replaceChildren();
      for (const c of result.candidates || []) list.append(candidateItem(c));
      if (!list.children.length) list.append(el('li', { class: 'empty' }, 'No ' + state.candStatus + ' candidates.'));
      state.candCursor = result.next_cursor || null;
      $('candidates-more').hidden = !state.candCursor;
      $('candidates-explanation').textContent = result.explanation || '';
    });
  }

  function setCandidateStatus(status) {
    clearMessages();
    state.candStatus = status;
    for (const s of ['pending', 'approved', 'rejected']) $('cand-' + s).setAttribute('aria-pressed', String(s === status));
    state.candCursor = null;
    loadCandidates(false);
  }

  function candidateItem(c) {
    const badges = [
      el('span', { class: 'badge' }, c.type),
      el('span', { class: 'badge badge-score', 'data-score': c.score }, 'score ' + fixed(c.score)),
      el('span', { class: 'badge' }, c.role),
      c.session ? el('span', { class: 'badge', title: 'session' }, 'session ' + c.session) : null,
      c.status !== 'pending' ? el('span', { class: 'badge badge-' + (c.status === 'approved' ? 'success' : 'failure') }, c.status) : null,
      (c.tags || []).map((t) => el('span', { class: 'tag' }, '#' + t)),
    ];
    const decided = c.status === 'pending' ? null : el('p', { class: 'hint cand-decided' },
      c.status + ' ' + (c.decided_at || '') + (c.memory_id ? ' · memory ' + c.memory_id : '') + (c.note ? ' · ' + c.note : ''));
    const label = snippet(c.text, 40);
    const actions = c.status !== 'pending' ? null : el('div', { class: 'actions' },
      el('button', { type: 'button', class: 'btn btn-small btn-good', 'data-action': 'Approve',
        'aria-label': 'Approve: ' + label, onclick: (e) => askDecision(c, e.currentTarget, true) }, 'Approve'),
      el('button', { type: 'button', class: 'btn btn-small btn-danger', 'data-action': 'Reject',
        'aria-label': 'Reject: ' + label, onclick: (e) => askDecision(c, e.currentTarget, false) }, 'Reject'));
    return el('li', { class: 'card-item cand', 'data-id': c.id, 'data-status': c.status },
      el('article', { class: 'card' }, el('div', { class: 'card-body' },
        el('div', { class: 'meta' }, ...badges),  // spread: el() flattens one level, the tags are a level down
        el('p', { class: 'content cand-text' }, c.text),
        el('p', { class: 'hint cand-reason' }, 'Why: ' + c.reason),
        decided,
        el('div', { class: 'foot' }, el('code', { class: 'mem-id', title: c.id }, shortId(c.id)),
          el('time', { datetime: c.created_at, title: c.created_at }, whenText(c.created_at))),
        actions)));
  }

  async function saveThreshold(event) {
    event.preventDefault();
    clearMessages();
    if (!requireProject('Threshold')) return;
    const raw = $('capture-threshold').value.trim();
    const threshold = raw === '' ? NaN : Number(raw);
    if (!(threshold >= 0 && threshold <= 1)) {  // ThresholdRequest.threshold
      return refuse('Threshold', 'capture-threshold', 'The threshold is a number from 0 to 1.');
    }
    await run('Threshold', $('threshold-save'), async () => {
      const result = await api('PUT', '/v1/memories/capture/settings', { project: state.project, threshold });
      $('capture-threshold').value = String(result.threshold);
      say('Threshold', result.explanation);
    });
  }

  /** Approve or reject in place: the card's actions become a small form (edited text, or a reason). */
  function askDecision(c, button, approve) {
    clearMessages();
    const bar = button.closest('.actions');
    const keep = [...bar.childNodes];
    const fieldId = (approve ? 'approve-text-' : 'reject-reason-') + c.id;
    const field = approve
      ? el('textarea', { id: fieldId, rows: 3, maxlength: LIMITS.content, class: 'cand-field' })
      : el('input', { id: fieldId, maxlength: LIMITS.reason, autocomplete: 'off', class: 'cand-field' });
    if (approve) field.value = c.text;
    const label = el('label', { for: fieldId }, approve ? 'Text to store (edit if you like)' : 'Reason for rejecting (optional)');
    const confirm = el('button', { type: 'button', class: 'btn btn-small ' + (approve ? 'btn-good' : 'btn-danger'),
      'data-action': approve ? 'Confirm approve' : 'Confirm reject' }, approve ? 'Store as a memory' : 'Confirm reject');
    const cancel = el('button', { type: 'button', class: 'btn btn-small', 'data-action': 'Cancel',
      'aria-label': 'Cancel: ' + snippet(c.text, 40) }, 'Cancel');
    cancel.addEventListener('click', () => { bar.replaceChildren(...keep); keep[approve ? 0 : 1].focus(); });
    confirm.addEventListener('click', () => (approve ? approveCandidate(c, field, confirm) : rejectCandidate(c, field, confirm)));
    bar.replaceChildren(el('div', { class: 'stack cand-form' }, label, field, el('div', { class: 'row' }, confirm, cancel)));
    field.focus();
  }

  /** 409: another client (or tab) decided this candidate first; nothing was changed here. */
  function alreadyDecided(error) {
    if (error.status !== 409) return error;
    return new ApiError(409, error.code, 'This candidate was already decided (approved or rejected) elsewhere; '
      + 'the list is read again. ' + error.message, error.details);
  }

  async function decide(operation, c, button, action, body) {
    await run(operation, button, async () => {
      let result;
      try {
        result = await api('POST', candidatePath(c.id, action), body);
      } catch (error) {
        if (error.status === 409) await loadCandidates(false);
        throw alreadyDecided(error);
      }
      say(operation, result.explanation);
      await loadCandidates(false);
      if (result.memory) await Promise.all([loadMemories(false), loadProjects()]);
      $('candidates-title').focus();
    });
  }

  function approveCandidate(c, field, button) {
    const text = field.value;
    const body = {};
    if (text !== c.text) {
      if (!text.trim()) return refuse('Approve', field.id, 'The text to store cannot be empty.');
      if (utf8Bytes(text) > LIMITS.content) return refuse('Approve', field.id, 'The text is over 64 KiB.');
      body.text = text;
    }
    return decide('Approve', c, button, 'approve', body);
  }

  function rejectCandidate(c, field, button) {
    const reason = field.value.trim();
    return decide('Reject', c, button, 'reject', reason ? { reason } : {});
  }

  // ---- memory detail ----------------------------------------------------------

  const DETAIL_FIELDS = [
    ['id', (m) => m.id], ['project', (m) => m.project],
    ['author', (m) => (m.meta || {}).author], ['session', (m) => (m.meta || {}).session],
    ['task', (m) => (m.meta || {}).task], ['source', (m) => (m.meta || {}).source],
    ['type', (m) => (m.meta || {}).type], ['path', (m) => m.path],
    ['chunk', (m) => (m.chunk ? (m.chunk.index + 1) + ' of ' + m.chunk.of : null)],
    ['pinned', (m) => (m.pinned ? 'yes' : 'no')], ['status', (m) => m.status], ['model', (m) => m.model],
    ['visibility', (m) => m.visibility || 'private'], ['subject', (m) => m.subject],
    ['created', (m) => m.created_at], ['occurred', (m) => m.occurred_at], ['updated', (m) => m.updated_at],
    ['forgotten', (m) => m.forgotten_at],
    ['retention', (m) => (m.retention && m.retention !== m.effective_retention
      ? m.retention + ' (' + m.effective_retention + ')' : m.effective_retention || m.retention)],
    ['expires', (m) => m.expires_at], ['sha256', (m) => m.sha256],
    ['supersedes', (m) => m.supersedes], ['superseded by', (m) => m.superseded_by],
    ['tags', (m) => ((m.meta || {}).tags || []).map((t) => '#' + t).join(' ')],
    ['feedback', (m) => '▲ ' + (m.helpful || 0) + ' helpful · ▼ ' + (m.unhelpful || 0) + ' not helpful'],
  ];
  const SHOWN_META = new Set(['author', 'session', 'task', 'source', 'type', 'tags']);

  function renderDetail(memory, explanation) {
    if (state.detail && state.detail.id !== memory.id) {  // another memory's history and audit no longer apply
      $('history').hidden = true;
      $('detail-history').setAttribute('aria-expanded', 'false');
      $('audit').hidden = true;
    }
    state.detail = memory;
    fillEditForm(memory);
    $('detail-actions').hidden = Boolean(memory.forgotten_at);  // a forgotten memory is restored first
    $('detail-content').textContent = memory.content;
    $('detail-explanation').textContent = explanation || '';
    const rows = [];
    const add = (name, value) => {
      if (value === null || value === undefined || value === '') return;
      rows.push(el('div', { class: 'detail-row', 'data-field': name }, el('dt', {}, name), el('dd', {}, String(value))));
    };
    for (const [name, pick] of DETAIL_FIELDS) add(name, pick(memory));
    for (const [key, value] of Object.entries(memory.meta || {})) {
      if (!SHOWN_META.has(key)) add('meta.' + key, typeof value === 'object' ? JSON.stringify(value) : value);
    }
    $('detail-meta').replaceChildren(...rows);
    $('detail').hidden = false;
    $('detail-title').focus();
  }

  /** The API's copy of an active memory; a forgotten one (which GET no longer shows) as listed. */
  async function showDetail(item, button, source) {
    clearMessages();
    if (source === 'forgotten') {
      renderDetail(item, 'Forgotten ' + (item.forgotten_at || '') + '; restore brings it back.');
      return;
    }
    await run('Details', button, async () => {
      const result = await api('GET', memoryPath(item.id));
      renderDetail(result.memory, result.explanation);
    });
  }

  function closeDetail() {
    $('detail').hidden = true;
    $('detail-meta').replaceChildren();
    $('detail-content').textContent = '';
    state.detail = null;
    showEdit(false);
    $('history').hidden = true;
    $('detail-history').setAttribute('aria-expanded', 'false');
    $('audit').hidden = true;
    $('audit-list').replaceChildren();
  }

  // ---- a memory's audit records (GET /v1/audit?memory_id=) ---------------------------

  const AUDIT_PAGES = 5;  // pages of 100 read at most for one memory's records (the Activity view pages on)

  function auditItem(row) {
    return el('li', { class: 'version', 'data-action': row.action },
      el('strong', {}, row.action), ' ', el('span', { class: 'hint' }, row.at), ' ',
      el('span', {}, 'by ' + (row.actor || 'unknown') + (row.reason ? ': ' + row.reason : '')));
  }

  async function loadAudit(button) {
    const memory = state.detail;
    if (!memory) return;
    clearMessages();
    await run('Audit', button, async () => {
      const found = [];
      let cursor = null;
      let pages = 0;
      do {
        const query = new URLSearchParams({ memory_id: memory.id, limit: '100' });
        if (cursor) query.set('cursor', cursor);
        const page = await api('GET', '/v1/audit?' + query.toString());
        found.push(...(page.records || []));
        cursor = page.next_cursor || null;
        pages += 1;
      } while (cursor && pages < AUDIT_PAGES);
      found.reverse();  // the API answers newest first; a memory's story reads oldest first
      $('audit-explanation').textContent = plural(found.length, 'audit record', 'audit records') + ' of ' + memory.id
        + ', oldest first' + (cursor ? ' (the latest ' + found.length + '; the Activity view pages through all).' : '.');
      $('audit-list').replaceChildren(...found.map(auditItem));
      $('audit').hidden = false;
      $('audit-title').focus();
    });
  }

  // ---- the tenant's audit log (GET /v1/audit), in the Activity view -------------------------

  // [form field, the view's address parameter, the API's query parameter]
  const AUDIT_FILTERS = [['audit-project', 'audit_project', 'project'], ['audit-action', 'action', 'action'],
    ['audit-memory', 'memory', 'memory_id'], ['audit-since', 'since', 'since'], ['audit-until', 'until', 'until']];
  const AUDIT_TIMES = ['since', 'until'];  // datetime-local in the address (read as UTC), RFC 3339 for the API
  const AUDIT_PAGE = 25;
  const auditLog = { key: null, params: new URLSearchParams(), cursors: [null], page: 0, next: null };

  function auditParamsFromForm() {
    const params = new URLSearchParams();
    for (const [id, name] of AUDIT_FILTERS) {
      const value = $(id).value.trim();
      if (value) params.set(name, value);
    }
    return params;
  }

  function auditQuery(params, cursor) {
    const query = new URLSearchParams({ limit: String(AUDIT_PAGE) });
    for (const [, name, apiName] of AUDIT_FILTERS) {
      const value = params.get(name);
      if (value) query.set(apiName, AUDIT_TIMES.includes(name) ? utcIso(value) : value);
    }
    if (cursor) query.set('cursor', cursor);
    return query;
  }

  /** Show the audit log for the address's filters; read again when they changed or the view was just opened. */
  async function enterAudit(params, opened) {
    for (const [id, name] of AUDIT_FILTERS) $(id).value = params.get(name) || '';
    $('audit-projects').replaceChildren(...state.projects.map((p) => el('option', { value: p.project })));
    const key = auditQuery(params, null).toString();
    if (key === auditLog.key && !opened) return;
    Object.assign(auditLog, { key, params, cursors: [null], page: 0, next: null });
    await loadAuditPage();
  }

  function auditRow(row) {
    const link = el('a', { href: hashOf('projects', new URLSearchParams({ project: row.project, memory: row.memory_id })),
      title: row.memory_id, 'aria-label': 'Open memory ' + row.memory_id }, shortId(row.memory_id));
    return el('tr', { 'data-memory': row.memory_id, 'data-action': row.action },
      el('td', { class: 'audit-when' }, el('time', { datetime: row.at, title: row.at }, whenText(row.at))),
      el('td', {}, el('strong', {}, row.action)),
      el('td', {}, link),
      el('td', {}, row.project),
      el('td', {}, row.actor || 'unknown'),
      el('td', { class: 'audit-reason' }, row.reason || ''));
  }

  async function loadAuditPage() {
    const seq = ++latest.audit;
    await run('Audit log', null, async () => {
      const query = auditQuery(auditLog.params, auditLog.cursors[auditLog.page]);
      const result = await api('GET', '/v1/audit?' + query.toString());
      if (seq !== latest.audit) return;
      const records = result.records || [];
      auditLog.next = result.next_cursor || null;
      $('audit-log-body').replaceChildren(...records.map(auditRow));
      $('audit-log-empty').hidden = records.length > 0;
      $('audit-log-explanation').textContent = result.explanation || '';
      $('audit-page').textContent = 'Page ' + (auditLog.page + 1);
      $('audit-prev').disabled = auditLog.page === 0;
      $('audit-next').disabled = !auditLog.next;
    });
  }

  function auditNext() {
    if (!auditLog.next) return;
    auditLog.cursors[auditLog.page + 1] = auditLog.next;
    auditLog.page += 1;
    loadAuditPage();
  }

  function auditPrev() {
    if (auditLog.page === 0) return;
    auditLog.page -= 1;
    loadAuditPage();
  }

  /** A link to one memory (#/projects?project=P&memory=ID): its detail, unless it is already open. */
  async function openMemoryFromAddress(memoryId) {
    if (state.detail && state.detail.id === memoryId && !$('detail').hidden) return;
    await showDetail({ id: memoryId }, null);
  }

  // ---- edit, history, revert ------------------------------------------------------

  function fillEditForm(memory) {
    $('edit-content').value = memory.content;
    $('edit-tags').value = ((memory.meta || {}).tags || []).join(', ');
    $('edit-retention').value = memory.retention || 'auto';
    $('edit-visibility').value = memory.visibility || 'private';
    $('edit-subject').value = memory.subject || '';
    $('edit-ttl').value = '';
    $('edit-reason').value = '';
  }

  function showEdit(open) {
    $('edit-form').hidden = !open;
    $('detail-edit').setAttribute('aria-expanded', String(open));
    if (open) $('edit-content').focus();
  }

  async function reloadDetail(button) {
    if (!state.detail) return;
    clearMessages();
    const id = state.detail.id;
    await run('Reload', button, async () => {
      const result = await api('GET', memoryPath(id));
      renderDetail(result.memory, result.explanation);
      if (!$('history').hidden) await loadHistory(null);
      await loadMemories(false);  // the card shows the same text as the detail
      say('Reload', 'Read ' + id + ' again: ' + (result.explanation || ''));
    });
  }

  /** The fields of the form that differ from the memory as read, checked against the API's limits. */
  function editBody(memory) {
    const body = {};
    const content = $('edit-content').value;
    if (content !== memory.content) {
      if (!content.trim()) return refuse('Edit', 'edit-content', 'The content cannot be empty.');
      if (utf8Bytes(content) > LIMITS.content) {
        return refuse('Edit', 'edit-content', 'The content is ' + utf8Bytes(content) + ' bytes; the limit is 64 KiB.');
      }
      body.content = content;
    }
    const tags = parseTags($('edit-tags').value);
    const problem = tagsProblem(tags);
    if (problem) return refuse('Edit', 'edit-tags', problem);
    if (tags.join('\u0000') !== ((memory.meta || {}).tags || []).join('\u0000')) body.tags = tags;
    const retention = $('edit-retention').value;
    if (retention !== (memory.retention || 'auto')) body.retention = retention;
    const visibility = $('edit-visibility').value;
    if (visibility !== (memory.visibility || 'private')) body.visibility = visibility;
    const subject = $('edit-subject').value.trim();
    if (subject !== (memory.subject || '')) {
      // The API sets or changes a subject (UpdateRequest.subject); it has no way to remove one.
      if (!subject) return refuse('Edit', 'edit-subject', 'The API can change the subject, not remove it: type the new one.');
      if (/[\u0000-\u001f\u007f]/.test(subject)) return refuse('Edit', 'edit-subject', 'The subject cannot hold control characters.');
      body.subject = subject;
    }
    const ttl = $('edit-ttl').value.trim();
    if (ttl) {
      if (!/^\d+$/.test(ttl) || Number(ttl) < 1 || Number(ttl) > LIMITS.ttl) {
        return refuse('Edit', 'edit-ttl', 'Expires after is a whole number of seconds from 1 to 316224000 (10 years).');
      }
      body.ttl = Number(ttl);
    }
    const reason = $('edit-reason').value.trim();
    if (reason) body.reason = reason;
    return body;
  }

  /** 412: someone changed the memory after this page read it; nothing was changed. */
  function changedElsewhere(error) {
    if (error.status !== 412) return error;
    return new ApiError(412, error.code, 'This memory was changed elsewhere since it was read: reload it, then edit again.',
      error.message);
  }

  async function saveEdit(event) {
    event.preventDefault();
    clearMessages();
    const memory = state.detail;
    if (!memory) return;
    const body = editBody(memory);
    if (!body) return;
    if (!Object.keys(body).some((key) => key !== 'reason')) {
      say('Edit', 'Nothing to save: the form says what the memory already says.');
      return;
    }
    await run('Edit', $('edit-save'), async () => {
      const ifMatch = memory.sha256 ? { 'If-Match': '"' + memory.sha256 + '"' } : {};
      let result;
      try {
        result = await api('PATCH', memoryPath(memory.id), body, ifMatch);
      } catch (error) {
        if (error.status === 412) $('detail-reload').focus();
        if (error.status === 409 && body.visibility) $('edit-visibility').focus();  // the flags are in its details
        throw changedElsewhere(error);
      }
      say('Edit', 'Version ' + result.version + ' saved. ' + (result.explanation || ''));
      renderDetail(result.memory, result.explanation);
      showEdit(false);
      if (!$('history').hidden) await loadHistory(null);
      await Promise.all([loadMemories(false), loadProjects()]);
    });
  }

  async function toggleHistory(button) {
    const open = $('history').hidden;
    button.setAttribute('aria-expanded', String(open));
    if (!open) {
      $('history').hidden = true;
      return;
    }
    clearMessages();
    await run('History', button, () => loadHistory(null));
  }

  async function loadHistory() {
    const memory = state.detail;
    if (!memory) return;
    const result = await api('GET', memoryPath(memory.id, 'history'));
    $('history-explanation').textContent = result.explanation || '';
    $('history-list').replaceChildren(...(result.versions || []).map((v) => versionItem(memory, v)));
    $('history').hidden = false;
  }

  function versionItem(memory, v) {
    const when = v.replaced_at ? (v.created_at || '?') + ' to ' + v.replaced_at : (v.created_at || '') + ' (current)';
    // A version's actor and reason are those of the change that replaced it (the audit record).
    const who = v.current ? '' : 'replaced by ' + (v.actor || 'unknown') + (v.reason ? ': ' + v.reason : '');
    return el('li', { class: 'version' + (v.current ? ' is-current' : ''), 'data-version': v.version },
      el('div', { class: 'version-head' },
        el('strong', {}, 'Version ' + v.version + (v.current ? ' (current)' : '')), ' ',
        el('span', { class: 'badge' }, v.effective_retention || v.retention || ''), ' ',
        ((v.meta || {}).tags || []).map((t) => el('span', { class: 'tag' }, '#' + t))),
      el('p', { class: 'version-when hint' }, when),
      who ? el('p', { class: 'version-who' }, who) : null,
      el('p', { class: 'content' }, snippet(v.content, 300)),
      v.current ? null : el('button', { type: 'button', class: 'btn btn-small', 'data-action': 'Revert',
        'aria-label': 'Revert to version ' + v.version, onclick: (e) => revertTo(memory, v, e.currentTarget) },
      'Revert to this version'));
  }

  async function revertTo(memory, version, button) {
    clearMessages();
    await run('Revert', button, async () => {
      const ifMatch = state.detail && state.detail.sha256 ? { 'If-Match': '"' + state.detail.sha256 + '"' } : {};
      let result;
      try {
        result = await api('POST', memoryPath(memory.id, 'revert'), { version: version.version, reason: 'reverted from the console' }, ifMatch);
      } catch (error) {
        throw changedElsewhere(error);
      }
      say('Revert', 'Version ' + version.version + ' is back as version ' + result.version + '. ' + (result.explanation || ''));
      renderDetail(result.memory, result.explanation);
      await loadHistory();
      $('history-title').focus();
      await loadMemories(false);
    });
  }

  // ---- ingest files -----------------------------------------------------------------

  /** A file's text, or why it cannot be ingested (checked here: nothing over the limit is sent). */
  async function readTextFile(file) {
    if (file.size === 0) return { problem: 'empty' };
    if (file.size > LIMITS.ingest) return { problem: file.size + ' bytes; the limit is 1 MiB (1048576 bytes)' };
    try {
      const text = new TextDecoder('utf-8', { fatal: true }).decode(await file.arrayBuffer());
      if (text.includes('\u0000')) return { problem: 'not text (it holds NUL bytes)' };
      return { text };
    } catch (_) {
      return { problem: 'not UTF-8 text' };
    }
  }

  function chunkList(result) {
    const total = result.chunks || result.ids.length;
    return el('ol', { class: 'chunk-ids', 'aria-label': 'Chunks' }, result.ids.map((id, i) =>
      el('li', { 'data-id': id },
        el('button', { type: 'button', class: 'btn btn-link', 'aria-label': 'Show chunk ' + (i + 1) + ' of ' + total,
          onclick: (e) => showDetail({ id }, e.currentTarget) }, 'chunk ' + (i + 1) + ' of ' + total),
        ' ', el('code', { class: 'mem-id', title: id }, shortId(id)),
        result.deduplicated && result.deduplicated.includes(id) ? ' (already stored)' : '')));
  }

  async function ingestFiles(files) {
    clearMessages();
    if (!requireProject('Ingest')) return;
    if (!files.length) return refuse('Ingest', 'ingest-files', 'Choose or drop at least one file.');
    const tags = parseTags($('ingest-tags').value);
    const problem = tagsProblem(tags);
    if (problem) return refuse('Ingest', 'ingest-tags', problem);
    const out = $('ingest-results');
    out.replaceChildren();
    let stored = 0;
    for (const [n, file] of files.entries()) {
      $('ingest-progress').textContent = 'Ingesting file ' + (n + 1) + ' of ' + files.length + ': ' + file.name;
      const row = el('li', { 'data-file': file.name }, el('strong', {}, file.name), ' ');
      out.append(row);
      const read = await readTextFile(file);
      if (read.problem) {
        row.append(el('span', { class: 'badge badge-failure' }, 'refused'), ' ' + read.problem + '; not sent.');
        continue;
      }
      const body = { project: state.project, text: read.text, path: file.name.slice(0, 1024),
        pinned: $('ingest-pinned').checked, meta: { author: 'console', source: 'console upload' } };
      if (tags.length) body.tags = tags;
      const envelope = utf8Bytes(JSON.stringify(body));
      if (envelope > LIMITS.body) {  // the text's JSON escapes can make the body longer than the text
        row.append(el('span', { class: 'badge badge-failure' }, 'refused'),
          ' as JSON it is ' + envelope + ' bytes; one request holds at most ' + LIMITS.body + '; not sent.');
        continue;
      }
      await run('Ingest', $('ingest-button'), async () => {
        const result = await api('POST', '/v1/memories/ingest', body);
        stored += 1;
        row.append(el('span', {}, plural(result.chunks, 'chunk', 'chunks') + '. ' + (result.explanation || '')),
          chunkList(result));
      });
      if (!row.querySelector('.chunk-ids') && !row.querySelector('.badge')) {
        row.append(el('span', { class: 'badge badge-failure' }, 'failed'), ' see the error above.');
      }
    }
    $('ingest-progress').textContent = 'Ingested ' + stored + ' of ' + plural(files.length, 'file', 'files') + '.';
    $('ingest-files').value = '';
    if (stored) {
      logActivity('Ingest', $('ingest-progress').textContent, false);
      await Promise.all([loadMemories(false), loadProjects()]);
    }
  }

  function wireDropzone() {
    const zone = $('dropzone');
    const over = (on) => (event) => {
      event.preventDefault();
      zone.classList.toggle('is-over', on);
    };
    zone.addEventListener('dragenter', over(true));
    zone.addEventListener('dragover', over(true));
    zone.addEventListener('dragleave', over(false));
    // A file dropped beside the zone is not opened by the browser in place of the console.
    for (const type of ['dragover', 'drop']) {
      document.addEventListener(type, (event) => { if (!zone.contains(event.target)) event.preventDefault(); });
    }
    zone.addEventListener('drop', (event) => {
      over(false)(event);
      ingestFiles([...((event.dataTransfer && event.dataTransfer.files) || [])]);
    });
    $('ingest-form').addEventListener('submit', (event) => {
      event.preventDefault();
      ingestFiles([...$('ingest-files').files]);
    });
  }

  // ---- project settings -------------------------------------------------------

  function currentInfo() {
    return state.projects.find((p) => p.project === state.project) || null;
  }

  // What a project without a policy of its own does (ProjectSettingsRequest's descriptions).
  const DEFAULT_POLICY = { secrets_policy: 'redact', pii_policy: 'flag' };
  const POLICY_INPUTS = { secrets_policy: 'settings-secrets', pii_policy: 'settings-pii' };

  function renderSettings() {
    const info = currentInfo();
    const input = $('settings-limit');
    if (document.activeElement !== input) input.value = info ? String(info.retention_limit) : '';
    for (const [name, id] of Object.entries(POLICY_INPUTS)) {
      if (document.activeElement !== $(id)) $(id).value = (info && info[name]) || DEFAULT_POLICY[name];
    }
  }

  async function saveSettings(event) {
    event.preventDefault();
    clearMessages();
    if (!requireProject('Settings')) return;
    const info = currentInfo();
    const body = { project: state.project };
    const raw = $('settings-limit').value.trim();
    if (!info || raw !== String(info.retention_limit)) {  // only what changed is sent
      const limit = /^\d+$/.test(raw) ? Number(raw) : NaN;
      if (!(limit >= 1 && limit <= 1000000)) {  // ProjectSettingsRequest.retention_limit
        fail('Settings', new ApiError(0, 'invalid', 'The retention limit is a whole number from 1 to 1,000,000.', null));
        $('settings-limit').focus();
        return;
      }
      body.retention_limit = limit;
    }
    for (const [name, id] of Object.entries(POLICY_INPUTS)) {
      const chosen = $(id).value;
      if (chosen !== ((info && info[name]) || DEFAULT_POLICY[name])) body[name] = chosen;
    }
    if (Object.keys(body).length === 1) {
      say('Settings', 'Nothing changed: the settings shown are the project\'s.');
      return;
    }
    await run('Settings', $('settings-save'), async () => {
      const result = await api('PUT', '/v1/projects/settings', body);
      say('Settings', result.explanation);
      applyProjects(result);
    });
  }

  // ---- solutions (read-only) -----------------------------------------------------

  async function loadSolutions(button, keepMessages) {
    if (!keepMessages) clearMessages();
    await run('Solutions', button, async () => {
      const result = await api('GET', '/v1/solutions?limit=50');
      $('solutions-explanation').textContent = result.explanation || '';
      const list = $('solution-list');
      list.replaceChildren();
      for (const s of result.solutions || []) {
        list.append(el('li', { 'data-id': s.id },
          el('button', { type: 'button', class: 'solution-item', 'aria-label': 'Open solution: ' + s.title,
            onclick: (e) => openSolution(s.id, e.currentTarget) },
          el('span', { class: 'solution-item-title' }, s.title),
          el('span', { class: 'project-item-counts' },
            s.category + ' · ' + plural((s.steps || []).length, 'step', 'steps') + ' · '
            + successText(s.success_count, s.failure_count, s.success_rate)))));
      }
      if (!list.children.length) list.append(el('li', { class: 'empty' }, 'No solutions yet.'));
    });
  }

  function solutionSummary(s) {
    return s.category + (s.component ? ' · ' + s.component : '')
      + ' · ' + successText(s.success_count, s.failure_count, s.success_rate);
  }

  async function openSolution(id, button) {
    clearMessages();
    await run('Solution', button, async () => {
      const result = await api('GET', '/v1/solutions/' + encodeURIComponent(id));
      const s = result.solution;
      state.solution = s;
      $('solution-detail').dataset.id = s.id;
      $('solution-title').textContent = s.title;
      $('solution-summary').textContent = solutionSummary(s);
      $('solution-description').textContent = s.description || '';
      $('solution-steps').replaceChildren(...(s.steps || []).map((step) =>
        el('li', { class: 'step', 'data-kind': step.kind },
          el('span', { class: 'badge' }, step.kind), ' ',
          step.description ? el('span', {}, step.description + ' ') : null,
          stepBody(step))));
      $('solution-checks').replaceChildren(...(s.checks || []).map((check) =>
        el('li', { class: 'step' }, el('code', {}, check.cmd),
          check.expect_substring ? ' expects "' + check.expect_substring + '"' : '',
          typeof check.expect_exit_code === 'number' ? ' expects exit ' + check.expect_exit_code : '')));
      $('solution-delete-confirm-box').hidden = true;
      $('solution-detail').hidden = false;
      $('solution-title').focus();
    });
  }

  // ---- fixpack import, outcomes ------------------------------------------------------

  async function importFixpack(event) {
    event.preventDefault();
    clearMessages();
    const file = $('import-file').files[0];
    if (!file) return refuse('Import', 'import-file', 'Choose a fixpack file.');
    if (file.size > LIMITS.body) return refuse('Import', 'import-file', 'The file is ' + file.size + ' bytes; the limit is 1 MiB.');
    const read = await readTextFile(file);
    if (read.problem) return refuse('Import', 'import-file', 'The file is ' + read.problem + '.');
    let fixpack;
    try {
      fixpack = JSON.parse(read.text);
    } catch (exc) {
      return refuse('Import', 'import-file', 'The file is not JSON: ' + exc.message);
    }
    if (!fixpack || typeof fixpack !== 'object' || Array.isArray(fixpack)) {
      return refuse('Import', 'import-file', 'A fixpack file holds one JSON object (one solution).');
    }
    await run('Import', $('import-button'), async () => {
      const result = await api('POST', '/v1/solutions/import', fixpack);
      const kept = (result.kept_fields || []).length ? ' Kept as written: ' + result.kept_fields.join(', ') + '.' : '';
      $('import-file').value = '';
      await loadSolutions(null, true);
      await openSolution(result.solution.id, null);
      say('Import', (result.explanation || '') + kept);  // after the opening, which clears the last message
    });
  }

  async function applySolution(event) {
    event.preventDefault();
    clearMessages();
    const s = state.solution;
    if (!s) return;
    const picked = $('apply-worked').checked ? true : $('apply-failed').checked ? false : null;
    if (picked === null) return refuse('Outcome', 'apply-worked', 'Say whether applying it worked or failed.');
    const body = { success: picked };
    const error = $('apply-error').value.trim();
    if (error) body.error = error;
    const context = $('apply-context').value.trim();
    if (context) body.context = context;
    const tag = $('apply-pattern').value.trim();
    if (tag) body.pattern = { tag, category: s.category };
    if ($('apply-project').checked && state.project) body.project = state.project;
    await run('Outcome', $('apply-button'), async () => {
      const result = await api('POST', '/v1/solutions/' + encodeURIComponent(s.id) + '/apply', body);
      state.solution = result.solution;
      $('solution-summary').textContent = solutionSummary(result.solution);
      await loadSolutions(null, true);  // the list's success rate too
      say('Outcome', result.explanation);
      for (const id of ['apply-worked', 'apply-failed']) $(id).checked = false;
      for (const id of ['apply-error', 'apply-context']) $(id).value = '';
    });
  }

  // ---- patterns and golden paths -------------------------------------------------------

  function linkedText(link) {
    return link.title + ' (' + link.success + ' worked, ' + link.failure + ' failed, '
      + Math.round(100 * (link.success_rate || 0)) + '%)';
  }

  function patternItem(p, extra) {
    return el('li', { 'data-tag': p.tag },
      el('strong', {}, p.tag), ' ', el('span', { class: 'badge' }, p.category), ' ',
      el('span', { class: 'hint' }, plural(p.occurrences, 'occurrence', 'occurrences')
        + (p.projects && p.projects.length ? ' in ' + p.projects.join(', ') : '')),
      p.description ? el('p', { class: 'content' }, p.description) : null,
      extra || null);
  }

  async function detectPatterns(event) {
    event.preventDefault();
    clearMessages();
    const error = $('detect-error').value.trim();
    if (!error) return refuse('Patterns', 'detect-error', 'Paste the error to match.');
    const body = { error };
    const category = $('detect-category').value.trim();
    if (category) body.category = category;
    await run('Patterns', $('detect-button'), async () => {
      const result = await api('POST', '/v1/patterns/detect', body);
      $('patterns-explanation').textContent = result.explanation || '';
      $('golden-list').replaceChildren();
      $('pattern-list').replaceChildren(...(result.results || []).map((m) => patternItem(m.pattern,
        el('p', { class: 'hint' }, 'score ' + fixed(m.score) + ' (meaning ' + fixed(m.components.vector)
          + ', terms ' + fixed(m.components.terms) + ')'
          + ((m.matched_terms || []).length ? ' · matched: ' + m.matched_terms.join(', ') : '')
          + ((m.solutions || []).length ? ' · fixes: ' + m.solutions.map(linkedText).join('; ') : '')))));
      if (!$('pattern-list').children.length) $('pattern-list').append(el('li', { class: 'empty' }, 'No pattern matched.'));
    });
  }

  async function minePatterns(button) {
    clearMessages();
    await run('Mine', button, async () => {
      const result = await api('POST', '/v1/patterns/mine', { min_occurrences: 2, k: 20 });
      say('Mine', result.explanation);
      $('patterns-explanation').textContent = result.explanation || '';
      $('golden-list').replaceChildren();
      $('pattern-list').replaceChildren(...(result.patterns || []).map((p) => patternItem(p)));
      if (!$('pattern-list').children.length) $('pattern-list').append(el('li', { class: 'empty' }, 'No patterns found.'));
    });
  }

  async function goldenPaths(event) {
    event.preventDefault();
    clearMessages();
    const raw = $('golden-min').value.trim();
    if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 1000000) {
      return refuse('Golden paths', 'golden-min', 'Applied at least is a whole number from 1 to 1,000,000.');
    }
    const params = new URLSearchParams({ min_applications: raw, k: '20' });
    const category = $('golden-category').value.trim();
    if (category) params.set('category', category);
    await run('Golden paths', $('golden-button'), async () => {
      const result = await api('GET', '/v1/patterns/golden-paths?' + params.toString());
      $('patterns-explanation').textContent = result.explanation || '';
      $('pattern-list').replaceChildren();
      $('golden-list').replaceChildren(...(result.paths || []).map((g) => patternItem(g.pattern,
        el('p', { class: 'golden' }, '→ ' + (g.solution ? g.solution.title : g.fix ? 'the fix in ' + snippet(g.fix.content, 60) : 'no fix') + ': '
          + successText(g.success, g.failure, g.success_rate) + ' for this pattern'))));
      if (!$('golden-list').children.length) $('golden-list').append(el('li', { class: 'empty' }, 'No golden paths yet.'));
    });
  }

  // ---- API keys of the local gateway (functions.keys_api) -----------------------------

  const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
  const KEY_SHOWN = new Set(['name', 'tenant', 'created_at', 'scope', 'scope_text']);

  /** A key's scope in one line, as capsule keys list prints it (the gateway says it: scope_text). */
  function scopeText(key) {
    if (key.scope_text) return key.scope_text;
    return key.scope && Object.keys(key.scope).length ? JSON.stringify(key.scope) : 'full';
  }

  function keyItem(key) {
    // Fields the gateway may add beside these are shown as they come.
    const extra = Object.entries(key).filter(([k]) => !KEY_SHOWN.has(k))
      .map(([k, v]) => k + ': ' + (Array.isArray(v) ? v.join(', ') : typeof v === 'object' ? JSON.stringify(v) : v));
    const revoke = el('button', { type: 'button', class: 'btn btn-small btn-danger', 'data-action': 'Revoke',
      'aria-label': 'Revoke key ' + key.name }, 'Revoke');
    const row = el('li', { 'data-name': key.name },
      el('strong', {}, key.name), ' ', el('span', { class: 'badge' }, 'tenant ' + key.tenant), ' ',
      el('span', { class: 'hint' }, 'made ' + (key.created_at || '?')),
      el('p', { class: 'key-scope-text', 'data-scope': JSON.stringify(key.scope || {}) }, 'scope: ' + scopeText(key)),
      extra.length ? el('p', { class: 'hint key-extra' }, extra.join(' · ')) : null,
      el('div', { class: 'actions' }, revoke));
    revoke.addEventListener('click', () => askRevoke(key, row));
    return row;
  }

  function askRevoke(key, row) {
    clearMessages();
    const bar = row.querySelector('.actions');
    const keep = [...bar.childNodes];
    const confirm = el('button', { type: 'button', class: 'btn btn-small btn-danger', 'data-action': 'Confirm revoke',
      'aria-label': 'Confirm revoking key ' + key.name }, 'Confirm revoke');
    const cancel = el('button', { type: 'button', class: 'btn btn-small', 'aria-label': 'Keep key ' + key.name }, 'Cancel');
    cancel.addEventListener('click', () => { bar.replaceChildren(...keep); keep[0].focus(); });
    confirm.addEventListener('click', () => revokeKey(key, confirm));
    bar.replaceChildren(el('span', { class: 'confirm-text', role: 'status' },
      'Revoke ' + key.name + '? Requests with it get 401 at once; this cannot be undone.'), confirm, cancel);
    confirm.focus();
  }

  async function loadKeys(button, keepMessages) {
    if (!keepMessages) clearMessages();
    await run('Keys', button, async () => {
      const result = await api('GET', '/v1/keys');
      $('keys-explanation').textContent = result.explanation || '';
      loadWhoami();
      const list = $('key-list');
      list.replaceChildren(...(result.keys || []).map(keyItem));
      if (!list.children.length) list.append(el('li', { class: 'empty' }, 'No API keys yet.'));
    });
  }

  /** The new key's scope (the shape of PUT /v1/scopes/principals' scope): only what differs from full access. */
  function scopeFromForm() {
    const scope = {};
    if ($('key-access').value !== 'admin') scope.access = $('key-access').value;
    const projects = parseTags($('key-projects').value);
    if (projects.length) scope.projects = projects;
    const subjects = parseTags($('key-subjects').value);
    if (subjects.length) scope.subjects = subjects;
    if ($('key-sees').value !== 'private') scope.sees = $('key-sees').value;
    return scope;
  }

  function resetScopeForm() {
    $('key-access').value = 'admin';
    $('key-projects').value = '';
    $('key-subjects').value = '';
    $('key-sees').value = 'private';
  }

  async function createKey(event) {
    event.preventDefault();
    clearMessages();
    $('new-key-box').hidden = true;
    $('new-key').value = '';
    const name = $('key-name').value.trim();
    if (!KEY_NAME.test(name)) {
      return refuse('Create key', 'key-name', 'A key name is 1 to 64 letters, digits, _ . or -, starting with a letter or digit.');
    }
    const body = { name };
    const tenant = $('key-tenant').value.trim();
    if (tenant) body.tenant = tenant;
    const scopes = scopeFromForm();
    if (Object.keys(scopes).length) body.scopes = scopes;
    await run('Create key', $('key-create'), async () => {
      const result = await api('POST', '/v1/keys', body);
      $('new-key').value = result.key;
      $('copy-key').textContent = 'Copy key';
      $('new-key-box').hidden = false;
      $('key-name').value = '';
      resetScopeForm();
      say('Create key', result.explanation);
      await loadKeys(null, true);
      $('new-key').focus();
      $('new-key').select();
    });
  }

  async function revokeKey(key, button) {
    await run('Revoke key', button, async () => {
      const result = await api('DELETE', '/v1/keys/' + encodeURIComponent(key.name));
      say('Revoke key', result.explanation);
      await loadKeys(null, true);
      $('keys-title').focus();
    });
  }

  // ---- dashboard ------------------------------------------------------------------

  const SVG_NS = 'http://www.w3.org/2000/svg';

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    return node;
  }

  /** One horizontal bar per project (held memories, the pinned share darker); text for screen readers. */
  function renderDashboard() {
    const projects = state.projects.slice(0, 12);
    const box = $('dashboard-chart');
    if (!projects.length) {
      box.replaceChildren(el('p', { class: 'empty' }, 'No projects yet.'));
      return;
    }
    const most = Math.max(1, ...projects.map((p) => p.memories));
    const rowH = 26;
    const width = 320;
    const labelW = 120;
    // The picture is for eyes; the same numbers as a list are for screen readers (and tests).
    const text = el('ul', { class: 'sr-only', id: 'dashboard-text' }, projects.map((p) =>
      el('li', {}, p.project + ': ' + plural(p.memories, 'memory', 'memories') + ', ' + p.pinned + ' pinned')));
    const chart = svg('svg', { viewBox: '0 0 ' + width + ' ' + (rowH * projects.length), 'aria-hidden': 'true',
      class: 'bars' });
    projects.forEach((p, i) => {
      const y = i * rowH;
      const full = ((width - labelW - 40) * p.memories) / most;
      const pinned = ((width - labelW - 40) * Math.min(p.pinned, p.memories)) / most;
      chart.append(
        svg('text', { x: 0, y: y + 17, class: 'bar-label' }, snippet(p.project, 18)),
        svg('rect', { x: labelW, y: y + 5, width: full.toFixed(1), height: 16, class: 'bar-all', 'data-project': p.project }),
        svg('rect', { x: labelW, y: y + 5, width: pinned.toFixed(1), height: 16, class: 'bar-pinned' }),
        svg('text', { x: labelW + full + 4, y: y + 17, class: 'bar-value' }, String(p.memories)));
    });
    box.replaceChildren(chart, text);
  }

  // ---- trends: small charts over time ------------------------------------------------

  function recordLatency(ms) {
    state.latencies = [...state.latencies, { at: new Date().toISOString(), ms: Math.round(ms) }].slice(-MAX_LATENCIES);
    sessionStorage.setItem(LATENCY_KEY, JSON.stringify(state.latencies));
    if ($('charts').childElementCount) drawLatency();
  }

  const dayOf = (iso) => String(iso).slice(0, 10);

  /** Cumulative memories held per day they were stored: [[day, count], ...] (pure). */
  function growth(memories) {
    const perDay = new Map();
    for (const m of memories) perDay.set(dayOf(m.created_at), (perDay.get(dayOf(m.created_at)) || 0) + 1);
    let total = 0;
    return [...perDay.keys()].sort().map((day) => [day, (total += perDay.get(day))]);
  }

  /** A line chart of series [{name, points: [[x number, y number]]}], axes from 0; aria-hidden. */
  function lineChart(series, opts) {
    const W = 300;
    const H = 140;
    const pad = { l: 34, r: 8, t: 8, b: 20 };
    const xs = series.flatMap((s) => s.points.map((p) => p[0]));
    const ys = series.flatMap((s) => s.points.map((p) => p[1]));
    const x0 = Math.min(...xs);
    const x1 = Math.max(...xs);
    const top = Math.max(1, ...ys);
    const sx = (x) => pad.l + (x1 === x0 ? (W - pad.l - pad.r) / 2 : ((x - x0) * (W - pad.l - pad.r)) / (x1 - x0));
    const sy = (y) => H - pad.b - (y * (H - pad.t - pad.b)) / top;
    const chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, 'aria-hidden': 'true', class: 'line-chart' },
      svg('line', { x1: pad.l, y1: H - pad.b, x2: W - pad.r, y2: H - pad.b, class: 'axis' }),
      svg('line', { x1: pad.l, y1: pad.t, x2: pad.l, y2: H - pad.b, class: 'axis' }),
      svg('text', { x: 2, y: pad.t + 8, class: 'chart-note' }, String(Math.round(top))),
      svg('text', { x: 2, y: H - pad.b, class: 'chart-note' }, '0'),
      svg('text', { x: pad.l, y: H - 4, class: 'chart-note' }, opts.from),
      svg('text', { x: W - pad.r, y: H - 4, class: 'chart-note', 'text-anchor': 'end' }, opts.to));
    series.forEach((s, i) => {
      const d = s.points.map((p, j) => (j ? 'L' : 'M') + sx(p[0]).toFixed(1) + ' ' + sy(p[1]).toFixed(1)).join(' ');
      chart.append(svg('path', { d, class: 'line series-' + (i % 5), 'data-series': s.name }));
      for (const p of s.points) {
        chart.append(svg('circle', { cx: sx(p[0]).toFixed(1), cy: sy(p[1]).toFixed(1), r: 2.5, class: 'series-' + (i % 5) }));
      }
    });
    return chart;
  }

  /** Horizontal bars of [{label, value in [0,1], text}] (a share each); aria-hidden. */
  function shareBars(rows) {
    const W = 300;
    const rowH = 22;
    const labelW = 120;
    const chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + Math.max(rowH, rowH * rows.length), 'aria-hidden': 'true',
      class: 'bars' });
    rows.forEach((r, i) => {
      const y = i * rowH;
      const width = ((W - labelW - 44) * Math.max(0, Math.min(1, r.value)));
      chart.append(
        svg('text', { x: 0, y: y + 15, class: 'bar-label' }, snippet(r.label, 18)),
        svg('rect', { x: labelW, y: y + 4, width: (W - labelW - 44).toFixed(1), height: 14, class: 'bar-track' }),
        svg('rect', { x: labelW, y: y + 4, width: width.toFixed(1), height: 14, class: 'bar-all', 'data-label': r.label }),
        svg('text', { x: W - 40, y: y + 15, class: 'bar-value' }, Math.round(100 * r.value) + '%'));
    });
    return chart;
  }

  /** One chart with its caption, a legend, and the same numbers as a list for screen readers. */
  function figure(id, caption, picture, lines, legend) {
    return el('figure', { id, 'aria-labelledby': id + '-caption' },
      el('figcaption', { id: id + '-caption' }, caption),
      picture,
      legend ? el('ul', { class: 'legend', 'aria-hidden': 'true' }, legend.map((name, i) =>
        el('li', {}, el('span', { class: 'swatch series-' + (i % 5) }), snippet(name, 28)))) : null,
      el('ul', { class: 'sr-only chart-text', id: id + '-text' }, lines.map((line) => el('li', {}, line))));
  }

  const emptyFigure = (id, caption, text) => el('figure', { id }, el('figcaption', {}, caption), el('p', { class: 'empty' }, text));

  async function projectMemories(project) {
    const out = [];
    let cursor = null;
    for (let page = 0; page < CHART_PAGES; page += 1) {
      const params = new URLSearchParams({ project, limit: '100' });
      if (cursor) params.set('cursor', cursor);
      const result = await api('GET', '/v1/memories?' + params.toString());
      out.push(...(result.memories || []));
      cursor = result.next_cursor;
      if (!cursor) return { memories: out, complete: true };
    }
    return { memories: out, complete: false };
  }

  function growthFigure(perProject) {
    const series = perProject.filter((p) => p.memories.length).map((p) => ({
      name: p.project, complete: p.complete,
      points: growth(p.memories).map(([day, n]) => [Date.parse(day + 'T00:00:00Z'), n]), days: growth(p.memories),
    }));
    if (!series.length) return emptyFigure('chart-growth', 'Memories over time', 'No memories yet.');
    const days = series.flatMap((s) => s.days.map((d) => d[0])).sort();
    const lines = series.map((s) => s.name + ': ' + s.days.map(([day, n]) => plural(n, 'memory', 'memories') + ' by ' + day)
      .join(', ') + (s.complete ? '' : ' (the newest ' + (CHART_PAGES * 100) + ' only)'));
    return figure('chart-growth', 'Memories over time (held now, by the day stored)',
      lineChart(series, { from: days[0], to: days[days.length - 1] }), lines, series.map((s) => s.name));
  }

  function feedbackFigure(perProject) {
    const rows = perProject.map((p) => {
      const up = p.memories.reduce((n, m) => n + (m.helpful || 0), 0);
      const down = p.memories.reduce((n, m) => n + (m.unhelpful || 0), 0);
      return { label: p.project, up, down, value: up + down ? up / (up + down) : 0 };
    }).filter((r) => r.up + r.down > 0);
    if (!rows.length) return emptyFigure('chart-feedback', 'Feedback', 'No votes yet.');
    return figure('chart-feedback', 'Feedback: share of votes that said helpful', shareBars(rows),
      rows.map((r) => r.label + ': ' + r.up + ' helpful, ' + r.down + ' not helpful (' + Math.round(100 * r.value) + '% helpful)'));
  }

  function solutionsFigure(solutions) {
    // The bars are the API's rate (the lower bound), the same number the list and the detail give.
    const rows = solutions.filter((s) => s.success_count + s.failure_count > 0).slice(0, 10).map((s) => ({
      label: s.title, text: successText(s.success_count, s.failure_count, s.success_rate), value: s.success_rate || 0,
    }));
    if (!rows.length) return emptyFigure('chart-solutions', 'Solution success', 'No outcomes recorded yet.');
    return figure('chart-solutions', 'Solution success (lower bound of the share that worked)', shareBars(rows),
      rows.map((r) => r.label + ': ' + r.text));
  }

  function latencyFigure() {
    const seen = state.latencies;
    if (!seen.length) return emptyFigure('chart-latency', 'Search latency', 'No searches from this tab yet.');
    const sorted = seen.map((l) => l.ms).sort((a, b) => a - b);
    const median = sorted[Math.floor((sorted.length - 1) / 2)];
    return figure('chart-latency', 'Search latency seen by this tab (ms, round trip; median ' + median + ')',
      lineChart([{ name: 'search', points: seen.map((l, i) => [i + 1, l.ms]) }], { from: 'search 1', to: 'search ' + seen.length }),
      seen.map((l, i) => 'search ' + (i + 1) + ': ' + l.ms + ' ms'));
  }

  function drawLatency() {
    const old = $('chart-latency');
    if (old) old.replaceWith(latencyFigure());
  }

  async function renderCharts(button) {
    // The open project, then the largest others.
    const biggest = [...state.projects].filter((p) => p.memories > 0)
      .sort((a, b) => (b.project === state.project) - (a.project === state.project) || b.memories - a.memories)
      .slice(0, CHART_PROJECTS);
    await run('Charts', button, async () => {
      const perProject = [];
      for (const p of biggest) perProject.push({ project: p.project, ...(await projectMemories(p.project)) });
      const solutions = (await api('GET', '/v1/solutions?limit=100')).solutions || [];
      $('charts').replaceChildren(growthFigure(perProject), latencyFigure(), feedbackFigure(perProject),
        solutionsFigure(solutions));
    });
  }

  // ---- one fact, one form: a solution's success ------------------------------------------------

  /** A success count and its rate, said the same way in the list, the detail, golden paths and the
   * charts: "4 of 4 succeeded; 51% lower bound" (the API's rate is the Wilson lower bound), or
   * "never applied" when no outcome was recorded (never "0%"). */
  function successText(worked, failed, rate) {
    const ok = Number(worked) || 0;
    const tried = ok + (Number(failed) || 0);
    if (!tried) return 'never applied';
    return ok + ' of ' + tried + ' succeeded; ' + Math.round(100 * (Number(rate) || 0)) + '% lower bound';
  }

  function successBadge(worked, failed, rate) {
    return el('span', { class: 'success-rate' }, successText(worked, failed, rate));
  }

  // ---- solution steps, rendered by kind ----------------------------------------------------------

  function diffLines(text) {
    return String(text).split('\n').map((line) => {
      const kind = line.startsWith('@@') ? 'diff-hunk' : line.startsWith('+') && !line.startsWith('+++') ? 'diff-add'
        : line.startsWith('-') && !line.startsWith('---') ? 'diff-del' : null;
      return el('span', { class: kind || 'diff-line' }, line + '\n');
    });
  }

  /** A step's body by its kind: a command as a command, a patch as a diff, the rest as its fields. */
  function stepBody(step) {
    const p = step.payload || {};
    const str = (v) => (typeof v === 'string' ? v : null);
    const command = str(p.command) || str(p.run) || (step.kind === 'script' ? str(p.script) : null);
    if ((step.kind === 'cmd' || step.kind === 'script') && command !== null) {
      const where = str(p.cwd) ? el('span', { class: 'hint' }, 'in ' + p.cwd) : null;
      return [el('pre', { class: 'step-body', 'data-render': step.kind }, el('code', { class: 'cmd' }, command)), where];
    }
    if (step.kind === 'patch') {
      if (str(p.diff) !== null) {
        return [el('pre', { class: 'step-body', 'data-render': 'diff' },
          el('code', { class: 'diff' }, str(p.file) ? '--- ' + p.file + '\n' : '', diffLines(p.diff)))];
      }
      const minus = String(p.search ?? '').split('\n').map((l) => '-' + l).join('\n');
      const plus = String(p.replace ?? '').split('\n').map((l) => '+' + l).join('\n');
      return [el('pre', { class: 'step-body', 'data-render': 'diff' },
        el('code', { class: 'diff' }, diffLines('--- ' + (p.file || '?') + '\n+++ ' + (p.file || '?') + '\n' + minus + '\n' + plus)))];
    }
    if (step.kind === 'copy') {
      const from = p.from || p.src;
      const to = p.to || p.dst;
      return [el('pre', { class: 'step-body', 'data-render': 'copy' }, el('code', {}, 'copy ' + from + ' → ' + to))];
    }
    if (step.kind === 'env') {
      const pairs = p.set && typeof p.set === 'object' ? Object.entries(p.set) : [[p.key || p.variable, p.value]];
      return [el('pre', { class: 'step-body', 'data-render': 'env' },
        el('code', {}, pairs.map(([k, v]) => k + '=' + v).join('\n') + (p.file ? '\n# in ' + p.file : '')))];
    }
    return [el('pre', { class: 'step-body', 'data-render': 'fields' }, el('code', {}, JSON.stringify(p, null, 2)))];
  }

  // ---- views and their addresses (hash routing) ------------------------------------------------

  const VIEWS = ['memories', 'search', 'projects', 'solutions', 'patterns', 'capture', 'activity', 'usage', 'keys',
    'settings', 'transfer', 'sync'];
  const DEFAULT_VIEW = 'projects';

  function parseHash() {
    if (location.hash && !location.hash.startsWith('#/')) {
      // Not a view's address (an in-page anchor): stay where we are.
      return { view: shownView || DEFAULT_VIEW, params: new URLSearchParams() };
    }
    const raw = location.hash.replace(/^#\/?/, '');
    const at = raw.indexOf('?');
    const name = at < 0 ? raw : raw.slice(0, at);
    return { view: VIEWS.includes(name) ? name : DEFAULT_VIEW, params: new URLSearchParams(at < 0 ? '' : raw.slice(at + 1)) };
  }

  function hashOf(view, params) {
    const query = params ? params.toString() : '';
    return '#/' + view + (query ? '?' + query : '');
  }

  /** Go to a view (a new entry in the history, so Back returns). */
  function go(view, params) {
    const hash = hashOf(view, params);
    if (location.hash === hash) route();
    else location.hash = hash;
  }

  function showView(view) {
    for (const node of document.querySelectorAll('.view')) node.hidden = node.dataset.view !== view;
    for (const link of document.querySelectorAll('.nav-link')) {
      if (link.dataset.nav === view) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    const title = $('view-' + view + '-title');
    document.title = (title ? title.textContent + ' · ' : '') + 'Capsule Memory console';
  }

  let shownView = null;

  async function route() {
    if (!state.token || $('workspace').hidden) return;
    const { view, params } = parseHash();
    const changed = view !== shownView;
    shownView = view;
    showView(view);
    if (changed && document.activeElement && document.activeElement.classList.contains('nav-link')) {
      $('view-' + view + '-title').focus();
    }
    const project = params.get('project');
    if (project && project !== state.project) await openProject(project);
    if (view === 'memories') await enterTable(params, changed);
    else if (view === 'activity') await enterAudit(params, changed);
    else if (view === 'usage') await enterUsage(params);
    else if (view === 'sync' && changed) await loadSync(null);
    else if (view === 'projects' && params.get('memory')) await openMemoryFromAddress(params.get('memory'));
    else if (view === 'solutions' && !$('solution-list').children.length) await loadSolutions(null, true);
    else if (view === 'keys' && !$('key-list').children.length) await loadKeys(null, true);
  }

  // ---- the memory table ------------------------------------------------------------------------

  const table = {
    key: null, params: null, cursors: [null], page: 0, next: null, rows: [], open: new Set(), selected: new Map(),
  };
  const TABLE_FILTERS = [['table-pinned', 'pinned'], ['table-class', 'class'], ['table-tag', 'tag'], ['table-who', 'who'],
    ['table-since', 'since'], ['table-until', 'until'], ['table-limit', 'limit']];
  const SORTS = {
    created_at: (m) => m.created_at,
    content: (m) => String(m.content).toLowerCase(),
    tags: (m) => ((m.meta || {}).tags || []).join(',').toLowerCase(),
    class: (m) => m.effective_retention || m.retention || '',
    pinned: (m) => (m.pinned ? 1 : 0),
    votes: (m) => (m.helpful || 0) - (m.unhelpful || 0),
  };

  function tableParamsFromForm() {
    const params = new URLSearchParams();
    const project = $('table-project').value || state.project;
    if (project) params.set('project', project);
    for (const [id, name] of TABLE_FILTERS) {
      const value = $(id).value.trim();
      if (value && !(name === 'limit' && value === '20')) params.set(name, value);
    }
    const current = parseHash().params;
    for (const name of ['sort', 'dir']) if (current.get(name)) params.set(name, current.get(name));
    return params;
  }

  function fillTableForm(params) {
    const select = $('table-project');
    const names = state.projects.map((p) => p.project);
    const project = params.get('project') || state.project;
    if (project && !names.includes(project)) names.unshift(project);
    select.replaceChildren(...names.map((n) => el('option', { value: n, selected: n === project }, n)));
    if (!names.length) select.append(el('option', { value: '' }, 'no projects yet'));
    for (const [id, name] of TABLE_FILTERS) $(id).value = params.get(name) || (name === 'limit' ? '20' : '');
  }

  /** What asks the API again (not the sort, which orders the page shown). */
  function tableKey(params) {
    const copy = new URLSearchParams(params);
    copy.delete('sort');
    copy.delete('dir');
    copy.sort();
    return copy.toString();
  }

  /** Show the table for these parameters; read again when they changed or the view was just opened
   * (what other views stored or forgot meanwhile shows). */
  async function enterTable(params, opened) {
    fillTableForm(params);
    const key = tableKey(params);
    table.params = params;
    if (key !== table.key || opened) {
      table.key = key;
      table.cursors = [null];
      table.page = 0;
      table.selected.clear();
      table.open.clear();
      await loadTablePage();
    } else {
      renderTable();
    }
  }

  function utcMs(local) {
    return local ? Date.parse(local + (local.length === 16 ? ':00' : '') + 'Z') : null;
  }

  /** The narrowing the API cannot do: tag, agent/session/source, time. */
  function keepRow(memory, params) {
    const meta = memory.meta || {};
    const tag = (params.get('tag') || '').toLowerCase();
    if (tag && !(meta.tags || []).some((t) => String(t).toLowerCase() === tag)) return false;
    const who = (params.get('who') || '').toLowerCase();
    if (who) {
      const fields = ['agent', 'author', 'session', 'session_id', 'source', 'client'].map((k) => meta[k])
        .filter((v) => typeof v === 'string').map((v) => v.toLowerCase());
      if (!fields.some((v) => v.includes(who))) return false;
    }
    const at = Date.parse(memory.created_at);
    const since = utcMs(params.get('since'));
    const until = utcMs(params.get('until'));
    if (since !== null && at < since) return false;
    if (until !== null && at >= until) return false;
    return true;
  }

  async function loadTablePage() {
    const params = table.params;
    const project = params.get('project') || state.project;
    if (!project) {
      table.rows = [];
      renderTable();
      $('table-explanation').textContent = 'Choose or type a project first.';
      return;
    }
    const query = new URLSearchParams({ project, limit: params.get('limit') || '20' });
    if (params.get('pinned')) query.set('pinned_only', 'true');
    if (params.get('class')) query.set('retention', params.get('class'));
    const cursor = table.cursors[table.page];
    if (cursor) query.set('cursor', cursor);
    const ticket = ++latest.table;
    await run('Memory table', null, async () => {
      const result = await api('GET', '/v1/memories?' + query.toString());
      if (ticket !== latest.table) return;
      table.rows = (result.memories || []).filter((m) => keepRow(m, params));
      table.fetched = (result.memories || []).length;
      table.next = result.next_cursor || null;
      table.cursors[table.page + 1] = table.next;
      $('table-explanation').textContent = result.explanation || '';
      renderTable();
    });
  }

  function sortedRows() {
    const params = table.params || new URLSearchParams();
    const sort = SORTS[params.get('sort')] ? params.get('sort') : 'created_at';
    const dir = params.get('dir') === 'asc' ? 1 : -1;
    const pick = SORTS[sort];
    const rows = [...table.rows];
    rows.sort((a, b) => (pick(a) < pick(b) ? -1 : pick(a) > pick(b) ? 1 : 0) * dir);
    for (const th of document.querySelectorAll('#mem-table th[data-col]')) {
      th.setAttribute('aria-sort', th.dataset.col === sort ? (dir === 1 ? 'ascending' : 'descending') : 'none');
    }
    return rows;
  }

  function rowDetail(m) {
    const meta = m.meta || {};
    const fields = [['id', m.id], ['project', m.project], ['created', m.created_at], ['occurred', m.occurred_at],
      ['updated', m.updated_at], ['class', (m.effective_retention || '') + (m.retention && m.retention !== 'auto' ? ' (set)' : '')],
      ['visibility', m.visibility], ['subject', m.subject], ['path', m.path],
      ['chunk', m.chunk ? (m.chunk.index + 1) + ' of ' + m.chunk.of : null], ['expires', m.expires_at],
      ['votes', '▲ ' + (m.helpful || 0) + '  ▼ ' + (m.unhelpful || 0)]];
    for (const [k, v] of Object.entries(meta)) {
      if (k !== 'tags') fields.push(['meta.' + k, typeof v === 'string' ? v : JSON.stringify(v)]);
    }
    return el('tr', { class: 'row-detail', 'data-detail-for': m.id },
      el('td', {}), el('td', { colspan: '6' },
        el('pre', { class: 'row-content' }, m.content),
        el('dl', {}, fields.filter(([, v]) => v !== null && v !== undefined && v !== '')
          .flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, String(v))]))));
  }

  function renderTable() {
    const body = $('table-body');
    body.replaceChildren();
    for (const m of sortedRows()) {
      const selected = table.selected.has(m.id);
      const open = table.open.has(m.id);
      const check = el('input', { type: 'checkbox', 'aria-label': 'Select row ' + shortId(m.id), checked: selected,
        'data-action': 'select' });
      check.addEventListener('change', () => {
        if (check.checked) table.selected.set(m.id, m);
        else table.selected.delete(m.id);
        renderTable();
      });
      const toggle = el('button', { type: 'button', class: 'row-toggle', 'aria-expanded': String(open),
        title: 'Show the whole memory' }, snippet(m.content, 160));
      toggle.addEventListener('click', () => {
        if (table.open.has(m.id)) table.open.delete(m.id);
        else table.open.add(m.id);
        renderTable();
        const again = body.querySelector('tr[data-id="' + CSS.escape(m.id) + '"] .row-toggle');
        if (again) again.focus();
      });
      body.append(el('tr', { 'data-id': m.id, class: selected ? 'is-selected' : null },
        el('td', { class: 'col-select' }, check),
        el('td', { class: 'col-when' }, el('time', { datetime: m.created_at, title: m.created_at }, whenText(m.created_at))),
        el('td', { class: 'col-content' }, toggle),
        el('td', { class: 'col-tags' }, ((m.meta || {}).tags || []).map((t) => el('span', { class: 'tag' }, '#' + t + ' '))),
        el('td', { class: 'col-class' }, m.effective_retention || m.retention || ''),
        el('td', { class: 'col-pinned' }, m.pinned ? el('span', { class: 'badge badge-pin' }, 'Pinned') : ''),
        el('td', { class: 'col-votes' }, '▲ ' + (m.helpful || 0) + ' ▼ ' + (m.unhelpful || 0))));
      if (open) body.append(rowDetail(m));
    }
    $('table-empty').hidden = table.rows.length > 0;
    const pageIds = table.rows.map((m) => m.id);
    const all = $('table-select-all');
    all.checked = pageIds.length > 0 && pageIds.every((id) => table.selected.has(id));
    all.indeterminate = !all.checked && pageIds.some((id) => table.selected.has(id));
    const count = table.selected.size;
    $('table-selected').textContent = count + ' selected';
    for (const id of ['bulk-pin', 'bulk-unpin', 'bulk-export', 'bulk-forget', 'bulk-clear']) $(id).disabled = count === 0;
    $('table-prev').disabled = table.page === 0;
    $('table-next').disabled = !table.next;
    $('table-page').textContent = 'Page ' + (table.page + 1) + ' · ' + plural(table.rows.length, 'row', 'rows')
      + (table.fetched !== undefined && table.fetched !== table.rows.length ? ' of ' + table.fetched + ' read' : '');
  }

  function sortBy(column) {
    const params = new URLSearchParams(parseHash().params);
    const same = (params.get('sort') || 'created_at') === column;
    const dir = same ? (params.get('dir') === 'asc' ? 'desc' : 'asc') : (column === 'created_at' ? 'desc' : 'asc');
    params.set('sort', column);
    params.set('dir', dir);
    go('memories', params);
  }

  async function bulk(operation, button, action) {
    clearMessages();
    const chosen = [...table.selected.values()];
    let done = 0;
    await run(operation, button, async () => {
      for (const m of chosen) {
        await api('POST', memoryPath(m.id, action));
        done += 1;
      }
    });
    say(operation, done + ' of ' + chosen.length + ' selected memories ' + (action === 'pin' ? 'pinned' : 'unpinned') + '.');
    await loadTablePage();
  }

  function askBulkForget() {
    $('bulk-confirm-text').textContent = 'Forget ' + plural(table.selected.size, 'memory', 'memories')
      + '? Each can be restored for 30 days.';
    $('bulk-confirm').hidden = false;
    $('bulk-forget-confirm').focus();
  }

  async function bulkForget(button) {
    clearMessages();
    const chosen = [...table.selected.values()];
    let done = 0;
    await run('Forget selected', button, async () => {
      for (const m of chosen) {
        await api('DELETE', memoryPath(m.id));
        rememberForgotten(m);
        table.selected.delete(m.id);
        done += 1;
      }
    });
    $('bulk-confirm').hidden = true;
    say('Forget selected', 'Forgot ' + done + ' of ' + chosen.length + ' selected memories; restore them from the Projects view for 30 days.');
    await Promise.all([loadTablePage(), loadProjects()]);
  }

  function download(name, text, type) {
    const url = URL.createObjectURL(new Blob([text], { type }));
    const link = el('a', { href: url, download: name, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 0);
  }

  function bulkExport() {
    clearMessages();
    const chosen = [...table.selected.values()];
    download('capsule-memories.json', JSON.stringify({ memories: chosen }, null, 2) + '\n', 'application/json');
    say('Export selected', 'Saved ' + plural(chosen.length, 'memory', 'memories') + ' as capsule-memories.json.');
  }

  // ---- export and import (the whole product) ----------------------------------------------------

  async function exportData(button) {
    clearMessages();
    const whole = $('export-all').checked;
    if (!whole && !requireProject('Export')) return;
    const bar = $('export-bar');
    bar.hidden = false;
    bar.removeAttribute('value');  // how many pages follow is not known ahead: an indeterminate bar
    const parts = [];
    await run('Export', button, async () => {
      let cursor = null;
      do {
        const query = new URLSearchParams();
        if (!whole) query.set('project', state.project);
        if (cursor) query.set('cursor', cursor);
        const page = await apiLines('/v1/export' + (query.toString() ? '?' + query.toString() : ''));
        parts.push(page.text);
        cursor = page.next;
        $('export-progress').textContent = 'Read ' + plural(parts.length, 'page', 'pages')
          + (cursor ? '; more follows…' : '.');
      } while (cursor);
      const text = parts.join('');
      const name = 'capsule-export' + (whole ? '' : '-' + state.project.replace(/[^A-Za-z0-9_.-]+/g, '_')) + '.jsonl';
      download(name, text, 'application/x-ndjson');
      bar.value = 1;
      const lines = text.split('\n').filter(Boolean).length;
      $('export-progress').textContent = 'Saved ' + name + ': ' + plural(lines, 'line', 'lines') + ' in '
        + plural(parts.length, 'page', 'pages') + '.';
      say('Export', 'Exported ' + (whole ? 'every project' : state.project) + ' (' + plural(lines, 'line', 'lines') + ').');
    });
    bar.value = 1;
  }

  /** Split an export into bodies the API takes: each starts with the header line, none over the limit. */
  function importParts(text) {
    const lines = text.split('\n').filter((l) => l.trim());
    if (!lines.length) return { problem: 'empty' };
    const header = lines[0] + '\n';
    const budget = 1048576 - utf8Bytes(header);
    const parts = [];
    let current = [];
    let size = 0;
    for (const line of lines.slice(1)) {
      const bytes = utf8Bytes(line) + 1;
      if (bytes > budget) return { problem: 'holding a line of ' + bytes + ' bytes, over the 1 MiB a request takes' };
      if (size + bytes > budget && current.length) {
        parts.push(header + current.join(''));
        current = [];
        size = 0;
      }
      current.push(line + '\n');
      size += bytes;
    }
    parts.push(header + current.join(''));
    return { parts };
  }

  async function importData(event) {
    event.preventDefault();
    clearMessages();
    const file = $('import-data-file').files[0];
    if (!file) return refuse('Import data', 'import-data-file', 'Choose an export file (JSON Lines).');
    const text = await file.text();
    const split = importParts(text);
    if (split.problem) return refuse('Import data', 'import-data-file', 'The file is ' + split.problem + '.');
    const bar = $('import-bar');
    bar.hidden = false;
    bar.max = split.parts.length;
    bar.value = 0;
    const total = { imported: 0, skipped: 0, refused: 0 };
    await run('Import data', $('import-data-button'), async () => {
      for (const [i, part] of split.parts.entries()) {
        const result = await apiText('POST', '/v1/import', part, 'application/x-ndjson');
        const sum = (o) => Object.values(o || {}).reduce((a, b) => a + b, 0);
        total.imported += sum(result.imported);
        total.skipped += sum(result.skipped);
        total.refused += result.refused_total || 0;
        bar.value = i + 1;
        $('import-progress').textContent = 'Sent part ' + (i + 1) + ' of ' + split.parts.length + ': '
          + total.imported + ' imported, ' + total.skipped + ' already present, ' + total.refused + ' refused.';
      }
      $('import-data-file').value = '';
      say('Import data', 'Imported ' + file.name + ': ' + total.imported + ' rows imported, ' + total.skipped
        + ' already present, ' + total.refused + ' refused.');
      await loadProjects();
    });
  }

  async function apiText(method, path, text, type) {
    setPending(1);
    try {
      let response;
      try {
        response = await fetch(path, { method, cache: 'no-store', body: text,
          headers: { Accept: 'application/json', 'Content-Type': type, Authorization: 'Bearer ' + state.token } });
      } catch (exc) {
        throw new ApiError(0, 'unreachable', 'The server did not answer: ' + exc.message, null);
      }
      let data = null;
      try { data = JSON.parse(await response.text()); } catch (_) { data = null; }
      if (!response.ok) {
        const err = (data && data.error) || {};
        throw new ApiError(response.status, err.code || 'http_' + response.status, err.message || 'HTTP ' + response.status,
          err.details === undefined ? null : err.details);
      }
      return data || {};
    } finally {
      setPending(-1);
    }
  }

  async function copyKey(button) {
    const key = $('new-key').value;
    try {
      await navigator.clipboard.writeText(key);
      button.textContent = 'Copied';
    } catch (_) {
      $('new-key').select();
      document.execCommand('copy');
      button.textContent = 'Copied';
    }
  }

  async function loadWhoami() {
    await run('Scopes', null, async () => {
      const result = await api('GET', '/v1/scopes/me');
      $('whoami').textContent = 'This token: ' + (result.who || '?') + ' of tenant ' + (result.tenant || '?') + ' · scope '
        + JSON.stringify(result.scope || {}) + '. ' + (result.explanation || '');
    });
    // Read only here (PUT /v1/scopes/principals sets them); a token that may not read them is told so, quietly.
    try {
      const rules = await api('GET', '/v1/scopes/principals');
      $('principal-scopes-explanation').textContent = rules.explanation || '';
      $('principal-scopes').replaceChildren(...(rules.rules || []).map((r) =>
        el('li', { 'data-principal': r.principal }, el('code', {}, r.principal), ' → ', JSON.stringify(r.scope))));
      if (!$('principal-scopes').children.length) {
        $('principal-scopes').append(el('li', { class: 'empty' }, 'None: every principal of the tenant has full access.'));
      }
    } catch (error) {
      $('principal-scopes-explanation').textContent = 'Not readable with this token (' + error.status + ' ' + error.code + ').';
      $('principal-scopes').replaceChildren();
    }
  }

  function wireViews() {
    window.addEventListener('hashchange', () => { route(); });
    document.querySelector('.skip-link').addEventListener('click', (event) => {
      event.preventDefault();  // the view's address stays in the bar
      $('workspace-main').focus();
    });
    for (const button of document.querySelectorAll('#mem-table .sort')) {
      button.addEventListener('click', () => sortBy(button.dataset.sort));
    }
    $('table-filter-form').addEventListener('submit', (event) => {
      event.preventDefault();
      clearMessages();
      go('memories', tableParamsFromForm());
    });
    $('table-reset').addEventListener('click', () => {
      const params = new URLSearchParams();
      if (state.project) params.set('project', state.project);
      go('memories', params);
    });
    $('table-project').addEventListener('change', () => go('memories', tableParamsFromForm()));
    $('table-select-all').addEventListener('change', (event) => {
      for (const m of table.rows) {
        if (event.currentTarget.checked) table.selected.set(m.id, m);
        else table.selected.delete(m.id);
      }
      renderTable();
    });
    $('audit-filter-form').addEventListener('submit', (event) => {
      event.preventDefault();
      clearMessages();
      go('activity', auditParamsFromForm());
    });
    $('audit-reset').addEventListener('click', () => { clearMessages(); go('activity'); });
    $('audit-next').addEventListener('click', auditNext);
    $('usage-form').addEventListener('submit', (event) => {
      event.preventDefault();
      clearMessages();
      go('usage', usageParamsFromForm());
    });
    $('sync-refresh').addEventListener('click', (event) => { clearMessages(); loadSync(event.currentTarget); });
    $('audit-prev').addEventListener('click', auditPrev);
    $('table-next').addEventListener('click', () => {
      if (!table.next) return;
      table.page += 1;
      table.open.clear();
      loadTablePage();
    });
    $('table-prev').addEventListener('click', () => {
      if (table.page === 0) return;
      table.page -= 1;
      table.open.clear();
      loadTablePage();
    });
    $('bulk-pin').addEventListener('click', (e) => bulk('Pin selected', e.currentTarget, 'pin'));
    $('bulk-unpin').addEventListener('click', (e) => bulk('Unpin selected', e.currentTarget, 'unpin'));
    $('bulk-export').addEventListener('click', bulkExport);
    $('bulk-forget').addEventListener('click', askBulkForget);
    $('bulk-clear').addEventListener('click', () => {
      table.selected.clear();
      $('bulk-confirm').hidden = true;
      renderTable();
    });
    $('bulk-forget-cancel').addEventListener('click', () => { $('bulk-confirm').hidden = true; $('bulk-forget').focus(); });
    $('bulk-forget-confirm').addEventListener('click', (e) => bulkForget(e.currentTarget));
    $('export-button').addEventListener('click', (e) => exportData(e.currentTarget));
    $('import-data-form').addEventListener('submit', importData);
    $('copy-key').addEventListener('click', (e) => copyKey(e.currentTarget));
  }

  // ---- sync status (GET /v1/sync/status: the local gateway's own route) -----------------------

  function markText(mark) {
    if (!mark) return 'never';
    return 'version ' + mark.version + (mark.seq === null ? ', every row' : ', row ' + mark.seq);
  }

  function timeCell(iso) {
    return iso ? el('td', {}, el('time', { datetime: iso, title: iso }, whenText(iso))) : el('td', {}, 'never');
  }

  function syncTarget(target, n) {
    const id = 'sync-target-' + n;
    return el('section', { class: 'sync-target', 'data-target': target.target, 'aria-labelledby': id },
      el('h3', { id }, el('code', {}, target.target)),
      el('p', { class: 'hint' }, 'State last saved ', el('time', { datetime: target.saved_at, title: target.saved_at },
        whenText(target.saved_at)), '; ' + plural(target.projects.length, 'project', 'projects') + '.'),
      el('div', { class: 'table-wrap' }, el('table', { class: 'mem-table sync-table' },
        el('caption', { class: 'sr-only' }, 'Last push and pull of each project with ' + target.target),
        el('thead', {}, el('tr', {}, ...['Project', 'Last push', 'Pushed', 'Last pull', 'Pulled'].map((h) =>
          el('th', { scope: 'col' }, h)))),
        el('tbody', {}, ...target.projects.map((p) => el('tr', { 'data-project': p.project },
          el('th', { scope: 'row' }, p.project), el('td', {}, markText(p.push)), timeCell(p.pushed_at),
          el('td', {}, markText(p.pull)), timeCell(p.pulled_at)))))));
  }

  async function loadSync(button) {
    const box = $('sync-targets');
    let result;
    try {
      if (button) button.disabled = true;
      result = await api('GET', '/v1/sync/status');
    } catch (error) {
      box.replaceChildren();
      if (error.status === 404 || error.status === 403) {
        $('sync-explanation').textContent = error.status === 404
          ? 'Sync status is not available on this server: only a local capsule serve answers it.'
          : 'Only the gateway\'s own token (capsule keys token) reads the sync status; this key cannot.';
      } else {
        $('sync-explanation').textContent = '';
        fail('Sync status', error);
      }
      return;
    } finally {
      if (button) button.disabled = false;
    }
    const targets = result.targets || [];
    $('sync-explanation').textContent = result.explanation || '';
    box.replaceChildren(...(targets.length ? targets.map(syncTarget)
      : [el('p', { class: 'empty', id: 'sync-none' }, 'No sync target configured.')]));
  }

  // ---- usage over time (GET /v1/usage) ----------------------------------------------------------

  const USAGE_RANGES = { '24h': 24 * 3600e3, '7d': 7 * 86400e3, '30d': 30 * 86400e3 };
  const USAGE_BUCKETS = { hour: 3600e3, day: 86400e3 };
  const latestUsage = { seq: 0 };

  function usageParamsFromForm() {
    return new URLSearchParams({ range: $('usage-range').value, bucket: $('usage-bucket').value });
  }

  /** The range asked for: whole buckets ending with the current one, [since, until). */
  function usageWindow(params, now) {
    const range = USAGE_RANGES[params.get('range')] ? params.get('range') : '24h';
    const bucket = USAGE_BUCKETS[params.get('bucket')] ? params.get('bucket') : 'hour';
    const size = USAGE_BUCKETS[bucket];
    const until = Math.floor(now / size) * size + size;
    return { range, bucket, size, since: until - USAGE_RANGES[range], until };
  }

  const isoZ = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');

  function usageLabel(start, bucket) {
    return bucket === 'day' ? start.slice(0, 10) : start.slice(0, 10) + ' ' + start.slice(11, 16);
  }

  /** Vertical bars, one per bucket of the range (empty ones stay blank); aria-hidden, the table says it. */
  function usageBars(series, win) {
    const W = 640;
    const H = 180;
    const pad = { l: 40, r: 8, t: 10, b: 22 };
    const slots = Math.round((win.until - win.since) / win.size);
    const step = (W - pad.l - pad.r) / slots;
    const top = Math.max(1, ...series.map((b) => b.requests));
    const chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, 'aria-hidden': 'true', class: 'usage-chart' },
      svg('line', { x1: pad.l, y1: H - pad.b, x2: W - pad.r, y2: H - pad.b, class: 'axis' }),
      svg('text', { x: 2, y: pad.t + 8, class: 'chart-note' }, String(top)),
      svg('text', { x: 2, y: H - pad.b, class: 'chart-note' }, '0'),
      svg('text', { x: pad.l, y: H - 4, class: 'chart-note' }, usageLabel(isoZ(win.since), win.bucket)),
      svg('text', { x: W - pad.r, y: H - 4, class: 'chart-note', 'text-anchor': 'end' },
        usageLabel(isoZ(win.until - win.size), win.bucket)));
    for (const b of series) {
      const slot = Math.floor((Date.parse(b.start) - win.since) / win.size);
      if (slot < 0 || slot >= slots) continue;
      const height = ((H - pad.t - pad.b) * b.requests) / top;
      chart.append(svg('rect', { x: (pad.l + slot * step + step * 0.1).toFixed(1), y: (H - pad.b - height).toFixed(1),
        width: Math.max(0.5, step * 0.8).toFixed(1), height: height.toFixed(1), class: 'bar-all', 'data-start': b.start }));
    }
    return chart;
  }

  function operationsText(ops) {
    return Object.entries(ops || {}).sort((a, b) => b[1] - a[1]).map(([op, n]) => op + ' ' + n).join(', ');
  }

  function renderUsage(result, win) {
    const series = (result.series || []).slice().sort((a, b) => (a.start < b.start ? -1 : 1));
    const total = series.reduce((n, b) => n + b.requests, 0);
    const byOp = {};
    for (const b of series) for (const [op, n] of Object.entries(b.operations || {})) byOp[op] = (byOp[op] || 0) + n;
    const limit = result.rate_limit_per_minute;
    $('usage-limit').textContent = limit === null || limit === undefined
      ? 'No rate limit is set on this server.' : 'Rate limit: ' + limit + ' requests per minute.';
    $('usage-explanation').textContent = result.explanation || '';
    const unit = win.bucket === 'day' ? 'day' : 'hour';
    const caption = 'Requests per ' + unit + ', ' + usageLabel(isoZ(win.since), win.bucket) + ' to '
      + usageLabel(isoZ(win.until), win.bucket) + ' (UTC): ' + plural(total, 'request', 'requests') + ' in all';
    const rows = series.map((b) => el('tr', { 'data-start': b.start },
      el('th', { scope: 'row' }, el('time', { datetime: b.start }, usageLabel(b.start, win.bucket))),
      el('td', {}, String(b.requests)), el('td', {}, operationsText(b.operations))));
    $('usage-chart').replaceChildren(el('figure', { id: 'usage-figure', 'aria-labelledby': 'usage-figure-caption' },
      el('figcaption', { id: 'usage-figure-caption' }, caption),
      series.length ? usageBars(series, win) : el('p', { class: 'empty' }, 'No requests in this range.'),
      series.length ? el('table', { class: 'sr-only', id: 'usage-table' },
        el('caption', {}, 'Requests per ' + unit + ' (only the ' + unit + 's with requests)'),
        el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, unit === 'day' ? 'Day (UTC)' : 'Hour starting (UTC)'),
          el('th', { scope: 'col' }, 'Requests'), el('th', { scope: 'col' }, 'By operation'))),
        el('tbody', {}, ...rows)) : null));
    const ops = Object.entries(byOp).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    $('usage-totals-body').replaceChildren(...ops.map(([op, n]) => el('tr', { 'data-operation': op },
      el('th', { scope: 'row' }, op), el('td', {}, String(n)))),
    el('tr', { class: 'usage-total' }, el('th', { scope: 'row' }, 'All operations'), el('td', {}, String(total))));
  }

  /** Show the usage for the address's range and bucket (read again on each visit: it only grows). */
  async function enterUsage(params) {
    const win = usageWindow(params, Date.now());
    $('usage-range').value = win.range;
    $('usage-bucket').value = win.bucket;
    const seq = ++latestUsage.seq;
    const query = new URLSearchParams({ since: isoZ(win.since), until: isoZ(win.until), bucket: win.bucket });
    let result;
    try {
      result = await api('GET', '/v1/usage?' + query.toString());
    } catch (error) {
      if (seq !== latestUsage.seq) return;
      const missing = error.status === 404;
      $('usage-unavailable').hidden = !missing;
      $('usage-body').hidden = true;
      $('usage-explanation').textContent = '';
      if (!missing) fail('Usage', error);
      return;
    }
    if (seq !== latestUsage.seq) return;
    $('usage-unavailable').hidden = true;
    $('usage-body').hidden = false;
    renderUsage(result, win);
  }

  // ---- solutions: create, edit, delete ------------------------------------------------------

  let editing = null;  // the solution being edited, or null for a new one

  function stepLine(step) {
    const p = step.payload || {};
    const command = typeof p.command === 'string' ? p.command : null;
    const plain = step.kind === 'cmd' && command !== null && Object.keys(p).length === 1 && !step.description
      && !command.includes('\n') && !command.trim().startsWith('{');
    if (plain) return command;
    const out = { kind: step.kind, payload: p };
    if (step.description) out.description = step.description;
    return JSON.stringify(out);
  }

  function parseSteps(text) {
    const steps = [];
    for (const [i, raw] of text.split('\n').entries()) {
      const line = raw.trim();
      if (!line) continue;
      if (line.startsWith('{')) {
        let step;
        try {
          step = JSON.parse(line);
        } catch (exc) {
          return { problem: 'Step line ' + (i + 1) + ' is not JSON: ' + exc.message };
        }
        if (!step || typeof step !== 'object' || typeof step.kind !== 'string') {
          return { problem: 'Step line ' + (i + 1) + ' needs a "kind" and a "payload".' };
        }
        steps.push(Object.assign({}, step, { step_order: steps.length + 1 }));
      } else {
        steps.push({ step_order: steps.length + 1, kind: 'cmd', payload: { command: line } });
      }
    }
    return { steps };
  }

  function openEditor(solution) {
    editing = solution;
    $('solution-editor-summary').textContent = solution ? 'Edit: ' + solution.title : 'New solution';
    $('sol-title').value = solution ? solution.title : '';
    $('sol-category').value = solution ? solution.category || '' : '';
    $('sol-description').value = solution ? solution.description || '' : '';
    $('sol-signature').value = solution && (solution.signatures || [])[0] ? solution.signatures[0].text : '';
    $('sol-steps').value = solution ? (solution.steps || []).map(stepLine).join('\n') : '';
    $('solution-editor').open = true;
    $('sol-title').focus();
  }

  function keptSignature(sig) {
    const out = { text: sig.text };
    if ((sig.regexes || []).length) out.regexes = sig.regexes;
    if (sig.meta && Object.keys(sig.meta).length) out.meta = sig.meta;
    return out;
  }

  function keptCheck(c) {
    const out = { check_order: c.check_order, cmd: c.cmd };
    for (const k of ['expect_substring', 'expect_exit_code', 'timeout_ms']) if (c[k] !== null && c[k] !== undefined) out[k] = c[k];
    return out;
  }

  async function saveSolution(event) {
    event.preventDefault();
    clearMessages();
    const operation = editing ? 'Edit solution' : 'Create solution';
    const title = $('sol-title').value.trim();
    if (!title) return refuse(operation, 'sol-title', 'A solution needs a title.');
    const signature = $('sol-signature').value.trim();
    if (!signature) return refuse(operation, 'sol-signature', 'Give the error it fixes (its signature).');
    const parsed = parseSteps($('sol-steps').value);
    if (parsed.problem) return refuse(operation, 'sol-steps', parsed.problem);
    const body = { title, description: $('sol-description').value.trim(), signatures: [{ text: signature }], steps: parsed.steps };
    const category = $('sol-category').value.trim();
    if (category) body.category = category;
    if (editing) {
      const others = (editing.signatures || []).slice(1).map(keptSignature);
      const first = (editing.signatures || [])[0];
      body.signatures = [first && first.text === signature ? keptSignature(first) : { text: signature }, ...others];
      body.checks = (editing.checks || []).map(keptCheck);
      for (const k of ['component', 'tags', 'project_root', 'repo_name', 'package_manager', 'monorepo_tool']) {
        if (editing[k] !== null && editing[k] !== undefined && !(Array.isArray(editing[k]) && !editing[k].length)) body[k] = editing[k];
      }
    }
    await run(operation, $('sol-save'), async () => {
      const result = editing
        ? await api('PUT', '/v1/solutions/' + encodeURIComponent(editing.id), body)
        : await api('POST', '/v1/solutions', body);
      editing = null;
      $('solution-editor').open = false;
      $('solution-form').reset();
      $('solution-editor-summary').textContent = 'New solution';
      await loadSolutions(null, true);
      await openSolution(result.solution.id, null);
      say(operation, result.explanation || 'Saved ' + result.solution.title + '.');
    });
  }

  async function deleteSolution(button) {
    const s = state.solution;
    if (!s) return;
    await run('Delete solution', button, async () => {
      const result = await api('DELETE', '/v1/solutions/' + encodeURIComponent(s.id));
      $('solution-delete-confirm-box').hidden = true;
      $('solution-detail').hidden = true;
      state.solution = null;
      await loadSolutions(null, true);
      say('Delete solution', (result && result.explanation) || 'Deleted ' + s.title + '.');
      $('solutions-title').focus();
    });
  }

  function wireSolutionEditor() {
    $('solution-form').addEventListener('submit', saveSolution);
    $('sol-cancel').addEventListener('click', () => {
      editing = null;
      $('solution-form').reset();
      $('solution-editor-summary').textContent = 'New solution';
      $('solution-editor').open = false;
    });
    $('solution-edit').addEventListener('click', () => { if (state.solution) openEditor(state.solution); });
    $('solution-delete').addEventListener('click', () => {
      $('solution-delete-confirm-box').hidden = false;
      $('solution-delete-confirm').focus();
    });
    $('solution-delete-cancel').addEventListener('click', () => {
      $('solution-delete-confirm-box').hidden = true;
      $('solution-delete').focus();
    });
    $('solution-delete-confirm').addEventListener('click', (e) => deleteSolution(e.currentTarget));
  }

  // ---- wiring ---------------------------------------------------------------

  function wire() {
    $('connect-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const token = $('token').value.trim();
      if (!token) {
        $('connect-error').textContent = 'Paste the token that capsule serve printed.';
        $('token').focus();
        return;
      }
      connect(token);
    });
    $('sign-out').addEventListener('click', () => signOut('Signed out. The token and this tab\'s history were removed.', true));
    $('projects-refresh').addEventListener('click', (event) =>
      run('Projects', event.currentTarget, async () => say('Projects', (await loadProjects()).explanation)));
    $('project-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const name = $('project-input').value.trim();
      if (!name) {
        fail('Open project', new ApiError(0, 'invalid', 'Type a project name.', null));
        $('project-input').focus();
        return;
      }
      go('projects', new URLSearchParams({ project: name }));
    });
    $('restore-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const id = $('restore-id').value.trim();
      if (!id) {
        fail('Restore', new ApiError(0, 'invalid', 'Type the id of a forgotten memory.', null));
        $('restore-id').focus();
        return;
      }
      restoreMemory(id, event.submitter || null).then(() => { $('restore-id').value = ''; });
    });
    $('store-form').addEventListener('submit', storeMemory);
    $('store-content').addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) $('store-form').requestSubmit();
    });
    $('search-form').addEventListener('submit', search);
    $('search-k').addEventListener('change', clampK);
    $('search-filters-clear').addEventListener('click', clearFilters);
    wireDropzone();
    $('results-clear').addEventListener('click', () => {
      $('hit-list').replaceChildren();
      $('search-results').hidden = true;
      $('search-query').focus();
    });
    $('view-recent').addEventListener('click', () => setView('recent'));
    $('view-pinned').addEventListener('click', () => setView('pinned'));
    $('view-forgotten').addEventListener('click', () => setView('forgotten'));
    $('detail-close').addEventListener('click', closeDetail);
    $('detail-reload').addEventListener('click', (e) => reloadDetail(e.currentTarget));
    $('detail-edit').addEventListener('click', () => showEdit($('edit-form').hidden));
    $('edit-cancel').addEventListener('click', () => {
      if (state.detail) fillEditForm(state.detail);
      showEdit(false);
      $('detail-edit').focus();
    });
    $('edit-form').addEventListener('submit', saveEdit);
    $('detail-history').addEventListener('click', (e) => toggleHistory(e.currentTarget));
    $('detail-audit').addEventListener('click', (e) => loadAudit(e.currentTarget));
    $('settings-form').addEventListener('submit', saveSettings);
    $('solutions-refresh').addEventListener('click', (event) => loadSolutions(event.currentTarget));
    $('import-form').addEventListener('submit', importFixpack);
    $('keys-refresh').addEventListener('click', (e) => loadKeys(e.currentTarget));
    $('charts-refresh').addEventListener('click', (e) => { clearMessages(); renderCharts(e.currentTarget); });
    $('key-form').addEventListener('submit', createKey);
    $('apply-form').addEventListener('submit', applySolution);
    $('detect-form').addEventListener('submit', detectPatterns);
    $('golden-form').addEventListener('submit', goldenPaths);
    $('mine-button').addEventListener('click', (e) => minePatterns(e.currentTarget));
    $('load-more').addEventListener('click', () => loadMemories(true));
    for (const status of ['pending', 'approved', 'rejected']) {
      $('cand-' + status).addEventListener('click', () => setCandidateStatus(status));
    }
    $('candidates-more').addEventListener('click', () => loadCandidates(true));
    $('threshold-form').addEventListener('submit', saveThreshold);
    $('candidates-refresh').addEventListener('click', () => { clearMessages(); loadCandidates(false); });
    $('list-filter-form').addEventListener('submit', (event) => {
      event.preventDefault();
      clearMessages();
      state.cursor = null;
      loadMemories(false);
    });
    wireViews();
    wireSolutionEditor();
    $('notice-close').addEventListener('click', () => hideBox('notice'));
    $('alert-close').addEventListener('click', () => hideBox('alert'));
    document.addEventListener('keydown', (event) => {
      const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
      if (event.key === '/' && !typing && !$('workspace').hidden) {
        event.preventDefault();
        if (parseHash().view !== 'search') {
          go('search', state.project ? new URLSearchParams({ project: state.project }) : null);
          showView('search');  // at once, so the field can take the focus now
        }
        $('search-query').focus();
      }
    });
  }

  wire();
  renderForgotten();
  renderActivity();
  if (state.token) connect(state.token);
  else $('token').focus();
})();
