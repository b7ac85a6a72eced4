/* Capsule Memory console: the capture queue (Capture view): candidates proposed from
 * conversations, approved (with edited text) or rejected (with a reason), and the threshold. */

import { latest, PAGE_SIZE, state } from './state.js';
import { $, el } from './dom.js';
import { fixed, shortId, snippet, utf8Bytes, whenText } from './format.js';
import { api, ApiError } from './api.js';
import { clearMessages, run, say } from './messages.js';
import { LIMITS, refuse } from './limits.js';
import { loadProjects, requireProject } from './projects.js';
import { loadMemories } from './memories.js';

// ---- the capture queue: candidates proposed from conversations (capsule.capture) ---------

const candidatePath = (id, action) => '/v1/memories/candidates/' + encodeURIComponent(id) + '/' + action;

export async function loadCandidates(more) {
  if (!state.project) return;
  const params = new URLSearchParams({ project: state.project, status: state.candStatus, limit: String(PAGE_SIZE) });
  if (more && state.candCursor) params.set('cursor', state.candCursor);
  const ticket = ++latest.candidates;
  await run('Candidates', more ? $('candidates-more') : null, async () => {
    const result = await api('GET', '/v1/memories/candidates?' + params.toString());
    if (ticket !== latest.candidates) return;  // a newer listing (another project or status) wins
    const list = $('candidate-list');
    if (!more) list.replaceChildren();
    for (const c of result.candidates || []) list.append(candidateItem(c));
    if (!list.children.length) list.append(el('li', { class: 'empty' }, 'No ' + state.candStatus + ' candidates.'));
    state.candCursor = result.next_cursor || null;
    $('candidates-more').hidden = !state.candCursor;
    $('candidates-explanation').textContent = result.explanation || '';
  });
}

function setCandidateStatus(status) {
  clearMessages();
  state.candStatus = status;
  for (const s of ['pending', 'approved', 'rejected']) $('cand-' + s).setAttribute('aria-pressed', String(s === status));
  state.candCursor = null;
  loadCandidates(false);
}

function candidateItem(c) {
  const badges = [
    el('span', { class: 'badge' }, c.type),
    el('span', { class: 'badge badge-score', 'data-score': c.score }, 'score ' + fixed(c.score)),
    el('span', { class: 'badge' }, c.role),
    c.session ? el('span', { class: 'badge', title: 'session' }, 'session ' + c.session) : null,
    c.status !== 'pending' ? el('span', { class: 'badge badge-' + (c.status === 'approved' ? 'success' : 'failure') }, c.status) : null,
    (c.tags || []).map((t) => el('span', { class: 'tag' }, '#' + t)),
  ];
  const decided = c.status === 'pending' ? null : el('p', { class: 'hint cand-decided' },
    c.status + ' ' + (c.decided_at || '') + (c.memory_id ? ' · memory ' + c.memory_id : '') + (c.note ? ' · ' + c.note : ''));
  const label = snippet(c.text, 40);
  const actions = c.status !== 'pending' ? null : el('div', { class: 'actions' },
    el('button', { type: 'button', class: 'btn btn-small btn-good', 'data-action': 'Approve',
      'aria-label': 'Approve: ' + label, onclick: (e) => askDecision(c, e.currentTarget, true) }, 'Approve'),
    el('button', { type: 'button', class: 'btn btn-small btn-danger', 'data-action': 'Reject',
      'aria-label': 'Reject: ' + label, onclick: (e) => askDecision(c, e.currentTarget, false) }, 'Reject'));
  return el('li', { class: 'card-item cand', 'data-id': c.id, 'data-status': c.status },
    el('article', { class: 'card' }, el('div', { class: 'card-body' },
      el('div', { class: 'meta' }, ...badges),  // spread: el() flattens one level, the tags are a level down
      el('p', { class: 'content cand-text' }, c.text),
      el('p', { class: 'hint cand-reason' }, 'Why: ' + c.reason),
      decided,
      el('div', { class: 'foot' }, el('code', { class: 'mem-id', title: c.id }, shortId(c.id)),
        el('time', { datetime: c.created_at, title: c.created_at }, whenText(c.created_at))),
      actions)));
}

async function saveThreshold(event) {
  event.preventDefault();
  clearMessages();
  if (!requireProject('Threshold')) return;
  const raw = $('capture-threshold').value.trim();
  const threshold = raw === '' ? NaN : Number(raw);
  if (!(threshold >= 0 && threshold <= 1)) {  // ThresholdRequest.threshold
    return refuse('Threshold', 'capture-threshold', 'The threshold is a number from 0 to 1.');
  }
  await run('Threshold', $('threshold-save'), async () => {
    const result = await api('PUT', '/v1/memories/capture/settings', { project: state.project, threshold });
    $('capture-threshold').value = String(result.threshold);
    say('Threshold', result.explanation);
  });
}

/** Approve or reject in place: the card's actions become a small form (edited text, or a reason). */
function askDecision(c, button, approve) {
  clearMessages();
  const bar = button.closest('.actions');
  const keep = [...bar.childNodes];
  const fieldId = (approve ? 'approve-text-' : 'reject-reason-') + c.id;
  const field = approve
    ? el('textarea', { id: fieldId, rows: 3, maxlength: LIMITS.content, class: 'cand-field' })
    : el('input', { id: fieldId, maxlength: LIMITS.reason, autocomplete: 'off', class: 'cand-field' });
  if (approve) field.value = c.text;
  const label = el('label', { for: fieldId }, approve ? 'Text to store (edit if you like)' : 'Reason for rejecting (optional)');
  const confirm = el('button', { type: 'button', class: 'btn btn-small ' + (approve ? 'btn-good' : 'btn-danger'),
    'data-action': approve ? 'Confirm approve' : 'Confirm reject' }, approve ? 'Store as a memory' : 'Confirm reject');
  const cancel = el('button', { type: 'button', class: 'btn btn-small', 'data-action': 'Cancel',
    'aria-label': 'Cancel: ' + snippet(c.text, 40) }, 'Cancel');
  cancel.addEventListener('click', () => { bar.replaceChildren(...keep); keep[approve ? 0 : 1].focus(); });
  confirm.addEventListener('click', () => (approve ? approveCandidate(c, field, confirm) : rejectCandidate(c, field, confirm)));
  bar.replaceChildren(el('div', { class: 'stack cand-form' }, label, field, el('div', { class: 'row' }, confirm, cancel)));
  field.focus();
}

/** 409: another client (or tab) decided this candidate first; nothing was changed here. */
function alreadyDecided(error) {
  if (error.status !== 409) return error;
  return new ApiError(409, error.code, 'This candidate was already decided (approved or rejected) elsewhere; '
    + 'the list is read again. ' + error.message, error.details);
}

async function decide(operation, c, button, action, body) {
  await run(operation, button, async () => {
    let result;
    try {
      result = await api('POST', candidatePath(c.id, action), body);
    } catch (error) {
      if (error.status === 409) await loadCandidates(false);
      throw alreadyDecided(error);
    }
    say(operation, result.explanation);
    await loadCandidates(false);
    if (result.memory) await Promise.all([loadMemories(false), loadProjects()]);
    $('candidates-title').focus();
  });
}

function approveCandidate(c, field, button) {
  const text = field.value;
  const body = {};
  if (text !== c.text) {
    if (!text.trim()) return refuse('Approve', field.id, 'The text to store cannot be empty.');
    if (utf8Bytes(text) > LIMITS.content) return refuse('Approve', field.id, 'The text is over 64 KiB.');
    body.text = text;
  }
  return decide('Approve', c, button, 'approve', body);
}

function rejectCandidate(c, field, button) {
  const reason = field.value.trim();
  return decide('Reject', c, button, 'reject', reason ? { reason } : {});
}

export function wireCapture() {
  for (const status of ['pending', 'approved', 'rejected']) {
    $('cand-' + status).addEventListener('click', () => setCandidateStatus(status));
  }
  $('candidates-more').addEventListener('click', () => loadCandidates(true));
  $('threshold-form').addEventListener('submit', saveThreshold);
  $('candidates-refresh').addEventListener('click', () => { clearMessages(); loadCandidates(false); });
}
