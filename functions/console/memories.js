/* Capsule Memory console: memory cards (content, badges, score, actions), the Projects view's
 * memory list (recent, pinned, forgotten), storing, pinning, feedback, forgetting and restoring,
 * and this tab's recently forgotten memories. */

import { latest, PAGE_SIZE, saveForgotten, state, VOTES_KEY } from './state.js';
import { $, el } from './dom.js';
import { fixed, parseTags, shortId, snippet, whenText } from './format.js';
import { api, memoryPath } from './api.js';
import { clearMessages, run, say } from './messages.js';
import { refuse, tagsProblem } from './limits.js';
import { openProject, showDetail } from './router.js';
import { loadProjects, requireProject } from './projects.js';

const MAX_FORGOTTEN = 25;
const CLAMP_CHARS = 700;
const COMPONENTS = [
  ['vector', 'vector', 'meaning: cosine similarity of the embeddings'],
  ['bm25', 'bm25', 'keyword: BM25 match of the query words'],
  ['time', 'time', 'recency: halves every 30 days'],
  ['feedback', 'feedback', 'feedback: Wilson lower bound of helpful votes'],
  ['outcome', 'outcome', 'outcome: +0.10 success, -0.05 failure'],
  ['boost', 'boost', 'query aids: the author or date the query names, neighbouring turns, priors'],
];

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

export function appendCard(list, item, source) {
  const node = card(item, source);
  node._item = item;
  list.append(node);
}

// ---- listing --------------------------------------------------------------

export async function loadMemories(more) {
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
    refuse('Store', 'store-content', 'Write something to remember first.');
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

/** Pin or unpin (``action``: 'pin' or 'unpin'), named as the button says. */
async function setPinned(action, item, button) {
  const operation = action === 'pin' ? 'Pin' : 'Unpin';
  await run(operation, button, async () => {
    const result = await api('POST', memoryPath(item.id, action));
    say(operation, result.explanation);
    updateCards(result.memory);
    await afterChange();
  });
}

const pinMemory = (item, button) => setPinned('pin', item, button);
const unpinMemory = (item, button) => setPinned('unpin', item, button);

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

export function rememberForgotten(memory) {
  state.forgotten = state.forgotten.filter((f) => f.id !== memory.id);
  state.forgotten.unshift({ id: memory.id, project: memory.project, text: snippet(memory.content, 90) });
  state.forgotten = state.forgotten.slice(0, MAX_FORGOTTEN);
  saveForgotten();
  renderForgotten();
}

export function renderForgotten() {
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

export function wireMemories() {
  $('restore-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const id = $('restore-id').value.trim();
    if (!id) {
      refuse('Restore', 'restore-id', 'Type the id of a forgotten memory.');
      return;
    }
    restoreMemory(id, event.submitter || null).then(() => { $('restore-id').value = ''; });
  });
  $('store-form').addEventListener('submit', storeMemory);
  $('store-content').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) $('store-form').requestSubmit();
  });
  $('view-recent').addEventListener('click', () => setView('recent'));
  $('view-pinned').addEventListener('click', () => setView('pinned'));
  $('view-forgotten').addEventListener('click', () => setView('forgotten'));
  $('load-more').addEventListener('click', () => loadMemories(true));
  $('list-filter-form').addEventListener('submit', (event) => {
    event.preventDefault();
    clearMessages();
    state.cursor = null;
    loadMemories(false);
  });
}
