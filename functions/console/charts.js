/* Capsule Memory console: the dashboard (memories per project) and the trends (growth, search
 * latency, feedback, solution success) of the Activity view, as SVG with the same numbers as
 * text for screen readers. */

import { LATENCY_KEY, state } from './state.js';
import { $, el, svg } from './dom.js';
import { plural, snippet, successText } from './format.js';
import { api } from './api.js';
import { clearMessages, run } from './messages.js';

const MAX_LATENCIES = 40;
const CHART_PROJECTS = 5;
const CHART_PAGES = 3;  // of 100 memories: the charts' reads stay bounded

/** One horizontal bar per project (held memories, the pinned share darker); text for screen readers. */
export function renderDashboard() {
  const projects = state.projects.slice(0, 12);
  const box = $('dashboard-chart');
  if (!projects.length) {
    box.replaceChildren(el('p', { class: 'empty' }, 'No projects yet.'));
    return;
  }
  const most = Math.max(1, ...projects.map((p) => p.memories));
  const rowH = 26;
  const width = 320;
  const labelW = 120;
  // The picture is for eyes; the same numbers as a list are for screen readers (and tests).
  const text = el('ul', { class: 'sr-only', id: 'dashboard-text' }, projects.map((p) =>
    el('li', {}, p.project + ': ' + plural(p.memories, 'memory', 'memories') + ', ' + p.pinned + ' pinned')));
  const chart = svg('svg', { viewBox: '0 0 ' + width + ' ' + (rowH * projects.length), 'aria-hidden': 'true',
    class: 'bars' });
  projects.forEach((p, i) => {
    const y = i * rowH;
    const full = ((width - labelW - 40) * p.memories) / most;
    const pinned = ((width - labelW - 40) * Math.min(p.pinned, p.memories)) / most;
    chart.append(
      svg('text', { x: 0, y: y + 17, class: 'bar-label' }, snippet(p.project, 18)),
      svg('rect', { x: labelW, y: y + 5, width: full.toFixed(1), height: 16, class: 'bar-all', 'data-project': p.project }),
      svg('rect', { x: labelW, y: y + 5, width: pinned.toFixed(1), height: 16, class: 'bar-pinned' }),
      svg('text', { x: labelW + full + 4, y: y + 17, class: 'bar-value' }, String(p.memories)));
  });
  box.replaceChildren(chart, text);
}

// ---- trends: small charts over time ------------------------------------------------

export function recordLatency(ms) {
  state.latencies = [...state.latencies, { at: new Date().toISOString(), ms: Math.round(ms) }].slice(-MAX_LATENCIES);
  sessionStorage.setItem(LATENCY_KEY, JSON.stringify(state.latencies));
  if ($('charts').childElementCount) drawLatency();
}

const dayOf = (iso) => String(iso).slice(0, 10);

/** Cumulative memories held per day they were stored: [[day, count], ...] (pure). */
function growth(memories) {
  const perDay = new Map();
  for (const m of memories) perDay.set(dayOf(m.created_at), (perDay.get(dayOf(m.created_at)) || 0) + 1);
  let total = 0;
  return [...perDay.keys()].sort().map((day) => [day, (total += perDay.get(day))]);
}

/** A line chart of series [{name, points: [[x number, y number]]}], axes from 0; aria-hidden. */
function lineChart(series, opts) {
  const W = 300;
  const H = 140;
  const pad = { l: 34, r: 8, t: 8, b: 20 };
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  const x0 = Math.min(...xs);
  const x1 = Math.max(...xs);
  const top = Math.max(1, ...ys);
  const sx = (x) => pad.l + (x1 === x0 ? (W - pad.l - pad.r) / 2 : ((x - x0) * (W - pad.l - pad.r)) / (x1 - x0));
  const sy = (y) => H - pad.b - (y * (H - pad.t - pad.b)) / top;
  const chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, 'aria-hidden': 'true', class: 'line-chart' },
    svg('line', { x1: pad.l, y1: H - pad.b, x2: W - pad.r, y2: H - pad.b, class: 'axis' }),
    svg('line', { x1: pad.l, y1: pad.t, x2: pad.l, y2: H - pad.b, class: 'axis' }),
    svg('text', { x: 2, y: pad.t + 8, class: 'chart-note' }, String(Math.round(top))),
    svg('text', { x: 2, y: H - pad.b, class: 'chart-note' }, '0'),
    svg('text', { x: pad.l, y: H - 4, class: 'chart-note' }, opts.from),
    svg('text', { x: W - pad.r, y: H - 4, class: 'chart-note', 'text-anchor': 'end' }, opts.to));
  series.forEach((s, i) => {
    const d = s.points.map((p, j) => (j ? 'L' : 'M') + sx(p[0]).toFixed(1) + ' ' + sy(p[1]).toFixed(1)).join(' ');
    chart.append(svg('path', { d, class: 'line series-' + (i % 5), 'data-series': s.name }));
    for (const p of s.points) {
      chart.append(svg('circle', { cx: sx(p[0]).toFixed(1), cy: sy(p[1]).toFixed(1), r: 2.5, class: 'series-' + (i % 5) }));
    }
  });
  return chart;
}

/** Horizontal bars of [{label, value in [0,1], text}] (a share each); aria-hidden. */
function shareBars(rows) {
  const W = 300;
  const rowH = 22;
  const labelW = 120;
  const chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + Math.max(rowH, rowH * rows.length), 'aria-hidden': 'true',
    class: 'bars' });
  rows.forEach((r, i) => {
    const y = i * rowH;
    const width = ((W - labelW - 44) * Math.max(0, Math.min(1, r.value)));
    chart.append(
      svg('text', { x: 0, y: y + 15, class: 'bar-label' }, snippet(r.label, 18)),
      svg('rect', { x: labelW, y: y + 4, width: (W - labelW - 44).toFixed(1), height: 14, class: 'bar-track' }),
      svg('rect', { x: labelW, y: y + 4, width: width.toFixed(1), height: 14, class: 'bar-all', 'data-label': r.label }),
      svg('text', { x: W - 40, y: y + 15, class: 'bar-value' }, Math.round(100 * r.value) + '%'));
  });
  return chart;
}

/** One chart with its caption, a legend, and the same numbers as a list for screen readers. */
function figure(id, caption, picture, lines, legend) {
  return el('figure', { id, 'aria-labelledby': id + '-caption' },
    el('figcaption', { id: id + '-caption' }, caption),
    picture,
    legend ? el('ul', { class: 'legend', 'aria-hidden': 'true' }, legend.map((name, i) =>
      el('li', {}, el('span', { class: 'swatch series-' + (i % 5) }), snippet(name, 28)))) : null,
    el('ul', { class: 'sr-only chart-text', id: id + '-text' }, lines.map((line) => el('li', {}, line))));
}

const emptyFigure = (id, caption, text) => el('figure', { id }, el('figcaption', {}, caption), el('p', { class: 'empty' }, text));

async function projectMemories(project) {
  const out = [];
  let cursor = null;
  for (let page = 0; page < CHART_PAGES; page += 1) {
    const params = new URLSearchParams({ project, limit: '100' });
    if (cursor) params.set('cursor', cursor);
    const result = await api('GET', '/v1/memories?' + params.toString());
    out.push(...(result.memories || []));
    cursor = result.next_cursor;
    if (!cursor) return { memories: out, complete: true };
  }
  return { memories: out, complete: false };
}

function growthFigure(perProject) {
  const series = perProject.filter((p) => p.memories.length).map((p) => ({
    name: p.project, complete: p.complete,
    points: growth(p.memories).map(([day, n]) => [Date.parse(day + 'T00:00:00Z'), n]), days: growth(p.memories),
  }));
  if (!series.length) return emptyFigure('chart-growth', 'Memories over time', 'No memories yet.');
  const days = series.flatMap((s) => s.days.map((d) => d[0])).sort();
  const lines = series.map((s) => s.name + ': ' + s.days.map(([day, n]) => plural(n, 'memory', 'memories') + ' by ' + day)
    .join(', ') + (s.complete ? '' : ' (the newest ' + (CHART_PAGES * 100) + ' only)'));
  return figure('chart-growth', 'Memories over time (held now, by the day stored)',
    lineChart(series, { from: days[0], to: days[days.length - 1] }), lines, series.map((s) => s.name));
}

function feedbackFigure(perProject) {
  const rows = perProject.map((p) => {
    const up = p.memories.reduce((n, m) => n + (m.helpful || 0), 0);
    const down = p.memories.reduce((n, m) => n + (m.unhelpful || 0), 0);
    return { label: p.project, up, down, value: up + down ? up / (up + down) : 0 };
  }).filter((r) => r.up + r.down > 0);
  if (!rows.length) return emptyFigure('chart-feedback', 'Feedback', 'No votes yet.');
  return figure('chart-feedback', 'Feedback: share of votes that said helpful', shareBars(rows),
    rows.map((r) => r.label + ': ' + r.up + ' helpful, ' + r.down + ' not helpful (' + Math.round(100 * r.value) + '% helpful)'));
}

function solutionsFigure(solutions) {
  // The bars are the API's rate (the lower bound), the same number the list and the detail give.
  const rows = solutions.filter((s) => s.success_count + s.failure_count > 0).slice(0, 10).map((s) => ({
    label: s.title, text: successText(s.success_count, s.failure_count, s.success_rate), value: s.success_rate || 0,
  }));
  if (!rows.length) return emptyFigure('chart-solutions', 'Solution success', 'No outcomes recorded yet.');
  return figure('chart-solutions', 'Solution success (lower bound of the share that worked)', shareBars(rows),
    rows.map((r) => r.label + ': ' + r.text));
}

function latencyFigure() {
  const seen = state.latencies;
  if (!seen.length) return emptyFigure('chart-latency', 'Search latency', 'No searches from this tab yet.');
  const sorted = seen.map((l) => l.ms).sort((a, b) => a - b);
  const median = sorted[Math.floor((sorted.length - 1) / 2)];
  return figure('chart-latency', 'Search latency seen by this tab (ms, round trip; median ' + median + ')',
    lineChart([{ name: 'search', points: seen.map((l, i) => [i + 1, l.ms]) }], { from: 'search 1', to: 'search ' + seen.length }),
    seen.map((l, i) => 'search ' + (i + 1) + ': ' + l.ms + ' ms'));
}

function drawLatency() {
  const old = $('chart-latency');
  if (old) old.replaceWith(latencyFigure());
}

async function renderCharts(button) {
  // The open project, then the largest others.
  const biggest = [...state.projects].filter((p) => p.memories > 0)
    .sort((a, b) => (b.project === state.project) - (a.project === state.project) || b.memories - a.memories)
    .slice(0, CHART_PROJECTS);
  await run('Charts', button, async () => {
    const perProject = [];
    for (const p of biggest) perProject.push({ project: p.project, ...(await projectMemories(p.project)) });
    const solutions = (await api('GET', '/v1/solutions?limit=100')).solutions || [];
    $('charts').replaceChildren(growthFigure(perProject), latencyFigure(), feedbackFigure(perProject),
      solutionsFigure(solutions));
  });
}

export function wireCharts() {
  $('charts-refresh').addEventListener('click', (e) => { clearMessages(); renderCharts(e.currentTarget); });
}
