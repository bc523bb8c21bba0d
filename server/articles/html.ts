// Article bodies: the HTML allowlist (sanitize-html), the character count as
// publishing counts it, and the structural problems of a body. The database
// re-checks what it can (media ids, kinds, sizes, image count, the stored
// count's bound: app.article_media_problems, trigger articles_20_guard and
// the checks of app.articles in db/schema.sql).
import sanitizeHtml from 'sanitize-html';

export const ARTICLE_MAX_TEXT_CHARS = 100_000;
export const ARTICLE_MAX_IMAGES = 20;
/** Stored HTML: the request's 1,000,000 may grow when sanitized (<br> -> <br />, & -> &amp;). */
export const ARTICLE_MAX_STORED_HTML = 2_000_000;

export interface FieldProblem {
  field: string;
  code: string;
  message: string;
}

/** The allowlist of openapi.yaml (tag Articles, "Body HTML"), exactly: p, h1-h3, strong, em, s, a (href), blockquote, ul, ol, li, hr, br, img. */
const OPTIONS: sanitizeHtml.IOptions = {
  allowedTags: ['p', 'h1', 'h2', 'h3', 'strong', 'em', 's', 'a', 'blockquote', 'ul', 'ol', 'li', 'hr', 'br', 'img'],
  // img: only data-media-id; the service fills in src when it answers.
  allowedAttributes: { a: ['href'], img: ['data-media-id'] },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesAppliedToAttributes: ['href'],
  allowProtocolRelative: false,
  disallowedTagsMode: 'discard',
  selfClosing: ['img', 'br', 'hr'],
  parser: { decodeEntities: true },
};

export function sanitizeArticleHtml(html: string): string {
  return sanitizeHtml(html, OPTIONS);
}

const BLOCK = /^(p|h1|h2|h3|blockquote|ul|ol|li|hr|br)$/i;

/**
 * The body's text as publishing sends it as plain text: the text of the
 * sanitized body with HTML whitespace collapsed (any run of whitespace is one
 * space), every block boundary (p, h1-h3, blockquote, ul, ol, li, hr, br) one
 * line break, blank lines and spaces at line ends dropped, images and link
 * targets not counted (a link counts its text).
 */
export function articlePlainText(sanitized: string): string {
  const flat = sanitized.replace(/\s+/g, ' ');
  const withBreaks = flat.replace(/<\/?([a-zA-Z0-9]+)\b[^>]*>/g, (_m, tag: string) => (BLOCK.test(tag) ? '\n' : ''));
  const decoded = withBreaks.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#0*39;/g, "'").replace(/&amp;/g, '&');
  return decoded
    .split('\n')
    .map((line) => line.replace(/ +/g, ' ').trim())
    .filter((line) => line.length > 0)
    .join('\n');
}

/** characterCount: Unicode code points of articlePlainText (an emoji is 1, a line break is 1). */
export function articleCharacterCount(sanitized: string): number {
  let n = 0;
  for (const _ of articlePlainText(sanitized)) n++;
  return n;
}

/** The <img> tags of a sanitized body, in order: their data-media-id, or null when missing. */
export function articleImageRefs(sanitized: string): (string | null)[] {
  const out: (string | null)[] = [];
  for (const m of sanitized.matchAll(/<img\b([^>]*)>/gi)) {
    const id = /\bdata-media-id="([^"]*)"/i.exec(m[1]);
    out.push(id ? id[1] : null);
  }
  return out;
}

export interface PreparedBody {
  bodyHtml: string;
  characterCount: number;
  problems: FieldProblem[];
}

/** Sanitizes a body and lists what the server can tell is wrong with it (media facts are the database's). */
export function prepareArticleBody(html: string): PreparedBody {
  const bodyHtml = sanitizeArticleHtml(html);
  const characterCount = articleCharacterCount(bodyHtml);
  const problems: FieldProblem[] = [];
  if (characterCount > ARTICLE_MAX_TEXT_CHARS) {
    problems.push({
      field: 'bodyHtml',
      code: 'too_long',
      message: `an article has at most ${ARTICLE_MAX_TEXT_CHARS} characters of text; this one has ${characterCount}`,
    });
  }
  if (bodyHtml.length > ARTICLE_MAX_STORED_HTML) {
    problems.push({ field: 'bodyHtml', code: 'too_long', message: `the sanitized body has more than ${ARTICLE_MAX_STORED_HTML} characters of HTML` });
  }
  // Images (data-media-id present, a UUID, a still image of the library, at most 20) are checked by the database.
  return { bodyHtml, characterCount: Math.min(characterCount, ARTICLE_MAX_TEXT_CHARS), problems };
}

/** Fills in the src of every <img> from a media id -> URL map (the body is sanitized: attributes are quoted). */
export function fillImageSources(sanitized: string, urlOf: (mediaId: string) => string | null): string {
  return sanitized.replace(/<img\b([^>]*)>/gi, (whole, attrs: string) => {
    const id = /\bdata-media-id="([^"]*)"/i.exec(attrs)?.[1];
    const url = id ? urlOf(id) : null;
    if (!url) return whole;
    const escaped = url.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    return `<img src="${escaped}"${attrs}>`;
  });
}
