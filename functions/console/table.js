/* Capsule Memory console: the memory table (Memories view): filters and sort in the address,
 * pages by cursor, rows that open in place, and bulk pin, unpin, export and forget. */

import { latest, state } from './state.js';
import { $, download, el } from './dom.js';
import { plural, shortId, snippet, whenText } from './format.js';
import { api, memoryPath } from './api.js';
import { clearMessages, run, say } from './messages.js';
import { go, parseHash } from './router.js';
import { loadProjects } from './projects.js';
import { rememberForgotten } from './memories.js';

// ---- the memory table ------------------------------------------------------------------------

export const table = {
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
export async function enterTable(params, opened) {
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

function bulkExport() {
  clearMessages();
  const chosen = [...table.selected.values()];
  download('capsule-memories.json', JSON.stringify({ memories: chosen }, null, 2) + '\n', 'application/json');
  say('Export selected', 'Saved ' + plural(chosen.length, 'memory', 'memories') + ' as capsule-memories.json.');
}

export function wireTable() {
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
}
