/* Capsule Memory console: ingesting text files (Projects view): chosen or dropped, checked
 * against the API's limits, sent one by one, each file's chunks listed. */

import { state } from './state.js';
import { $, el } from './dom.js';
import { parseTags, plural, shortId, utf8Bytes } from './format.js';
import { api } from './api.js';
import { clearMessages, logActivity, run } from './messages.js';
import { LIMITS, readTextFile, refuse, tagsProblem } from './limits.js';
import { loadProjects, requireProject } from './projects.js';
import { loadMemories } from './memories.js';
import { showDetail } from './detail.js';

function chunkList(result) {
  const total = result.chunks || result.ids.length;
  return el('ol', { class: 'chunk-ids', 'aria-label': 'Chunks' }, result.ids.map((id, i) =>
    el('li', { 'data-id': id },
      el('button', { type: 'button', class: 'btn btn-link', 'aria-label': 'Show chunk ' + (i + 1) + ' of ' + total,
        onclick: (e) => showDetail({ id }, e.currentTarget) }, 'chunk ' + (i + 1) + ' of ' + total),
      ' ', el('code', { class: 'mem-id', title: id }, shortId(id)),
      result.deduplicated && result.deduplicated.includes(id) ? ' (already stored)' : '')));
}

async function ingestFiles(files) {
  clearMessages();
  if (!requireProject('Ingest')) return;
  if (!files.length) return refuse('Ingest', 'ingest-files', 'Choose or drop at least one file.');
  const tags = parseTags($('ingest-tags').value);
  const problem = tagsProblem(tags);
  if (problem) return refuse('Ingest', 'ingest-tags', problem);
  const out = $('ingest-results');
  out.replaceChildren();
  let stored = 0;
  for (const [n, file] of files.entries()) {
    $('ingest-progress').textContent = 'Ingesting file ' + (n + 1) + ' of ' + files.length + ': ' + file.name;
    const row = el('li', { 'data-file': file.name }, el('strong', {}, file.name), ' ');
    out.append(row);
    const read = await readTextFile(file);
    if (read.problem) {
      row.append(el('span', { class: 'badge badge-failure' }, 'refused'), ' ' + read.problem + '; not sent.');
      continue;
    }
    const body = { project: state.project, text: read.text, path: file.name.slice(0, 1024),
      pinned: $('ingest-pinned').checked, meta: { author: 'console', source: 'console upload' } };
    if (tags.length) body.tags = tags;
    const envelope = utf8Bytes(JSON.stringify(body));
    if (envelope > LIMITS.body) {  // the text's JSON escapes can make the body longer than the text
      row.append(el('span', { class: 'badge badge-failure' }, 'refused'),
        ' as JSON it is ' + envelope + ' bytes; one request holds at most ' + LIMITS.body + '; not sent.');
      continue;
    }
    await run('Ingest', $('ingest-button'), async () => {
      const result = await api('POST', '/v1/memories/ingest', body);
      stored += 1;
      row.append(el('span', {}, plural(result.chunks, 'chunk', 'chunks') + '. ' + (result.explanation || '')),
        chunkList(result));
    });
    if (!row.querySelector('.chunk-ids') && !row.querySelector('.badge')) {
      row.append(el('span', { class: 'badge badge-failure' }, 'failed'), ' see the error above.');
    }
  }
  $('ingest-progress').textContent = 'Ingested ' + stored + ' of ' + plural(files.length, 'file', 'files') + '.';
  $('ingest-files').value = '';
  if (stored) {
    logActivity('Ingest', $('ingest-progress').textContent, false);
    await Promise.all([loadMemories(false), loadProjects()]);
  }
}

export function wireDropzone() {
  const zone = $('dropzone');
  const over = (on) => (event) => {
    event.preventDefault();
    zone.classList.toggle('is-over', on);
  };
  zone.addEventListener('dragenter', over(true));
  zone.addEventListener('dragover', over(true));
  zone.addEventListener('dragleave', over(false));
  // A file dropped beside the zone is not opened by the browser in place of the console.
  for (const type of ['dragover', 'drop']) {
    document.addEventListener(type, (event) => { if (!zone.contains(event.target)) event.preventDefault(); });
  }
  zone.addEventListener('drop', (event) => {
    over(false)(event);
    ingestFiles([...((event.dataTransfer && event.dataTransfer.files) || [])]);
  });
  $('ingest-form').addEventListener('submit', (event) => {
    event.preventDefault();
    ingestFiles([...$('ingest-files').files]);
  });
}
