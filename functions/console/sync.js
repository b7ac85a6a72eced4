/* Capsule Memory console: the Sync view (GET /v1/sync/status, the local gateway's own route):
 * each target's projects with their last push and pull. */

import { $, el } from './dom.js';
import { plural, whenText } from './format.js';
import { api } from './api.js';
import { clearMessages, fail } from './messages.js';

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

export async function loadSync(button) {
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

export function wireSync() {
  $('sync-refresh').addEventListener('click', (event) => { clearMessages(); loadSync(event.currentTarget); });
}
