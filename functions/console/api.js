/* Capsule Memory console: the API (/v1) over fetch, with the tab's token: JSON requests, JSON
 * Lines (export) and raw text (import) bodies, ApiError, the count of requests in flight, and
 * the addresses of one memory. */

import { state } from './state.js';
import { $ } from './dom.js';

// ---- the API ------------------------------------------------------------

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** Requests in flight: shown in the top bar, and readable as body[data-pending]. */
let pending = 0;

function setPending(delta) {
  pending += delta;
  document.body.dataset.pending = String(pending);
  $('working').hidden = pending === 0;
}

export async function api(method, path, body, extraHeaders) {
  setPending(1);
  try {
    return await request(method, path, body, extraHeaders);
  } finally {
    setPending(-1);
  }
}

async function request(method, path, body, extraHeaders) {
  const headers = Object.assign({ Accept: 'application/json' }, extraHeaders || {});
  if (state.token) headers.Authorization = 'Bearer ' + state.token;
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (exc) {
    throw new ApiError(0, 'unreachable', 'The server did not answer: ' + exc.message, null);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (_) {
    data = null;
  }
  if (!response.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(response.status, err.code || 'http_' + response.status,
      err.message || 'The server answered ' + response.status + ' ' + response.statusText,
      err.details === undefined ? null : err.details);
  }
  return data || {};
}

/** A JSON Lines answer (the export): its text and the next page's cursor. */
export async function apiLines(path) {
  setPending(1);
  try {
    const headers = { Accept: 'application/x-ndjson, application/json', Authorization: 'Bearer ' + state.token };
    let response;
    try {
      response = await fetch(path, { headers, cache: 'no-store' });
    } catch (exc) {
      throw new ApiError(0, 'unreachable', 'The server did not answer: ' + exc.message, null);
    }
    const text = await response.text();
    if (!response.ok) {
      let err = {};
      try { err = JSON.parse(text).error || {}; } catch (_) { err = {}; }
      throw new ApiError(response.status, err.code || 'http_' + response.status, err.message || text, err.details);
    }
    return { text, next: response.headers.get('X-Capsule-Next-Cursor') };
  } finally {
    setPending(-1);
  }
}

export const memoryPath = (id, action) =>
  '/v1/memories/' + encodeURIComponent(id) + (action ? '/' + action : '');

export async function apiText(method, path, text, type) {
  setPending(1);
  try {
    let response;
    try {
      response = await fetch(path, { method, cache: 'no-store', body: text,
        headers: { Accept: 'application/json', 'Content-Type': type, Authorization: 'Bearer ' + state.token } });
    } catch (exc) {
      throw new ApiError(0, 'unreachable', 'The server did not answer: ' + exc.message, null);
    }
    let data = null;
    try { data = JSON.parse(await response.text()); } catch (_) { data = null; }
    if (!response.ok) {
      const err = (data && data.error) || {};
      throw new ApiError(response.status, err.code || 'http_' + response.status, err.message || 'HTTP ' + response.status,
        err.details === undefined ? null : err.details);
    }
    return data || {};
  } finally {
    setPending(-1);
  }
}
