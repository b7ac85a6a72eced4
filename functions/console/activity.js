/* Capsule Memory console: the tenant's audit log (Activity view, GET /v1/audit): its filters in
 * the address, paged by cursor. */

import { latest, state } from './state.js';
import { $, el } from './dom.js';
import { shortId, utcIso, whenText } from './format.js';
import { api } from './api.js';
import { clearMessages, run } from './messages.js';
import { go, hashOf } from './router.js';

// ---- the tenant's audit log (GET /v1/audit), in the Activity view -------------------------

// [form field, the view's address parameter, the API's query parameter]
const AUDIT_FILTERS = [['audit-project', 'audit_project', 'project'], ['audit-action', 'action', 'action'],
  ['audit-memory', 'memory', 'memory_id'], ['audit-since', 'since', 'since'], ['audit-until', 'until', 'until']];
const AUDIT_TIMES = ['since', 'until'];  // datetime-local in the address (read as UTC), RFC 3339 for the API
const AUDIT_PAGE = 25;
export const auditLog = { key: null, params: new URLSearchParams(), cursors: [null], page: 0, next: null };

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
export async function enterAudit(params, opened) {
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

export function wireActivity() {
  $('audit-filter-form').addEventListener('submit', (event) => {
    event.preventDefault();
    clearMessages();
    go('activity', auditParamsFromForm());
  });
  $('audit-reset').addEventListener('click', () => { clearMessages(); go('activity'); });
  $('audit-next').addEventListener('click', auditNext);
  $('audit-prev').addEventListener('click', auditPrev);
}
