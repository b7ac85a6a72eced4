/* Capsule Memory console: the Keys view: the local gateway's API keys (create with a scope,
 * revoke), the new key shown once, and this token's scope and the principals' scopes. */

import { $, el } from './dom.js';
import { parseTags } from './format.js';
import { api } from './api.js';
import { clearMessages, run, say } from './messages.js';
import { refuse } from './limits.js';

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

export async function loadKeys(button, keepMessages) {
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

export function wireKeys() {
  $('keys-refresh').addEventListener('click', (e) => loadKeys(e.currentTarget));
  $('key-form').addEventListener('submit', createKey);
  $('copy-key').addEventListener('click', (e) => copyKey(e.currentTarget));
}
