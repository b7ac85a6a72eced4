/* Capsule Memory console: the Usage view (GET /v1/usage): requests per hour or day by
 * operation, an SVG chart with its table for screen readers; range and bucket in the address. */

import { $, el, svg } from './dom.js';
import { plural } from './format.js';
import { api } from './api.js';
import { clearMessages, fail } from './messages.js';
import { go } from './router.js';

// ---- usage over time (GET /v1/usage) ----------------------------------------------------------

const USAGE_RANGES = { '24h': 24 * 3600e3, '7d': 7 * 86400e3, '30d': 30 * 86400e3 };
const USAGE_BUCKETS = { hour: 3600e3, day: 86400e3 };
const latestUsage = { seq: 0 };

function usageParamsFromForm() {
  return new URLSearchParams({ range: $('usage-range').value, bucket: $('usage-bucket').value });
}

/** The range asked for: whole buckets ending with the current one, [since, until). */
function usageWindow(params, now) {
  const range = USAGE_RANGES[params.get('range')] ? params.get('range') : '24h';
  const bucket = USAGE_BUCKETS[params.get('bucket')] ? params.get('bucket') : 'hour';
  const size = USAGE_BUCKETS[bucket];
  const until = Math.floor(now / size) * size + size;
  return { range, bucket, size, since: until - USAGE_RANGES[range], until };
}

const isoZ = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');

function usageLabel(start, bucket) {
  return bucket === 'day' ? start.slice(0, 10) : start.slice(0, 10) + ' ' + start.slice(11, 16);
}

/** Vertical bars, one per bucket of the range (empty ones stay blank); aria-hidden, the table says it. */
function usageBars(series, win) {
  const W = 640;
  const H = 180;
  const pad = { l: 40, r: 8, t: 10, b: 22 };
  const slots = Math.round((win.until - win.since) / win.size);
  const step = (W - pad.l - pad.r) / slots;
  const top = Math.max(1, ...series.map((b) => b.requests));
  const chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, 'aria-hidden': 'true', class: 'usage-chart' },
    svg('line', { x1: pad.l, y1: H - pad.b, x2: W - pad.r, y2: H - pad.b, class: 'axis' }),
    svg('text', { x: 2, y: pad.t + 8, class: 'chart-note' }, String(top)),
    svg('text', { x: 2, y: H - pad.b, class: 'chart-note' }, '0'),
    svg('text', { x: pad.l, y: H - 4, class: 'chart-note' }, usageLabel(isoZ(win.since), win.bucket)),
    svg('text', { x: W - pad.r, y: H - 4, class: 'chart-note', 'text-anchor': 'end' },
      usageLabel(isoZ(win.until - win.size), win.bucket)));
  for (const b of series) {
    const slot = Math.floor((Date.parse(b.start) - win.since) / win.size);
    if (slot < 0 || slot >= slots) continue;
    const height = ((H - pad.t - pad.b) * b.requests) / top;
    chart.append(svg('rect', { x: (pad.l + slot * step + step * 0.1).toFixed(1), y: (H - pad.b - height).toFixed(1),
      width: Math.max(0.5, step * 0.8).toFixed(1), height: height.toFixed(1), class: 'bar-all', 'data-start': b.start }));
  }
  return chart;
}

function operationsText(ops) {
  return Object.entries(ops || {}).sort((a, b) => b[1] - a[1]).map(([op, n]) => op + ' ' + n).join(', ');
}

function renderUsage(result, win) {
  const series = (result.series || []).slice().sort((a, b) => (a.start < b.start ? -1 : 1));
  const total = series.reduce((n, b) => n + b.requests, 0);
  const byOp = {};
  for (const b of series) for (const [op, n] of Object.entries(b.operations || {})) byOp[op] = (byOp[op] || 0) + n;
  const limit = result.rate_limit_per_minute;
  $('usage-limit').textContent = limit === null || limit === undefined
    ? 'No rate limit is set on this server.' : 'Rate limit: ' + limit + ' requests per minute.';
  $('usage-explanation').textContent = result.explanation || '';
  const unit = win.bucket === 'day' ? 'day' : 'hour';
  const caption = 'Requests per ' + unit + ', ' + usageLabel(isoZ(win.since), win.bucket) + ' to '
    + usageLabel(isoZ(win.until), win.bucket) + ' (UTC): ' + plural(total, 'request', 'requests') + ' in all';
  const rows = series.map((b) => el('tr', { 'data-start': b.start },
    el('th', { scope: 'row' }, el('time', { datetime: b.start }, usageLabel(b.start, win.bucket))),
    el('td', {}, String(b.requests)), el('td', {}, operationsText(b.operations))));
  $('usage-chart').replaceChildren(el('figure', { id: 'usage-figure', 'aria-labelledby': 'usage-figure-caption' },
    el('figcaption', { id: 'usage-figure-caption' }, caption),
    series.length ? usageBars(series, win) : el('p', { class: 'empty' }, 'No requests in this range.'),
    series.length ? el('table', { class: 'sr-only', id: 'usage-table' },
      el('caption', {}, 'Requests per ' + unit + ' (only the ' + unit + 's with requests)'),
      el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, unit === 'day' ? 'Day (UTC)' : 'Hour starting (UTC)'),
        el('th', { scope: 'col' }, 'Requests'), el('th', { scope: 'col' }, 'By operation'))),
      el('tbody', {}, ...rows)) : null));
  const ops = Object.entries(byOp).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  $('usage-totals-body').replaceChildren(...ops.map(([op, n]) => el('tr', { 'data-operation': op },
    el('th', { scope: 'row' }, op), el('td', {}, String(n)))),
  el('tr', { class: 'usage-total' }, el('th', { scope: 'row' }, 'All operations'), el('td', {}, String(total))));
}

/** Show the usage for the address's range and bucket (read again on each visit: it only grows). */
export async function enterUsage(params) {
  const win = usageWindow(params, Date.now());
  $('usage-range').value = win.range;
  $('usage-bucket').value = win.bucket;
  const seq = ++latestUsage.seq;
  const query = new URLSearchParams({ since: isoZ(win.since), until: isoZ(win.until), bucket: win.bucket });
  let result;
  try {
    result = await api('GET', '/v1/usage?' + query.toString());
  } catch (error) {
    if (seq !== latestUsage.seq) return;
    const missing = error.status === 404;
    $('usage-unavailable').hidden = !missing;
    $('usage-body').hidden = true;
    $('usage-explanation').textContent = '';
    if (!missing) fail('Usage', error);
    return;
  }
  if (seq !== latestUsage.seq) return;
  $('usage-unavailable').hidden = true;
  $('usage-body').hidden = false;
  renderUsage(result, win);
}

export function wireUsage() {
  $('usage-form').addEventListener('submit', (event) => {
    event.preventDefault();
    clearMessages();
    go('usage', usageParamsFromForm());
  });
}
