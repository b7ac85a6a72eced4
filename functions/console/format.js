/* Capsule Memory console: pure formatters (no DOM, no state): short ids, relative dates, plurals,
 * scores, tags, UTF-8 sizes, datetime-local values as UTC, a solution's success rate. */

export function snippet(text, n) {
  const flat = String(text || '').replace(/\s+/g, ' ').trim();
  return flat.length > n ? flat.slice(0, n - 1) + '…' : flat;
}

// The id's first 12 characters, as the CLI's tables print them (and as capsule get/pin take
// them); the whole id is the element's title and what every request sends.
export function shortId(id) {
  return id.slice(0, 12);
}

export function whenText(iso) {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return String(iso || '');
  const secs = Math.round((Date.now() - at.getTime()) / 1000);
  if (secs < 45) return 'just now';
  const mins = Math.round(secs / 60);
  if (mins < 60) return mins + ' min ago';
  const hours = Math.round(mins / 60);
  if (hours < 24) return hours + ' h ago';
  const days = Math.round(hours / 24);
  if (days < 60) return days + ' days ago';
  return at.toLocaleDateString();
}

export function plural(n, one, many) {
  return n + ' ' + (n === 1 ? one : many);
}

export function fixed(value) {
  return (typeof value === 'number' ? value : Number(value || 0)).toFixed(3);
}

export function parseTags(text) {
  return String(text || '').split(',').map((t) => t.trim()).filter(Boolean);
}

export const utf8Bytes = (text) => new TextEncoder().encode(text).length;

/** A datetime-local text (read as UTC) as RFC 3339; what does not parse goes as written (the API names it). */
export function utcIso(raw) {
  const at = new Date(raw + (raw.length === 16 ? ':00' : '') + 'Z');
  return Number.isNaN(at.getTime()) ? raw : at.toISOString();
}

// ---- one fact, one form: a solution's success ------------------------------------------------

/** A success count and its rate, said the same way in the list, the detail, golden paths and the
 * charts: "4 of 4 succeeded; 51% lower bound" (the API's rate is the Wilson lower bound), or
 * "never applied" when no outcome was recorded (never "0%"). */
export function successText(worked, failed, rate) {
  const ok = Number(worked) || 0;
  const tried = ok + (Number(failed) || 0);
  if (!tried) return 'never applied';
  return ok + ' of ' + tried + ' succeeded; ' + Math.round(100 * (Number(rate) || 0)) + '% lower bound';
}
