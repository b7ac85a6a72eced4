/* Capsule Memory console: the Transfer view: export (JSON Lines, page by page) and import of
 * an export, split into bodies the API takes. */

import { state } from './state.js';
import { $, download } from './dom.js';
import { plural, utf8Bytes } from './format.js';
import { apiLines, apiText } from './api.js';
import { clearMessages, run, say } from './messages.js';
import { refuse } from './limits.js';
import { loadProjects, requireProject } from './projects.js';

// ---- export and import (the whole product) ----------------------------------------------------

async function exportData(button) {
  clearMessages();
  const whole = $('export-all').checked;
  if (!whole && !requireProject('Export')) return;
  const bar = $('export-bar');
  bar.hidden = false;
  bar.removeAttribute('value');  // how many pages follow is not known ahead: an indeterminate bar
  const parts = [];
  await run('Export', button, async () => {
    let cursor = null;
    do {
      const query = new URLSearchParams();
      if (!whole) query.set('project', state.project);
      if (cursor) query.set('cursor', cursor);
      const page = await apiLines('/v1/export' + (query.toString() ? '?' + query.toString() : ''));
      parts.push(page.text);
      cursor = page.next;
      $('export-progress').textContent = 'Read ' + plural(parts.length, 'page', 'pages')
        + (cursor ? '; more follows…' : '.');
    } while (cursor);
    const text = parts.join('');
    const name = 'capsule-export' + (whole ? '' : '-' + state.project.replace(/[^A-Za-z0-9_.-]+/g, '_')) + '.jsonl';
    download(name, text, 'application/x-ndjson');
    bar.value = 1;
    const lines = text.split('\n').filter(Boolean).length;
    $('export-progress').textContent = 'Saved ' + name + ': ' + plural(lines, 'line', 'lines') + ' in '
      + plural(parts.length, 'page', 'pages') + '.';
    say('Export', 'Exported ' + (whole ? 'every project' : state.project) + ' (' + plural(lines, 'line', 'lines') + ').');
  });
  bar.value = 1;
}

/** Split an export into bodies the API takes: each starts with the header line, none over the limit. */
function importParts(text) {
  const lines = text.split('\n').filter((l) => l.trim());
  if (!lines.length) return { problem: 'empty' };
  const header = lines[0] + '\n';
  const budget = 1048576 - utf8Bytes(header);
  const parts = [];
  let current = [];
  let size = 0;
  for (const line of lines.slice(1)) {
    const bytes = utf8Bytes(line) + 1;
    if (bytes > budget) return { problem: 'holding a line of ' + bytes + ' bytes, over the 1 MiB a request takes' };
    if (size + bytes > budget && current.length) {
      parts.push(header + current.join(''));
      current = [];
      size = 0;
    }
    current.push(line + '\n');
    size += bytes;
  }
  parts.push(header + current.join(''));
  return { parts };
}

async function importData(event) {
  event.preventDefault();
  clearMessages();
  const file = $('import-data-file').files[0];
  if (!file) return refuse('Import data', 'import-data-file', 'Choose an export file (JSON Lines).');
  const text = await file.text();
  const split = importParts(text);
  if (split.problem) return refuse('Import data', 'import-data-file', 'The file is ' + split.problem + '.');
  const bar = $('import-bar');
  bar.hidden = false;
  bar.max = split.parts.length;
  bar.value = 0;
  const total = { imported: 0, skipped: 0, refused: 0 };
  await run('Import data', $('import-data-button'), async () => {
    for (const [i, part] of split.parts.entries()) {
      const result = await apiText('POST', '/v1/import', part, 'application/x-ndjson');
      const sum = (o) => Object.values(o || {}).reduce((a, b) => a + b, 0);
      total.imported += sum(result.imported);
      total.skipped += sum(result.skipped);
      total.refused += result.refused_total || 0;
      bar.value = i + 1;
      $('import-progress').textContent = 'Sent part ' + (i + 1) + ' of ' + split.parts.length + ': '
        + total.imported + ' imported, ' + total.skipped + ' already present, ' + total.refused + ' refused.';
    }
    $('import-data-file').value = '';
    say('Import data', 'Imported ' + file.name + ': ' + total.imported + ' rows imported, ' + total.skipped
      + ' already present, ' + total.refused + ' refused.');
    await loadProjects();
  });
}

export function wireTransfer() {
  $('export-button').addEventListener('click', (e) => exportData(e.currentTarget));
  $('import-data-form').addEventListener('submit', importData);
}
