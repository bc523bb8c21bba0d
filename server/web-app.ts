// The web pages (docs/web-app.md): the app at /app (web/index.html and
// web/main.tsx: calendar, composer, channels, approvals, settings) and the
// client review page at /review (web/review.html, web/review/main.tsx).
// esbuild bundles both entries with their npm dependencies (Preact,
// FullCalendar) in memory on first use, so nothing is fetched from a CDN and
// there is no build artefact to keep current. The pages are only clients of
// the public API: they hold no secret; the app gets its session from
// POST /v1/auth/sessions, the review page its link token from the URL
// fragment, which browsers never send to the server.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Config } from './config.ts';
import { ApiError, errorBody } from './errors.ts';

const WEB_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'web');

type Entry = 'app' | 'review';
interface Bundle { files: Record<string, string>; etag: Record<string, string> }

let building: Promise<Bundle> | null = null;

/** Bundles both pages once per process (esbuild, about a second); a failed build is retried on the next request. */
export function buildWebBundle(): Promise<Bundle> {
  building ??= (async () => {
    const esbuild = await import('esbuild');
    const out = await esbuild.build({
      entryPoints: { app: path.join(WEB_DIR, 'main.tsx'), review: path.join(WEB_DIR, 'review', 'main.tsx') },
      bundle: true,
      write: false,
      format: 'esm',
      target: 'es2022',
      minify: true,
      jsx: 'automatic',
      jsxImportSource: 'preact',
      legalComments: 'eof',
      outdir: path.join(WEB_DIR, 'dist'),
      logLevel: 'silent',
    });
    const files: Record<string, string> = {};
    const etag: Record<string, string> = {};
    for (const f of out.outputFiles) {
      const name = path.basename(f.path); // app.js, app.css, review.js, review.css
      files[name] = f.text;
      etag[name] = `"${createHash('sha256').update(f.text).digest('base64url').slice(0, 22)}"`;
    }
    return { files, etag };
  })().catch((e) => {
    building = null;
    throw e;
  });
  return building;
}

/**
 * Where media is served from besides this origin: PUBLIC_BASE_URL (signed
 * disk URLs point there) and the S3 endpoint or bucket (signed S3 URLs, and
 * the composer's and review page's uploads go there directly).
 */
export function storageOrigins(config: Pick<Config, 'PUBLIC_BASE_URL' | 'STORAGE_DRIVER' | 'S3_ENDPOINT' | 'S3_BUCKET' | 'S3_REGION' | 'S3_FORCE_PATH_STYLE'>): string[] {
  const out = new Set<string>();
  if (config.PUBLIC_BASE_URL) out.add(new URL(config.PUBLIC_BASE_URL).origin);
  if (config.STORAGE_DRIVER === 's3') {
    if (config.S3_ENDPOINT) {
      const u = new URL(config.S3_ENDPOINT);
      out.add(u.origin);
      if (!config.S3_FORCE_PATH_STYLE && config.S3_BUCKET) out.add(`${u.protocol}//${config.S3_BUCKET}.${u.host}`);
    } else if (config.S3_BUCKET) {
      out.add(`https://${config.S3_BUCKET}.s3.${config.S3_REGION}.amazonaws.com`);
      out.add(`https://s3.${config.S3_REGION}.amazonaws.com`);
    }
  }
  return [...out];
}

/** The pages' Content-Security-Policy: this origin and the media storage only; FullCalendar's injected <style> by nonce. */
export function webCsp(nonce: string, media: string[] = []) {
  const extra = media.length ? ` ${media.join(' ')}` : '';
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    `connect-src 'self'${extra}`,
    `img-src 'self' data: blob:${extra}`,
    `media-src 'self' blob:${extra}`,
    "font-src 'self' data:", // FullCalendar's arrow icons are an inline font
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

function common(res: Response) {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Frame-Options', 'DENY');
}

/** The app's page addresses: each serves web/index.html, which routes on the path (web/lib/router.ts). */
export const APP_PAGES = ['/app', '/app/compose', '/app/compose/:id', '/app/channels', '/app/approvals', '/app/settings'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function createWebRouter(config: Config) {
  const pages: Record<Entry, string> = {
    app: readFileSync(path.join(WEB_DIR, 'index.html'), 'utf8'),
    review: readFileSync(path.join(WEB_DIR, 'review.html'), 'utf8'),
  };
  const media = storageOrigins(config);
  const router = express.Router();
  const page = (entry: Entry) => (req: Request, res: Response, next: NextFunction) => {
    const id = req.params.id;
    if (typeof id === 'string' && !UUID.test(id)) return next();
    const nonce = randomBytes(16).toString('base64');
    common(res);
    res.setHeader('Content-Security-Policy', webCsp(nonce, media));
    res.setHeader('Cache-Control', 'no-store');
    res.type('html').send(pages[entry].replaceAll('__NONCE__', nonce));
  };
  // /app and /app/ both serve the page (express's non-strict routing treats them alike).
  router.get(APP_PAGES, page('app'));
  router.get('/review', page('review'));
  const asset = (name: string) => async (req: Request, res: Response) => {
    let bundle: Bundle;
    try {
      bundle = await buildWebBundle();
    } catch (e) {
      const msg = e instanceof Error ? e.message.split('\n')[0] : String(e);
      res.status(503).json(errorBody(res.locals.requestId, new ApiError(503, 'PAGE_UNAVAILABLE', `The web pages could not be built: ${msg}`)));
      return;
    }
    common(res);
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('ETag', bundle.etag[name]);
    if (req.headers['if-none-match'] === bundle.etag[name]) {
      res.status(304).end();
      return;
    }
    res.type(name.endsWith('.js') ? 'text/javascript' : 'text/css').send(bundle.files[name] ?? '');
  };
  router.get('/app/app.js', asset('app.js'));
  router.get('/app/app.css', asset('app.css'));
  router.get('/review/review.js', asset('review.js'));
  router.get('/review/review.css', asset('review.css'));
  return router;
}
