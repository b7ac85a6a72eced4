/* Capsule Memory console: the tab's state (token, project, views' cursors, this tab's votes,
 * forgotten memories, activity and search latencies, kept in session storage) and the tickets
 * that drop late answers. Imports nothing. */

export const TOKEN_KEY = 'capsule.console.token';
export const PROJECT_KEY = 'capsule.console.project';
const FORGOTTEN_KEY = 'capsule.console.forgotten';
export const ACTIVITY_KEY = 'capsule.console.activity';
export const VOTES_KEY = 'capsule.console.votes';
export const LATENCY_KEY = 'capsule.console.latency';
export const PAGE_SIZE = 20;

export const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  project: sessionStorage.getItem(PROJECT_KEY) || '',
  projects: [],
  view: 'recent',
  cursor: null,
  candStatus: 'pending',  // the capture queue's view
  candCursor: null,
  lastQuery: '',
  forgotten: readList(FORGOTTEN_KEY),
  activity: readList(ACTIVITY_KEY),
  votes: readVotes(),
  latencies: readList(LATENCY_KEY),  // this tab's search round trips, [{at, ms}]
  detail: null,  // the memory in the detail view as last read: its sha256 is the edit's If-Match
  solution: null,  // the solution open in its detail
};

// Answers that arrive after a newer request of the same kind was sent are dropped.
export const latest = { list: 0, search: 0, candidates: 0, table: 0, audit: 0 };

function readList(key) {
  try {
    const items = JSON.parse(sessionStorage.getItem(key) || '[]');
    return Array.isArray(items) ? items : [];
  } catch (_) {
    return [];
  }
}

/** This tab's vote per memory id (true: helpful): a vote is sent once, not once per click. */
function readVotes() {
  try {
    const votes = JSON.parse(sessionStorage.getItem(VOTES_KEY) || '{}');
    return votes && typeof votes === 'object' && !Array.isArray(votes) ? votes : {};
  } catch (_) {
    return {};
  }
}

export function saveForgotten() {
  sessionStorage.setItem(FORGOTTEN_KEY, JSON.stringify(state.forgotten));
}
