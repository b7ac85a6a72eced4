/* Capsule Memory console: the project list (Projects view), the project a request needs, and
 * the current project's settings (Settings view: retention limit, secrets and PII policies). */

import { state } from './state.js';
import { $, el } from './dom.js';
import { plural } from './format.js';
import { api, ApiError } from './api.js';
import { clearMessages, fail, run, say } from './messages.js';
import { go } from './router.js';
import { renderDashboard } from './charts.js';
import { refuse } from './limits.js';

// ---- projects -----------------------------------------------------------

export function applyProjects(result) {
  state.projects = result.projects || [];
  renderProjects();
}

export async function loadProjects() {
  const result = await api('GET', '/v1/projects');
  applyProjects(result);
  return result;
}

export function renderProjects() {
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

export function requireProject(operation) {
  if (state.project) return true;
  fail(operation, new ApiError(0, 'no_project', 'Choose or type a project first.', null));
  $('project-input').focus();
  return false;
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
      refuse('Settings', 'settings-limit', 'The retention limit is a whole number from 1 to 1,000,000.');
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

export function wireProjects() {
  $('projects-refresh').addEventListener('click', (event) =>
    run('Projects', event.currentTarget, async () => say('Projects', (await loadProjects()).explanation)));
  $('project-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const name = $('project-input').value.trim();
    if (!name) {
      refuse('Open project', 'project-input', 'Type a project name.');
      return;
    }
    go('projects', new URLSearchParams({ project: name }));
  });
  $('settings-form').addEventListener('submit', saveSettings);
}
