/* Capsule Memory console: the Patterns view: patterns that match an error, mining them, and
 * golden paths (the fixes that worked for a pattern). */

import { $, el } from './dom.js';
import { fixed, plural, snippet, successText } from './format.js';
import { api } from './api.js';
import { clearMessages, run, say } from './messages.js';
import { refuse } from './limits.js';

// ---- patterns and golden paths -------------------------------------------------------

function linkedText(link) {
  return link.title + ' (' + link.success + ' worked, ' + link.failure + ' failed, '
    + Math.round(100 * (link.success_rate || 0)) + '%)';
}

function patternItem(p, extra) {
  return el('li', { 'data-tag': p.tag },
    el('strong', {}, p.tag), ' ', el('span', { class: 'badge' }, p.category), ' ',
    el('span', { class: 'hint' }, plural(p.occurrences, 'occurrence', 'occurrences')
      + (p.projects && p.projects.length ? ' in ' + p.projects.join(', ') : '')),
    p.description ? el('p', { class: 'content' }, p.description) : null,
    extra || null);
}

async function detectPatterns(event) {
  event.preventDefault();
  clearMessages();
  const error = $('detect-error').value.trim();
  if (!error) return refuse('Patterns', 'detect-error', 'Paste the error to match.');
  const body = { error };
  const category = $('detect-category').value.trim();
  if (category) body.category = category;
  await run('Patterns', $('detect-button'), async () => {
    const result = await api('POST', '/v1/patterns/detect', body);
    $('patterns-explanation').textContent = result.explanation || '';
    $('golden-list').replaceChildren();
    $('pattern-list').replaceChildren(...(result.results || []).map((m) => patternItem(m.pattern,
      el('p', { class: 'hint' }, 'score ' + fixed(m.score) + ' (meaning ' + fixed(m.components.vector)
        + ', terms ' + fixed(m.components.terms) + ')'
        + ((m.matched_terms || []).length ? ' · matched: ' + m.matched_terms.join(', ') : '')
        + ((m.solutions || []).length ? ' · fixes: ' + m.solutions.map(linkedText).join('; ') : '')))));
    if (!$('pattern-list').children.length) $('pattern-list').append(el('li', { class: 'empty' }, 'No pattern matched.'));
  });
}

async function minePatterns(button) {
  clearMessages();
  await run('Mine', button, async () => {
    const result = await api('POST', '/v1/patterns/mine', { min_occurrences: 2, k: 20 });
    say('Mine', result.explanation);
    $('patterns-explanation').textContent = result.explanation || '';
    $('golden-list').replaceChildren();
    $('pattern-list').replaceChildren(...(result.patterns || []).map((p) => patternItem(p)));
    if (!$('pattern-list').children.length) $('pattern-list').append(el('li', { class: 'empty' }, 'No patterns found.'));
  });
}

async function goldenPaths(event) {
  event.preventDefault();
  clearMessages();
  const raw = $('golden-min').value.trim();
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 1000000) {
    return refuse('Golden paths', 'golden-min', 'Applied at least is a whole number from 1 to 1,000,000.');
  }
  const params = new URLSearchParams({ min_applications: raw, k: '20' });
  const category = $('golden-category').value.trim();
  if (category) params.set('category', category);
  await run('Golden paths', $('golden-button'), async () => {
    const result = await api('GET', '/v1/patterns/golden-paths?' + params.toString());
    $('patterns-explanation').textContent = result.explanation || '';
    $('pattern-list').replaceChildren();
    $('golden-list').replaceChildren(...(result.paths || []).map((g) => patternItem(g.pattern,
      el('p', { class: 'golden' }, '→ ' + (g.solution ? g.solution.title : g.fix ? 'the fix in ' + snippet(g.fix.content, 60) : 'no fix') + ': '
        + successText(g.success, g.failure, g.success_rate) + ' for this pattern'))));
    if (!$('golden-list').children.length) $('golden-list').append(el('li', { class: 'empty' }, 'No golden paths yet.'));
  });
}

export function wirePatterns() {
  $('detect-form').addEventListener('submit', detectPatterns);
  $('golden-form').addEventListener('submit', goldenPaths);
  $('mine-button').addEventListener('click', (e) => minePatterns(e.currentTarget));
}
