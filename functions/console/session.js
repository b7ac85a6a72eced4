/* Capsule Memory console: connecting with a token and signing out (which, on purpose, wipes
 * this tab's history from every view). */

import { state, TOKEN_KEY } from './state.js';
import { $ } from './dom.js';
import { api } from './api.js';
import { hideBox, logActivity, renderActivity } from './messages.js';
import { nav, openProject, parseHash, route } from './router.js';
import { applyProjects } from './projects.js';
import { renderForgotten } from './memories.js';
import { closeDetail } from './detail.js';
import { auditLog } from './activity.js';
import { table } from './table.js';

// ---- connecting ---------------------------------------------------------

function showWorkspace(connected) {
  $('connect').hidden = connected;
  $('workspace').hidden = !connected;
  $('session').hidden = !connected;
}

/** Drop the token. Signing out on purpose also drops this tab's history; a refused token keeps it. */
export function signOut(reason, wipe) {
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
    nav.shown = null;
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

export async function connect(token) {
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

export function wireSession() {
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
}
