// Opaque, tamper-evident cursors for the media library's keyset pages:
// base64url(JSON {v, q, k}) "." HMAC. `q` binds the cursor to the list, the
// workspace and the filters it was issued for, `k` is the last item's sort
// key. A changed byte, a cursor of another list or filter set, or garbage
// answers 400 INVALID_CURSOR.
import { createHash } from 'node:crypto';
import { ApiError } from '../errors.ts';
import type { MediaStorage } from './index.ts';
import { hmacB64, safeEqual } from './signing.ts';

export interface CursorScope {
  list: 'media' | 'folders' | 'usage-history' | 'inbox-threads' | 'inbox-messages';
  workspaceId: string;
  /** Everything that selects and orders the list (not limit, not cursor). */
  filters: Record<string, unknown>;
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

function fingerprint(scope: CursorScope): string {
  return createHash('sha256').update(canonical(scope)).digest('base64url').slice(0, 16);
}

export async function encodeCursor(storage: MediaStorage, scope: CursorScope, key: unknown[]): Promise<string> {
  const body = Buffer.from(JSON.stringify({ v: 1, q: fingerprint(scope), k: key }), 'utf8').toString('base64url');
  return `${body}.${hmacB64(await storage.secrets.key('cursor'), body)}`;
}

const invalid = (message: string) =>
  new ApiError(400, 'INVALID_CURSOR', message, {
    fields: [{ field: 'query.cursor', code: 'invalid_cursor', message }],
  });

/** The sort key of the page's last item; throws 400 INVALID_CURSOR. */
export async function decodeCursor(storage: MediaStorage, scope: CursorScope, cursor: string): Promise<unknown[]> {
  const parts = cursor.split('.');
  if (parts.length !== 2 || !parts[0] || !parts[1]) throw invalid('The cursor is not one this server issued.');
  const [body, mac] = parts;
  if (!safeEqual(mac, hmacB64(await storage.secrets.key('cursor'), body))) {
    throw invalid('The cursor was altered or was not issued by this server; start again without a cursor.');
  }
  let payload: { v?: unknown; q?: unknown; k?: unknown };
  try {
    payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    throw invalid('The cursor is not one this server issued.');
  }
  if (payload.v !== 1 || !Array.isArray(payload.k)) throw invalid('The cursor is not one this server issued.');
  if (payload.q !== fingerprint(scope)) {
    throw invalid('The cursor belongs to another list or other filters; repeat the query that issued it, or start without a cursor.');
  }
  return payload.k;
}
