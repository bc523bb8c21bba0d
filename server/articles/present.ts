// Turns the article JSON of the database (app.article_json in db/schema.sql)
// into the API's: every media reference (cover, images, the
// body's <img>) gets a signed, expiring view URL from the storage driver
// (server/storage: driver.objectUrl, disposition inline, SIGNED_URL_TTL_SECONDS),
// and the storage facts the database handed over are dropped.
import type { MediaRef } from '../platforms/types.ts';
import type { MediaStorage } from '../storage/index.ts';
import { fillImageSources } from './html.ts';

interface DbMedia {
  mediaId: string;
  url: string | null;
  altText: string | null;
  storageKey?: string;
  contentType?: string;
  filename?: string;
}

export interface ResolvedMedia {
  mediaId: string;
  url: string;
  altText: string | null;
  contentType: string;
}

async function signer(storage: MediaStorage, workspaceId: string) {
  const { driver, config } = storage;
  const expiresAt = new Date((Math.floor(Date.now() / 1000) + config.SIGNED_URL_TTL_SECONDS) * 1000);
  const cache = new Map<string, Promise<string>>();
  return (m: DbMedia): Promise<string> => {
    let p = cache.get(m.mediaId);
    if (!p) {
      p = driver
        .objectUrl({
          mediaId: m.mediaId,
          key: m.storageKey ?? '',
          contentType: m.contentType ?? 'application/octet-stream',
          filename: m.filename ?? m.mediaId,
          disposition: 'inline',
          expiresAt,
        })
        // An item whose bytes cannot be signed (a storage key not of ours): the
        // stable API route that issues its view URL.
        .catch(() => `${storage.baseUrl()}/v1/workspaces/${workspaceId}/media/${m.mediaId}/view-url`);
      cache.set(m.mediaId, p);
    }
    return p;
  };
}

async function resolveOne(sign: (m: DbMedia) => Promise<string>, m: DbMedia): Promise<ResolvedMedia> {
  return { mediaId: m.mediaId, url: await sign(m), altText: m.altText ?? null, contentType: m.contentType ?? 'application/octet-stream' };
}

/** The article as the API shows it (list item or detail). */
export async function presentArticle(storage: MediaStorage, workspaceId: string, article: any): Promise<any> {
  const sign = await signer(storage, workspaceId);
  const out = { ...article };
  if (article.cover) {
    const c = await resolveOne(sign, article.cover);
    out.cover = { mediaId: c.mediaId, url: c.url, altText: c.altText };
  }
  if (Array.isArray(article.images)) {
    const images = await Promise.all((article.images as DbMedia[]).map((m) => resolveOne(sign, m)));
    out.images = images.map((m) => ({ mediaId: m.mediaId, url: m.url, altText: m.altText }));
    const urls = new Map(images.map((m) => [m.mediaId, m.url]));
    out.bodyHtml = fillImageSources(article.bodyHtml ?? '', (id) => urls.get(id) ?? null);
  }
  return out;
}

/** Cover and images of a detail article as connector media references. */
export async function articleMediaRefs(storage: MediaStorage, workspaceId: string, article: any): Promise<{ cover: MediaRef | null; images: MediaRef[] }> {
  const sign = await signer(storage, workspaceId);
  const toRef = async (m: DbMedia): Promise<MediaRef> => {
    const r = await resolveOne(sign, m);
    return { id: r.mediaId, type: 'image', url: r.url, contentType: r.contentType, altText: r.altText };
  };
  return {
    cover: article.cover ? await toRef(article.cover) : null,
    images: await Promise.all(((article.images ?? []) as DbMedia[]).map(toRef)),
  };
}
