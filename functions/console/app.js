/* Capsule Memory console: a small client of the public HTTP API (/v1), with the same auth.
 *
 * The entry module, the one index.html loads (<script type="module">): routing (which view the
 * address shows, opening a project), the wiring of every view and the start-up. The views are
 * native ES modules beside it: no framework, no build step, nothing fetched but these files.
 * Every piece of memory text reaches the page through textContent (see el() in dom.js), never
 * through innerHTML, so stored text cannot inject markup.
 */

import { PROJECT_KEY, state } from './state.js';
import { $ } from './dom.js';
import { clearMessages, onUnauthorized, renderActivity, wireMessages } from './messages.js';
import { go, nav, parseHash, registerNavigation, showView } from './router.js';
import { wireCharts } from './charts.js';
import { renderProjects, wireProjects } from './projects.js';
import { loadMemories, renderForgotten, wireMemories } from './memories.js';
import { closeDetail, openMemoryFromAddress, showDetail, wireDetail } from './detail.js';
import { wireSearch } from './search.js';
import { loadCandidates, wireCapture } from './capture.js';
import { enterAudit, wireActivity } from './activity.js';
import { wireDropzone } from './ingest.js';
import { loadSolutions, wireSolutions } from './solutions.js';
import { wirePatterns } from './patterns.js';
import { loadKeys, wireKeys } from './keys.js';
import { enterTable, wireTable } from './table.js';
import { wireTransfer } from './transfer.js';
import { loadSync, wireSync } from './sync.js';
import { enterUsage, wireUsage } from './usage.js';
import { connect, signOut, wireSession } from './session.js';

async function openProject(name) {
  if (name !== state.project) {
    clearMessages();
    state.lastQuery = '';
    state.cursor = null;
    $('hit-list').replaceChildren();
    $('search-explanation').textContent = '';
    $('search-results').hidden = true;
    closeDetail();
    $('ingest-results').replaceChildren();  // they were the last project's
    $('ingest-progress').textContent = '';
    $('candidate-list').replaceChildren();
    $('candidates-explanation').textContent = '';
    state.candCursor = null;
    $('capture-threshold').value = '';
  }
  state.project = name;
  sessionStorage.setItem(PROJECT_KEY, name);
  $('project-name').textContent = name;
  $('project-name').title = name;
  $('project-input').value = '';
  renderProjects();
  await Promise.all([loadMemories(false), loadCandidates(false)]);
}

async function route() {
  if (!state.token || $('workspace').hidden) return;
  const { view, params } = parseHash();
  const changed = view !== nav.shown;
  nav.shown = view;
  showView(view);
  if (changed && document.activeElement && document.activeElement.classList.contains('nav-link')) {
    $('view-' + view + '-title').focus();
  }
  const project = params.get('project');
  if (project && project !== state.project) await openProject(project);
  if (view === 'memories') await enterTable(params, changed);
  else if (view === 'activity') await enterAudit(params, changed);
  else if (view === 'usage') await enterUsage(params);
  else if (view === 'sync' && changed) await loadSync(null);
  else if (view === 'projects' && params.get('memory')) await openMemoryFromAddress(params.get('memory'));
  else if (view === 'solutions' && !$('solution-list').children.length) await loadSolutions(null, true);
  else if (view === 'keys' && !$('key-list').children.length) await loadKeys(null, true);
}

function wire() {
  wireSession();
  wireProjects();
  wireMemories();
  wireSearch();
  wireDropzone();
  wireDetail();
  wireSolutions();
  wireKeys();
  wireCharts();
  wirePatterns();
  wireCapture();
  wireTable();
  wireActivity();
  wireUsage();
  wireSync();
  wireTransfer();
  wireMessages();
  window.addEventListener('hashchange', () => { route(); });
  document.querySelector('.skip-link').addEventListener('click', (event) => {
    event.preventDefault();  // the view's address stays in the bar
    $('workspace-main').focus();
  });
  document.addEventListener('keydown', (event) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
    if (event.key === '/' && !typing && !$('workspace').hidden) {
      event.preventDefault();
      if (parseHash().view !== 'search') {
        go('search', state.project ? new URLSearchParams({ project: state.project }) : null);
        showView('search');  // at once, so the field can take the focus now
      }
      $('search-query').focus();
    }
  });
}

registerNavigation({ route, openProject, showDetail });
onUnauthorized(signOut);
wire();
renderForgotten();
renderActivity();
if (state.token) connect(state.token);
else $('token').focus();
