// The calendar page at /app (docs/calendar.md): web/index.html, and web/main.ts
// bundled with its npm dependencies (FullCalendar) by esbuild in memory on first
// use, so nothing is fetched from a CDN and there is no build artefact to keep
// current. The page is only a client of the public API: it holds no secret
// and gets its session from POST /v1/auth/sessions.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Request, type Response } from 'express';
import { ApiError, errorBody } from './errors.ts';

const WEB_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'web');

interface Bundle { js: string; css: string; etag: string }

let building: Promise<Bundle> | null = null;

/** Bundles web/main.ts once per process (esbuild, about a second); a failed build is retried on the next request. */
export function buildCalendarBundle(): Promise<Bundle> {
  building ??= (async () => {
    const esbuild = await import('esbuild');
    const out = await esbuild.build({
      entryPoints: { app: path.join(WEB_DIR, 'main.ts') },
      bundle: true,
      write: false,
      format: 'esm',
      target: 'es2022',
      minify: true,
      legalComments: 'eof',
      outdir: path.join(WEB_DIR, 'dist'),
      logLevel: 'silent',
    });
    const pick = (ext: string) => out.outputFiles.find((f) => f.path.endsWith(ext))?.text ?? '';
    const js = pick('.js');
    const css = pick('.css');
    const etag = `"${createHash('sha256').update(js).update(css).digest('base64url').slice(0, 22)}"`;
    return { js, css, etag };
  })().catch((e) => {
    building = null;
    throw e;
  });
  return building;
}

/** The page's Content-Security-Policy: only this origin, FullCalendar's injected <style> by nonce. */
export function calendarCsp(nonce: string) {
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    "connect-src 'self'",
    "img-src 'self' data:",
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

export function createCalendarRouter() {
  const html = readFileSync(path.join(WEB_DIR, 'index.html'), 'utf8');
  const router = express.Router();
  router.get('/app', (_req, res) => {
    // /app and /app/ both serve the page (express's non-strict routing treats them alike).
    const nonce = randomBytes(16).toString('base64');
    common(res);
    res.setHeader('Content-Security-Policy', calendarCsp(nonce));
    res.setHeader('Cache-Control', 'no-store');
    res.type('html').send(html.replaceAll('__NONCE__', nonce));
  });
  const asset = (kind: 'js' | 'css') => async (req: Request, res: Response) => {
    let bundle: Bundle;
    try {
      bundle = await buildCalendarBundle();
    } catch (e) {
      const msg = e instanceof Error ? e.message.split('\n')[0] : String(e);
      res.status(503).json(errorBody(res.locals.requestId, new ApiError(503, 'PAGE_UNAVAILABLE', `The calendar page could not be built: ${msg}`)));
      return;
    }
    common(res);
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('ETag', bundle.etag);
    if (req.headers['if-none-match'] === bundle.etag) {
      res.status(304).end();
      return;
    }
    res.type(kind === 'js' ? 'text/javascript' : 'text/css').send(kind === 'js' ? bundle.js : bundle.css);
  };
  router.get('/app/app.js', asset('js'));
  router.get('/app/app.css', asset('css'));
  return router;
}
