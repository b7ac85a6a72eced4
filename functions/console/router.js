/* Capsule Memory console: views and their addresses (#/view?params, hash routing): parse and
 * build them, go to one, show one. Opening a view, a project or a memory's detail is what the
 * entry (app.js) registers here, so views can navigate without importing it (no cycles). */

import { $ } from './dom.js';

const VIEWS = ['memories', 'search', 'projects', 'solutions', 'patterns', 'capture', 'activity', 'usage', 'keys',
  'settings', 'transfer', 'sync'];
const DEFAULT_VIEW = 'projects';

/** The view on screen (null before the first route and after signing out). */
export const nav = { shown: null };

export function parseHash() {
  if (location.hash && !location.hash.startsWith('#/')) {
    // Not a view's address (an in-page anchor): stay where we are.
    return { view: nav.shown || DEFAULT_VIEW, params: new URLSearchParams() };
  }
  const raw = location.hash.replace(/^#\/?/, '');
  const at = raw.indexOf('?');
  const name = at < 0 ? raw : raw.slice(0, at);
  return { view: VIEWS.includes(name) ? name : DEFAULT_VIEW, params: new URLSearchParams(at < 0 ? '' : raw.slice(at + 1)) };
}

export function hashOf(view, params) {
  const query = params ? params.toString() : '';
  return '#/' + view + (query ? '?' + query : '');
}

/** Go to a view (a new entry in the history, so Back returns). */
export function go(view, params) {
  const hash = hashOf(view, params);
  if (location.hash === hash) route();
  else location.hash = hash;
}

export function showView(view) {
  for (const node of document.querySelectorAll('.view')) node.hidden = node.dataset.view !== view;
  for (const link of document.querySelectorAll('.nav-link')) {
    if (link.dataset.nav === view) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const title = $('view-' + view + '-title');
  document.title = (title ? title.textContent + ' · ' : '') + 'Capsule Memory console';
}

const handlers = { route: null, openProject: null, showDetail: null };

/** The entry registers what opening a view, a project and a memory's detail do. */
export function registerNavigation(fns) {
  Object.assign(handlers, fns);
}

/** Show the view of the address (and what its parameters ask for). */
export function route() {
  return handlers.route();
}

/** Make this project the current one (and read its memories and candidates). */
export function openProject(name) {
  return handlers.openProject(name);
}

/** Open one memory's detail (the Projects view). */
export function showDetail(item, button, source) {
  return handlers.showDetail(item, button, source);
}
