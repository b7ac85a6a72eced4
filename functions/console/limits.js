/* Capsule Memory console: the API's limits, checked on the page before anything is sent
 * (tags, text files), and refuse(): the error names the field and focus goes to it. */

import { $ } from './dom.js';
import { snippet } from './format.js';
import { ApiError } from './api.js';
import { fail } from './messages.js';

// The API's limits (capsule.core.limits and the request models), checked before anything is sent.
export const LIMITS = { content: 65536, tags: 32, tag: 64, reason: 4096, ttl: 316224000, ingest: 1048576,
  body: 1048576 + 65536 };

/** What is wrong with these tags for the API, or ''. */
export function tagsProblem(tags) {
  if (tags.length > LIMITS.tags) return 'At most ' + LIMITS.tags + ' tags.';
  const long = tags.find((t) => t.length > LIMITS.tag);
  return long ? 'The tag "' + snippet(long, 30) + '" is over ' + LIMITS.tag + ' characters.' : '';
}

/** Refuse on the page (nothing is sent): the error names the field, and focus goes to it. */
export function refuse(operation, inputId, message) {
  fail(operation, new ApiError(0, 'invalid', message, null));
  $(inputId).focus();
}

/** A file's text, or why it cannot be ingested (checked here: nothing over the limit is sent). */
export async function readTextFile(file) {
  if (file.size === 0) return { problem: 'empty' };
  if (file.size > LIMITS.ingest) return { problem: file.size + ' bytes; the limit is 1 MiB (1048576 bytes)' };
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(await file.arrayBuffer());
    if (text.includes('\u0000')) return { problem: 'not text (it holds NUL bytes)' };
    return { text };
  } catch (_) {
    return { problem: 'not UTF-8 text' };
  }
}
