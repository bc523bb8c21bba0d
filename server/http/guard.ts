// Refusals of hostile input that hold for every operation at once, before any
// SQL runs (db/ERRORS.md, "Raised by the HTTP layer before any SQL"):
//
// - JSON nested deeper than MAX_JSON_DEPTH is refused while the body is read,
//   before it is parsed (400 NESTING_TOO_DEEP), so no recursive step later on
//   (the idempotency canonicalizer, JSON.stringify for the driver, PostgreSQL's
//   jsonb input) ever sees a structure that could exhaust its stack.
// - NUL (U+0000) or a lone UTF-16 surrogate (U+D800-U+DFFF not in a pair,
//   which a JSON body can carry as an escape such as "\ud800") in any string
//   or object key of a body, a query string, a path parameter or a header is
//   a 400 VALIDATION_FAILED naming the field: PostgreSQL's text and jsonb
//   cannot hold NUL, and a lone surrogate is no Unicode character (jsonb
//   refuses it, the driver's UTF-8 would turn it into U+FFFD silently).
// - date-time and date values PostgreSQL cannot store (a UTC offset beyond
//   ±15:59, year 0000) fail the contract's formats, so the field is named.

import type { FieldProblem } from './openapi.ts';

/** Deepest nesting of arrays and objects a JSON body may have (documented in openapi.yaml's info and db/ERRORS.md). */
export const MAX_JSON_DEPTH = 64;

export class NestingTooDeepError extends Error {
  readonly type = 'entity.nesting.too.deep';
  readonly status = 400;
  constructor() {
    super(`The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels.`);
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;

/**
 * Throws NestingTooDeepError when the raw JSON text nests arrays or objects
 * deeper than `max`. One pass over the bytes, no recursion; brackets inside
 * strings do not count. Used as body-parser's `verify`, which runs before
 * JSON.parse.
 */
export function assertJsonDepth(buf: Buffer, max = MAX_JSON_DEPTH): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) throw new NestingTooDeepError();
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
}

/** The field name of a key under `prefix`, as validation names fields (`body.settings.x`, `query.search`). */
const join = (prefix: string, key: string | number) => (prefix ? `${prefix}.${key}` : String(key));

/** A lone UTF-16 surrogate: a high one not followed by a low one, or a low one not after a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A key as a field name: NUL and lone surrogates written as escapes (`\u0000`, `\ud800`), so the answer is well-formed text. */
export const keyName = (k: string) => k.replace(/\u0000/g, '\\u0000').replace(LONE_SURROGATE, (c) => `\\u${c.charCodeAt(0).toString(16)}`);

/** Why a string or key cannot be stored as text, or null. */
function textProblem(s: string, what = ''): { code: string; message: string } | null {
  if (s.includes('\u0000')) return { code: 'nul_character', message: `${what}must not contain the NUL character (U+0000)` };
  if (!s.isWellFormed()) return { code: 'lone_surrogate', message: `${what}must not contain a lone UTF-16 surrogate (U+D800 to U+DFFF outside a pair)` };
  return null;
}

/**
 * One problem per string or key in `value` (any JSON-like value) that text
 * cannot hold: NUL (`nul_character`) or a lone UTF-16 surrogate
 * (`lone_surrogate`), named from `prefix`. Iterative, so a value of any
 * depth is walked safely (the body's depth is bounded already; query strings
 * parsed by qs are too).
 */
export function textProblems(prefix: string, value: unknown): FieldProblem[] {
  const out: FieldProblem[] = [];
  const stack: [string, unknown][] = [[prefix, value]];
  while (stack.length) {
    const [field, v] = stack.pop()!;
    if (typeof v === 'string') {
      const p = textProblem(v);
      if (p) out.push({ field, ...p });
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([join(field, i), v[i]]);
    } else if (v && typeof v === 'object') {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i];
        const p = textProblem(k, 'a property name ');
        if (p) out.push({ field: join(field, keyName(k)), ...p });
        else stack.push([join(field, k), (v as Record<string, unknown>)[k]]);
      }
    }
  }
  return out;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|([+-])(\d{2}):?(\d{2}))$/;
const DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function dateOk(y: number, m: number, d: number): boolean {
  if (y < 1 || m < 1 || m > 12 || d < 1 || d > DAYS[m - 1]) return false;
  return !(m === 2 && d === 29 && !(y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0)));
}

/** RFC 3339 full-date that PostgreSQL stores: year 0001 to 9999. */
export function isStorableDate(s: string): boolean {
  const m = DATE.exec(s);
  return Boolean(m && dateOk(Number(m[1]), Number(m[2]), Number(m[3])));
}

/**
 * RFC 3339 date-time with a time zone, as the contract's `date-time`, that
 * PostgreSQL's timestamptz accepts: UTC offsets up to ±15:59 (SQLSTATE 22009
 * beyond), year 0001 to 9999, a leap second only as 23:59:60 UTC.
 */
export function isStorableDateTime(s: string): boolean {
  const m = DATE_TIME.exec(s);
  if (!m || !dateOk(Number(m[1]), Number(m[2]), Number(m[3]))) return false;
  const [hh, mm, ss] = [Number(m[4]), Number(m[5]), Number(m[6])];
  if (hh > 23 || mm > 59 || ss > 60) return false;
  if (m[9]) {
    const offH = Number(m[10]);
    const offM = Number(m[11]);
    if (offH > 15 || offM > 59) return false;
  }
  if (ss === 60) {
    // A leap second: 23:59:60 in UTC.
    const offset = m[9] ? (m[9] === '+' ? 1 : -1) * (Number(m[10]) * 60 + Number(m[11])) : 0;
    const utcMinutes = (((hh * 60 + mm - offset) % 1440) + 1440) % 1440;
    if (utcMinutes !== 23 * 60 + 59) return false;
  }
  return true;
}

const HASHTAG = /^#?[\p{L}\p{M}\p{N}_]{1,100}$/u;

/**
 * The contract's `format: hashtag`: 1 to 100 letters, marks, digits (Unicode
 * categories L, M, N) or underscores, after at most one leading '#'. The
 * contract's own `pattern` for it is portable (ECMA-262 without the `u` flag
 * and Python's `re` read it) and so cannot name Unicode categories; this is
 * the rule (openapi/components/schemas/HashtagList.yaml).
 */
export function isHashtag(s: string): boolean {
  return HASHTAG.test(s);
}
