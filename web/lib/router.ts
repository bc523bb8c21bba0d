// Path routing under /app: each page has its own address (/app/compose/<id>,
// /app/settings?tab=keys), so a page can be linked, reloaded and opened in a
// new tab. The server serves web/index.html for every page path (server/web-app.ts).
import { signal } from '@preact/signals';

export const route = signal<URL>(new URL(location.href));

window.addEventListener('popstate', () => {
  route.value = new URL(location.href);
});

/** Goes to a page of the app (a path under /app, with its query and hash). */
export function navigate(to: string, opts: { replace?: boolean } = {}) {
  const url = new URL(to, location.origin);
  if (opts.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  route.value = url;
  window.scrollTo(0, 0);
}

/** A click on an in-app link navigates without reloading (modified clicks open a tab as usual). */
export function onLinkClick(ev: MouseEvent) {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = (ev.target as Element | null)?.closest?.('a[href^="/app"]') as HTMLAnchorElement | null;
  if (!a || a.target) return;
  ev.preventDefault();
  navigate(a.getAttribute('href')!);
}

/** Replaces the current address's query (no new history entry), e.g. a settings tab. */
export function setQuery(params: Record<string, string | null>) {
  const url = new URL(location.href);
  for (const [k, v] of Object.entries(params)) {
    if (v === null) url.searchParams.delete(k);
    else url.searchParams.set(k, v);
  }
  navigate(url.pathname + url.search + url.hash, { replace: true });
}
