/* Capsule Memory console: one memory's detail (Projects view): its fields, its audit records,
 * editing it (If-Match on its sha256), its versions and reverting to one. */

import { state } from './state.js';
import { $, el } from './dom.js';
import { parseTags, plural, snippet, utf8Bytes } from './format.js';
import { api, ApiError, memoryPath } from './api.js';
import { clearMessages, run, say } from './messages.js';
import { LIMITS, refuse, tagsProblem } from './limits.js';
import { loadProjects } from './projects.js';
import { loadMemories } from './memories.js';

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
export async function showDetail(item, button, source) {
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

export function closeDetail() {
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

/** A link to one memory (#/projects?project=P&memory=ID): its detail, unless it is already open. */
export async function openMemoryFromAddress(memoryId) {
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

export function wireDetail() {
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
}
