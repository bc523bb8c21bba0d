// Cutting text to a length without splitting a character.
//
// String#slice counts UTF-16 code units, so cutting an emoji or any other
// character beyond U+FFFF (two units, a surrogate pair) in the middle leaves a
// lone surrogate: PostgreSQL's jsonb refuses it, and the driver's UTF-8 turns
// it into U+FFFD. Text that goes into the database is cut here instead.

/**
 * `s` cut to at most `max` UTF-16 code units (so at most `max` characters,
 * as PostgreSQL's length() counts them), at a code point boundary: a surrogate
 * pair the cut would split is left out whole.
 */
export function cutText(s: string, max: number): string {
  if (s.length <= max) return s;
  if (max <= 0) return '';
  const last = s.charCodeAt(max - 1);
  const next = s.charCodeAt(max);
  const splitsPair = last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff;
  return s.slice(0, splitsPair ? max - 1 : max);
}
