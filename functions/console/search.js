/* Capsule Memory console: the Search view: the query, its filters, time travel, relevance floor
 * and weights (each sent only when set), and the hits as memory cards with their scores. */

import { latest, state } from './state.js';
import { $, el } from './dom.js';
import { parseTags } from './format.js';
import { api } from './api.js';
import { logActivity, run } from './messages.js';
import { refuse, tagsProblem } from './limits.js';
import { recordLatency } from './charts.js';
import { requireProject } from './projects.js';
import { appendCard } from './memories.js';

const MAX_K = 20;  // the API's limit for k (SearchRequest.k)
const TEXT_FILTERS = [['search-category', 'category'], ['search-component', 'component'], ['search-path', 'path_prefix']];
const WEIGHTS = [['search-w-vector', 'vector'], ['search-w-bm25', 'bm25'], ['search-w-time', 'time'],
  ['search-w-feedback', 'feedback']];

/** k within what the API accepts (1-20), shown in the input as it will be sent. */
function clampK() {
  const input = $('search-k');
  const typed = Number.parseInt(input.value, 10);
  const k = Number.isFinite(typed) ? Math.min(MAX_K, Math.max(1, typed)) : 8;
  input.value = String(k);
  return k;
}

async function search(event) {
  event.preventDefault();
  const query = $('search-query').value.trim();
  const global = $('search-global').checked;
  if (!query) {
    refuse('Search', 'search-query', 'Type what to look for.');
    return;
  }
  if (!global && !requireProject('Search')) return;
  const body = { query, mode: $('search-mode').value, k: clampK() };
  if (global) body.global = true;
  else body.project = state.project;
  if (!searchOptions(body)) return;
  const ticket = ++latest.search;
  await run('Search', $('search-button'), async () => {
    const started = performance.now();
    const result = await api('POST', '/v1/memories/search', body);
    recordLatency(performance.now() - started);
    if (ticket !== latest.search) return;  // an answer to an older query arrived late
    state.lastQuery = query;
    const list = $('hit-list');
    list.replaceChildren();
    for (const hit of result.results || []) appendCard(list, hit, 'search');
    if (!list.children.length) list.append(el('li', { class: 'empty' }, 'Nothing matched.'));
    $('search-explanation').textContent = result.explanation || '';
    $('search-results').hidden = false;
    logActivity('Search', result.explanation || '', false);
  });
}

/** A datetime-local value (read as UTC) as the API's ISO time, or '' when empty. */
function isoOf(id) {
  const raw = $(id).value;
  if (!raw) return '';
  const at = new Date(raw + (raw.length === 16 ? ':00' : '') + 'Z');
  return Number.isNaN(at.getTime()) ? null : at.toISOString();
}

/** A number in [0, 1] from an input, '' when empty, null when out of range. */
function unitOf(id) {
  const raw = $(id).value.trim();
  if (!raw) return '';
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 && n <= 1 ? n : null;
}

/** Filters, time travel, relevance floor, weights: each only when set; false when one is refused. */
function searchOptions(body) {
  const filters = {};
  const tags = parseTags($('search-tags').value);
  const problem = tagsProblem(tags);
  if (problem) return refuse('Search', 'search-tags', problem);
  if (tags.length) filters.tags = tags;
  for (const [id, key] of TEXT_FILTERS) {
    const value = $(id).value.trim();
    if (value) filters[key] = value;
  }
  if ($('search-retention').value) filters.retention = $('search-retention').value;
  if ($('search-visibility').value) filters.visibility = $('search-visibility').value;
  const subject = $('search-subject').value.trim();
  if (subject) filters.subject = subject;
  for (const [id, key] of [['search-since', 'since'], ['search-until', 'until']]) {
    const at = isoOf(id);
    if (at === null) return refuse('Search', id, 'Not a date and time.');
    if (at) filters[key] = at;
  }
  if (Object.keys(filters).length) body.filters = filters;
  const asOf = isoOf('search-as-of');
  if (asOf === null) return refuse('Search', 'search-as-of', 'Not a date and time.');
  if (asOf) body.as_of = asOf;
  const floor = unitOf('search-min-relevance');
  if (floor === null) return refuse('Search', 'search-min-relevance', 'Minimum relevance is a number from 0 to 1.');
  if (floor !== '') body.min_relevance = floor;
  const weights = {};
  for (const [id, key] of WEIGHTS) {
    const w = unitOf(id);
    if (w === null) return refuse('Search', id, 'A weight is a number from 0 to 1.');
    if (w !== '') weights[key] = w;
  }
  if (Object.keys(weights).length) body.weights = weights;
  if ($('search-superseded').checked) body.include_superseded = true;
  return true;
}

function clearFilters() {
  for (const input of $('search-filters').querySelectorAll('input, select')) {
    if (input.type === 'checkbox') input.checked = false;
    else input.value = '';
  }
  $('search-tags').value = '';
}

export function wireSearch() {
  $('search-form').addEventListener('submit', search);
  $('search-k').addEventListener('change', clampK);
  $('search-filters-clear').addEventListener('click', clearFilters);
  $('results-clear').addEventListener('click', () => {
    $('hit-list').replaceChildren();
    $('search-results').hidden = true;
    $('search-query').focus();
  });
}
