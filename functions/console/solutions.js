/* Capsule Memory console: the Solutions view: the list, one solution's detail (steps rendered
 * by kind: command, diff, copy, env), fixpack import, recording an outcome, and the editor
 * (create, edit, delete). */

import { state } from './state.js';
import { $, el } from './dom.js';
import { plural, successText } from './format.js';
import { api } from './api.js';
import { clearMessages, run, say } from './messages.js';
import { LIMITS, readTextFile, refuse } from './limits.js';

// ---- solutions (read-only) -----------------------------------------------------

export async function loadSolutions(button, keepMessages) {
  if (!keepMessages) clearMessages();
  await run('Solutions', button, async () => {
    const result = await api('GET', '/v1/solutions?limit=50');
    $('solutions-explanation').textContent = result.explanation || '';
    const list = $('solution-list');
    list.replaceChildren();
    for (const s of result.solutions || []) {
      list.append(el('li', { 'data-id': s.id },
        el('button', { type: 'button', class: 'solution-item', 'aria-label': 'Open solution: ' + s.title,
          onclick: (e) => openSolution(s.id, e.currentTarget) },
        el('span', { class: 'solution-item-title' }, s.title),
        el('span', { class: 'project-item-counts' },
          s.category + ' · ' + plural((s.steps || []).length, 'step', 'steps') + ' · '
          + successText(s.success_count, s.failure_count, s.success_rate)))));
    }
    if (!list.children.length) list.append(el('li', { class: 'empty' }, 'No solutions yet.'));
  });
}

function solutionSummary(s) {
  return s.category + (s.component ? ' · ' + s.component : '')
    + ' · ' + successText(s.success_count, s.failure_count, s.success_rate);
}

async function openSolution(id, button) {
  clearMessages();
  await run('Solution', button, async () => {
    const result = await api('GET', '/v1/solutions/' + encodeURIComponent(id));
    const s = result.solution;
    state.solution = s;
    $('solution-detail').dataset.id = s.id;
    $('solution-title').textContent = s.title;
    $('solution-summary').textContent = solutionSummary(s);
    $('solution-description').textContent = s.description || '';
    $('solution-steps').replaceChildren(...(s.steps || []).map((step) =>
      el('li', { class: 'step', 'data-kind': step.kind },
        el('span', { class: 'badge' }, step.kind), ' ',
        step.description ? el('span', {}, step.description + ' ') : null,
        stepBody(step))));
    $('solution-checks').replaceChildren(...(s.checks || []).map((check) =>
      el('li', { class: 'step' }, el('code', {}, check.cmd),
        check.expect_substring ? ' expects "' + check.expect_substring + '"' : '',
        typeof check.expect_exit_code === 'number' ? ' expects exit ' + check.expect_exit_code : '')));
    $('solution-delete-confirm-box').hidden = true;
    $('solution-detail').hidden = false;
    $('solution-title').focus();
  });
}

// ---- fixpack import, outcomes ------------------------------------------------------

async function importFixpack(event) {
  event.preventDefault();
  clearMessages();
  const file = $('import-file').files[0];
  if (!file) return refuse('Import', 'import-file', 'Choose a fixpack file.');
  if (file.size > LIMITS.body) return refuse('Import', 'import-file', 'The file is ' + file.size + ' bytes; the limit is 1 MiB.');
  const read = await readTextFile(file);
  if (read.problem) return refuse('Import', 'import-file', 'The file is ' + read.problem + '.');
  let fixpack;
  try {
    fixpack = JSON.parse(read.text);
  } catch (exc) {
    return refuse('Import', 'import-file', 'The file is not JSON: ' + exc.message);
  }
  if (!fixpack || typeof fixpack !== 'object' || Array.isArray(fixpack)) {
    return refuse('Import', 'import-file', 'A fixpack file holds one JSON object (one solution).');
  }
  await run('Import', $('import-button'), async () => {
    const result = await api('POST', '/v1/solutions/import', fixpack);
    const kept = (result.kept_fields || []).length ? ' Kept as written: ' + result.kept_fields.join(', ') + '.' : '';
    $('import-file').value = '';
    await loadSolutions(null, true);
    await openSolution(result.solution.id, null);
    say('Import', (result.explanation || '') + kept);  // after the opening, which clears the last message
  });
}

async function applySolution(event) {
  event.preventDefault();
  clearMessages();
  const s = state.solution;
  if (!s) return;
  const picked = $('apply-worked').checked ? true : $('apply-failed').checked ? false : null;
  if (picked === null) return refuse('Outcome', 'apply-worked', 'Say whether applying it worked or failed.');
  const body = { success: picked };
  const error = $('apply-error').value.trim();
  if (error) body.error = error;
  const context = $('apply-context').value.trim();
  if (context) body.context = context;
  const tag = $('apply-pattern').value.trim();
  if (tag) body.pattern = { tag, category: s.category };
  if ($('apply-project').checked && state.project) body.project = state.project;
  await run('Outcome', $('apply-button'), async () => {
    const result = await api('POST', '/v1/solutions/' + encodeURIComponent(s.id) + '/apply', body);
    state.solution = result.solution;
    $('solution-summary').textContent = solutionSummary(result.solution);
    await loadSolutions(null, true);  // the list's success rate too
    say('Outcome', result.explanation);
    for (const id of ['apply-worked', 'apply-failed']) $(id).checked = false;
    for (const id of ['apply-error', 'apply-context']) $(id).value = '';
  });
}

function successBadge(worked, failed, rate) {
  return el('span', { class: 'success-rate' }, successText(worked, failed, rate));
}

// ---- solution steps, rendered by kind ----------------------------------------------------------

function diffLines(text) {
  return String(text).split('\n').map((line) => {
    const kind = line.startsWith('@@') ? 'diff-hunk' : line.startsWith('+') && !line.startsWith('+++') ? 'diff-add'
      : line.startsWith('-') && !line.startsWith('---') ? 'diff-del' : null;
    return el('span', { class: kind || 'diff-line' }, line + '\n');
  });
}

/** A step's body by its kind: a command as a command, a patch as a diff, the rest as its fields. */
function stepBody(step) {
  const p = step.payload || {};
  const str = (v) => (typeof v === 'string' ? v : null);
  const command = str(p.command) || str(p.run) || (step.kind === 'script' ? str(p.script) : null);
  if ((step.kind === 'cmd' || step.kind === 'script') && command !== null) {
    const where = str(p.cwd) ? el('span', { class: 'hint' }, 'in ' + p.cwd) : null;
    return [el('pre', { class: 'step-body', 'data-render': step.kind }, el('code', { class: 'cmd' }, command)), where];
  }
  if (step.kind === 'patch') {
    if (str(p.diff) !== null) {
      return [el('pre', { class: 'step-body', 'data-render': 'diff' },
        el('code', { class: 'diff' }, str(p.file) ? '--- ' + p.file + '\n' : '', diffLines(p.diff)))];
    }
    const minus = String(p.search ?? '').split('\n').map((l) => '-' + l).join('\n');
    const plus = String(p.replace ?? '').split('\n').map((l) => '+' + l).join('\n');
    return [el('pre', { class: 'step-body', 'data-render': 'diff' },
      el('code', { class: 'diff' }, diffLines('--- ' + (p.file || '?') + '\n+++ ' + (p.file || '?') + '\n' + minus + '\n' + plus)))];
  }
  if (step.kind === 'copy') {
    const from = p.from || p.src;
    const to = p.to || p.dst;
    return [el('pre', { class: 'step-body', 'data-render': 'copy' }, el('code', {}, 'copy ' + from + ' → ' + to))];
  }
  if (step.kind === 'env') {
    const pairs = p.set && typeof p.set === 'object' ? Object.entries(p.set) : [[p.key || p.variable, p.value]];
    return [el('pre', { class: 'step-body', 'data-render': 'env' },
      el('code', {}, pairs.map(([k, v]) => k + '=' + v).join('\n') + (p.file ? '\n# in ' + p.file : '')))];
  }
  return [el('pre', { class: 'step-body', 'data-render': 'fields' }, el('code', {}, JSON.stringify(p, null, 2)))];
}

// ---- solutions: create, edit, delete ------------------------------------------------------

let editing = null;  // the solution being edited, or null for a new one

function stepLine(step) {
  const p = step.payload || {};
  const command = typeof p.command === 'string' ? p.command : null;
  const plain = step.kind === 'cmd' && command !== null && Object.keys(p).length === 1 && !step.description
    && !command.includes('\n') && !command.trim().startsWith('{');
  if (plain) return command;
  const out = { kind: step.kind, payload: p };
  if (step.description) out.description = step.description;
  return JSON.stringify(out);
}

function parseSteps(text) {
  const steps = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line) continue;
    if (line.startsWith('{')) {
      let step;
      try {
        step = JSON.parse(line);
      } catch (exc) {
        return { problem: 'Step line ' + (i + 1) + ' is not JSON: ' + exc.message };
      }
      if (!step || typeof step !== 'object' || typeof step.kind !== 'string') {
        return { problem: 'Step line ' + (i + 1) + ' needs a "kind" and a "payload".' };
      }
      steps.push(Object.assign({}, step, { step_order: steps.length + 1 }));
    } else {
      steps.push({ step_order: steps.length + 1, kind: 'cmd', payload: { command: line } });
    }
  }
  return { steps };
}

function openEditor(solution) {
  editing = solution;
  $('solution-editor-summary').textContent = solution ? 'Edit: ' + solution.title : 'New solution';
  $('sol-title').value = solution ? solution.title : '';
  $('sol-category').value = solution ? solution.category || '' : '';
  $('sol-description').value = solution ? solution.description || '' : '';
  $('sol-signature').value = solution && (solution.signatures || [])[0] ? solution.signatures[0].text : '';
  $('sol-steps').value = solution ? (solution.steps || []).map(stepLine).join('\n') : '';
  $('solution-editor').open = true;
  $('sol-title').focus();
}

function keptSignature(sig) {
  const out = { text: sig.text };
  if ((sig.regexes || []).length) out.regexes = sig.regexes;
  if (sig.meta && Object.keys(sig.meta).length) out.meta = sig.meta;
  return out;
}

function keptCheck(c) {
  const out = { check_order: c.check_order, cmd: c.cmd };
  for (const k of ['expect_substring', 'expect_exit_code', 'timeout_ms']) if (c[k] !== null && c[k] !== undefined) out[k] = c[k];
  return out;
}

async function saveSolution(event) {
  event.preventDefault();
  clearMessages();
  const operation = editing ? 'Edit solution' : 'Create solution';
  const title = $('sol-title').value.trim();
  if (!title) return refuse(operation, 'sol-title', 'A solution needs a title.');
  const signature = $('sol-signature').value.trim();
  if (!signature) return refuse(operation, 'sol-signature', 'Give the error it fixes (its signature).');
  const parsed = parseSteps($('sol-steps').value);
  if (parsed.problem) return refuse(operation, 'sol-steps', parsed.problem);
  const body = { title, description: $('sol-description').value.trim(), signatures: [{ text: signature }], steps: parsed.steps };
  const category = $('sol-category').value.trim();
  if (category) body.category = category;
  if (editing) {
    const others = (editing.signatures || []).slice(1).map(keptSignature);
    const first = (editing.signatures || [])[0];
    body.signatures = [first && first.text === signature ? keptSignature(first) : { text: signature }, ...others];
    body.checks = (editing.checks || []).map(keptCheck);
    for (const k of ['component', 'tags', 'project_root', 'repo_name', 'package_manager', 'monorepo_tool']) {
      if (editing[k] !== null && editing[k] !== undefined && !(Array.isArray(editing[k]) && !editing[k].length)) body[k] = editing[k];
    }
  }
  await run(operation, $('sol-save'), async () => {
    const result = editing
      ? await api('PUT', '/v1/solutions/' + encodeURIComponent(editing.id), body)
      : await api('POST', '/v1/solutions', body);
    editing = null;
    $('solution-editor').open = false;
    $('solution-form').reset();
    $('solution-editor-summary').textContent = 'New solution';
    await loadSolutions(null, true);
    await openSolution(result.solution.id, null);
    say(operation, result.explanation || 'Saved ' + result.solution.title + '.');
  });
}

async function deleteSolution(button) {
  const s = state.solution;
  if (!s) return;
  await run('Delete solution', button, async () => {
    const result = await api('DELETE', '/v1/solutions/' + encodeURIComponent(s.id));
    $('solution-delete-confirm-box').hidden = true;
    $('solution-detail').hidden = true;
    state.solution = null;
    await loadSolutions(null, true);
    say('Delete solution', (result && result.explanation) || 'Deleted ' + s.title + '.');
    $('solutions-title').focus();
  });
}

function wireSolutionEditor() {
  $('solution-form').addEventListener('submit', saveSolution);
  $('sol-cancel').addEventListener('click', () => {
    editing = null;
    $('solution-form').reset();
    $('solution-editor-summary').textContent = 'New solution';
    $('solution-editor').open = false;
  });
  $('solution-edit').addEventListener('click', () => { if (state.solution) openEditor(state.solution); });
  $('solution-delete').addEventListener('click', () => {
    $('solution-delete-confirm-box').hidden = false;
    $('solution-delete-confirm').focus();
  });
  $('solution-delete-cancel').addEventListener('click', () => {
    $('solution-delete-confirm-box').hidden = true;
    $('solution-delete').focus();
  });
  $('solution-delete-confirm').addEventListener('click', (e) => deleteSolution(e.currentTarget));
}

export function wireSolutions() {
  $('solutions-refresh').addEventListener('click', (event) => loadSolutions(event.currentTarget));
  $('import-form').addEventListener('submit', importFixpack);
  $('apply-form').addEventListener('submit', applySolution);
  wireSolutionEditor();
}
