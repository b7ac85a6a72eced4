/* Capsule Memory console: the last operation's explanation or error (the notice and alert
 * boxes), this tab's activity list, and run(): one API operation with its button disabled.
 * A 401 signs out through the handler the entry registers (onUnauthorized), not an import. */

import { ACTIVITY_KEY, state } from './state.js';
import { $, el } from './dom.js';

const MAX_ACTIVITY = 30;

let unauthorized = null;

/** What a 401 does (the entry registers signing out): no import of the session from here. */
export function onUnauthorized(handler) {
  unauthorized = handler;
}

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
export function hideBox(prefix) {
  $(prefix).classList.add('is-idle');
  for (const part of ['-title', '-text', '-details']) $(prefix + part).textContent = '';
}

/** Report a success; ``undo`` (optional) puts an Undo button beside the explanation. */
export function say(operation, explanation, undo) {
  hideBox('alert');
  showBox('notice', operation, explanation || 'Done.', null);
  const button = $('notice-undo');
  button.hidden = !undo;
  button.onclick = undo ? () => { button.hidden = true; undo(button); } : null;
  logActivity(operation, explanation || 'Done.', false);
}

/** A new action or another project: the last one's message no longer applies. */
export function clearMessages() {
  hideBox('alert');
  hideBox('notice');
  $('notice-undo').hidden = true;
}

export function fail(operation, error) {
  const status = error.status ? ' (' + error.status + ')' : '';
  const title = operation + ' failed: ' + (error.code || 'error') + status;
  hideBox('notice');
  showBox('alert', title, error.message || String(error), error.details);
  logActivity(operation, (error.code || 'error') + status + ': ' + (error.message || error), true);
  if (error.status === 401) unauthorized('The API refused the token (' + (error.message || '401') + ').');
}

/** The activity log lives in the tab's session storage, so a reload keeps it. */
export function logActivity(operation, text, isError) {
  const entry = { at: new Date().toISOString(), op: operation, text, error: Boolean(isError) };
  state.activity = [entry, ...state.activity].slice(0, MAX_ACTIVITY);
  sessionStorage.setItem(ACTIVITY_KEY, JSON.stringify(state.activity));
  renderActivity();
}

export function renderActivity() {
  $('activity').replaceChildren(...state.activity.map((entry) =>
    el('li', { class: entry.error ? 'act act-error' : 'act' },
      el('time', { datetime: entry.at, class: 'act-time' }, new Date(entry.at).toLocaleTimeString()),
      el('strong', { class: 'act-op' }, entry.op),
      el('span', { class: 'act-text' }, entry.text))));
}

/** Run one API operation with its button disabled; report its explanation or its error. */
export async function run(operation, button, work) {
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

export function wireMessages() {
  $('notice-close').addEventListener('click', () => hideBox('notice'));
  $('alert-close').addEventListener('click', () => hideBox('alert'));
}
