// The composer's media (web/pages/compose.tsx): the attached items with their
// alt text (PATCH {ws}/media/{id}), the library in a dialog (GET {ws}/media),
// and uploads through the signed upload flow (POST media/upload, PUT the bytes
// to the signed URL with XMLHttpRequest for its progress events, POST
// .../complete; clients/typescript/src/upload.ts is the same flow in Node).
import { useEffect, useRef, useState } from 'preact/hooks';
import { client, describe, PressroomError, type Schema, unwrap, wsId } from '../lib/api.ts';
import type { MediaRef, PageProblem } from '../lib/compose-model.ts';

type MediaItem = Schema<'MediaItem'>;

export const toRef = (m: Pick<MediaItem, 'id' | 'type' | 'filename' | 'altText' | 'state'>): MediaRef => ({
  id: m.id, type: m.type, filename: m.filename, altText: m.altText, state: m.state,
});

// ---- signed view URLs ----------------------------------------------------------------------

const urls = new Map<string, { url: string; until: number }>();
const pending = new Map<string, Promise<string | null>>();

/** A signed inline URL of a media item (GET .../view-url), cached until shortly before it expires. */
function viewUrl(id: string): Promise<string | null> {
  const hit = urls.get(id);
  if (hit && hit.until > Date.now()) return Promise.resolve(hit.url);
  let p = pending.get(id);
  if (!p) {
    p = unwrap(client.value.GET('/v1/workspaces/{workspaceId}/media/{id}/view-url', { params: { path: { workspaceId: wsId(), id } } }))
      .then((b) => {
        urls.set(id, { url: b.data.url, until: Date.parse(b.data.expiresAt) - 60_000 });
        return b.data.url;
      }, () => null)
      .finally(() => pending.delete(id));
    pending.set(id, p);
  }
  return p;
}

/** A thumbnail: the image itself, or a labelled box for a video (no <video> element: it would need captions). */
export function Thumb({ media, size = 'm' }: { media: MediaRef; size?: 's' | 'm' }) {
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    if (media.type !== 'video') void viewUrl(media.id).then((u) => live && setUrl(u));
    return () => { live = false; };
  }, [media.id, media.type]);
  if (media.type === 'video') return <span class={`thumb thumb-${size} thumb-video`} aria-hidden="true">▶ video</span>;
  return url
    ? <img class={`thumb thumb-${size}`} src={url} alt={media.altText ?? ''} />
    : <span class={`thumb thumb-${size} thumb-loading`} aria-hidden="true" />;
}

// ---- upload --------------------------------------------------------------------------------

/** PUTs the file to the signed URL with the headers the session names; progress from XHR's upload events. */
function putBytes(url: string, method: string, headers: Record<string, string>, file: File, onProgress: (sent: number) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    // Content-Length is the browser's to set (exactly file.size, as declared).
    for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() !== 'content-length') xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (ev) => onProgress(ev.loaded);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) return resolve();
      let err = { code: `UPLOAD_HTTP_${xhr.status}`, message: `The upload URL answered ${xhr.status}.`, requestId: undefined as string | undefined };
      try {
        const parsed = JSON.parse(xhr.responseText) as { error?: { code?: string; message?: string; requestId?: string } };
        if (parsed.error?.code && parsed.error.message) err = { code: parsed.error.code, message: parsed.error.message, requestId: parsed.error.requestId };
      } catch {
        // not JSON (S3 answers XML): keep the status
      }
      reject(new PressroomError(xhr.status, err, xhr.getResponseHeader('x-request-id')));
    };
    xhr.onerror = () => reject(new PressroomError(0, { code: 'UPLOAD_FAILED', message: 'The file could not be sent (network or storage unreachable).' }, null));
    xhr.send(file);
  });
}

/** SHA-256 of the file for the completion check, when the browser can compute it (secure contexts) and the file is small enough to read at once. */
async function sha256(file: File): Promise<string | undefined> {
  if (!globalThis.crypto?.subtle || file.size > 64 * 1024 * 1024) return undefined;
  const d = await crypto.subtle.digest('SHA-256', await file.arrayBuffer());
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** One file through the three steps; a failure after the first aborts the session (best effort). */
export async function uploadFile(file: File, onProgress: (sent: number) => void): Promise<MediaItem> {
  const workspaceId = wsId();
  const init = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/media/upload', {
    params: { path: { workspaceId } },
    body: { filename: file.name, contentType: file.type || 'application/octet-stream', size: file.size },
  }));
  const s = init.data;
  try {
    if (!s.uploadUrl) throw new PressroomError(0, { code: 'UPLOAD_URL_MISSING', message: `The upload session is ${s.state}.` }, null);
    const checksum = sha256(file);
    await putBytes(s.uploadUrl, s.method, s.headers, file, onProgress);
    const sum = await checksum;
    const done = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/media/upload/{sessionId}/complete', {
      params: { path: { workspaceId, sessionId: s.sessionId } },
      body: sum ? { checksumSha256: sum } : {},
    }));
    return done.data as MediaItem;
  } catch (e) {
    await client.value.POST('/v1/workspaces/{workspaceId}/media/upload/{sessionId}/abort', { params: { path: { workspaceId, sessionId: s.sessionId } } }).catch(() => undefined);
    throw e;
  }
}

interface Upload { key: number; name: string; size: number; sent: number; state: 'uploading' | 'done' | 'failed'; error: string | null }

// ---- alt text ------------------------------------------------------------------------------

/** The alt text of one item, saved on change (blur or Enter) with PATCH {ws}/media/{id}. */
function AltText({ media, editable, onSaved }: { media: MediaRef; editable: boolean; onSaved: (m: MediaRef) => void }) {
  const [value, setValue] = useState(media.altText ?? '');
  const [state, setState] = useState<{ kind: 'idle' | 'saving' | 'saved' | 'error'; text?: string }>({ kind: 'idle' });
  const id = `alt-${media.id}`;
  const save = async () => {
    const next = value.trim() ? value : null;
    if (next === media.altText) return;
    setState({ kind: 'saving' });
    try {
      const r = await unwrap(client.value.PATCH('/v1/workspaces/{workspaceId}/media/{id}', {
        params: { path: { workspaceId: wsId(), id: media.id } },
        body: { altText: next },
      }));
      onSaved(toRef(r.data));
      setState({ kind: 'saved' });
    } catch (e) {
      setState({ kind: 'error', text: describe(e) });
    }
  };
  return (
    <div class="alt">
      <label for={id}>Alt text</label>
      <input id={id} value={value} maxLength={1500} disabled={!editable || state.kind === 'saving'}
        aria-describedby={`${id}-state`} aria-invalid={state.kind === 'error' ? true : undefined}
        placeholder="Describe the image for people who cannot see it"
        onInput={(e) => setValue((e.currentTarget as HTMLInputElement).value)}
        onChange={() => void save()} />
      <span id={`${id}-state`} class={state.kind === 'error' ? 'field-error' : 'hint'} role="status">
        {state.kind === 'saving' ? 'Saving…' : state.kind === 'saved' ? 'Alt text saved.' : state.kind === 'error' ? `Not saved: ${state.text}` : ''}
      </span>
    </div>
  );
}

// ---- the library dialog --------------------------------------------------------------------

function Library({ dialog, attached, onToggle }: { dialog: { current: HTMLDialogElement | null }; attached: MediaRef[]; onToggle: (m: MediaRef, on: boolean) => void }) {
  const [items, setItems] = useState<MediaItem[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [search, setSearch] = useState('');
  const [type, setType] = useState<'' | 'image' | 'video' | 'gif'>('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const seq = useRef(0);
  const load = async (more: boolean) => {
    const n = ++seq.current;
    setBusy(true);
    setError(null);
    try {
      const b = await unwrap(client.value.GET('/v1/workspaces/{workspaceId}/media', {
        params: {
          path: { workspaceId: wsId() },
          query: { limit: 24, ...(search.trim() ? { search: search.trim() } : {}), ...(type ? { type } : {}), ...(more && cursor ? { cursor } : {}) },
        },
      }));
      if (n !== seq.current) return;
      setItems((prev) => (more ? [...(prev ?? []), ...b.data] : b.data));
      setCursor(b.meta.hasMore ? b.meta.nextCursor : null);
    } catch (e) {
      if (n === seq.current) setError(describe(e));
    } finally {
      if (n === seq.current) setBusy(false);
    }
  };
  // The list loads when the dialog opens and again when the filters change.
  const [open, setOpen] = useState(false);
  useEffect(() => {
    const d = dialog.current;
    if (!d) return;
    const watch = new MutationObserver(() => setOpen(d.open));
    watch.observe(d, { attributes: true, attributeFilter: ['open'] });
    return () => watch.disconnect();
  }, []);
  useEffect(() => {
    if (!open) return;
    const t = setTimeout(() => void load(false), items === null ? 0 : 300);
    return () => clearTimeout(t);
  }, [open, search, type]);
  const chosen = new Set(attached.map((m) => m.id));
  return (
    <dialog id="library" ref={dialog} aria-labelledby="library-h" class="library">
      <h2 id="library-h">Media library</h2>
      <div class="row library-filters">
        <label>Search <input id="library-search" type="search" value={search} onInput={(e) => setSearch((e.currentTarget as HTMLInputElement).value)} /></label>
        <label>Type
          <select id="library-type" value={type} onChange={(e) => setType((e.currentTarget as HTMLSelectElement).value as typeof type)}>
            <option value="">All</option><option value="image">Images</option><option value="video">Videos</option><option value="gif">GIFs</option>
          </select>
        </label>
      </div>
      {error && <p class="field-error" role="alert">Could not load the library: {error}</p>}
      {items === null ? <p aria-busy="true">Loading…</p> : items.length === 0 ? <p class="hint">Nothing in the library{search || type ? ' matches' : ' yet; upload a file in the composer'}.</p> : (
        <ul class="library-grid" aria-label="Library items">
          {items.map((m) => (
            <li key={m.id}>
              <label class="library-item">
                <input type="checkbox" name="library-item" value={m.id} checked={chosen.has(m.id)} onChange={(e) => onToggle(toRef(m), (e.currentTarget as HTMLInputElement).checked)} />
                <Thumb media={toRef(m)} />
                <span class="library-name">{m.filename}</span>
                <span class="hint">{m.type}{m.width && m.height ? ` · ${m.width}×${m.height}` : ''}{m.altText ? '' : ' · no alt text'}</span>
              </label>
            </li>
          ))}
        </ul>
      )}
      <div class="row dialog-actions">
        {cursor && <button type="button" disabled={busy} onClick={() => void load(true)}>Load more</button>}
        <span class="spacer" />
        <button type="button" class="primary" id="library-done" onClick={() => dialog.current?.close()}>Done</button>
      </div>
    </dialog>
  );
}

// ---- the section ---------------------------------------------------------------------------

export function MediaSection({ media, editable, problems, onChange }: {
  media: MediaRef[];
  editable: boolean;
  problems: (key: string) => PageProblem[];
  onChange: (next: MediaRef[]) => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [uploads, setUploads] = useState<Upload[]>([]);
  const key = useRef(0);
  // The latest list, for uploads that finish after other changes.
  const latest = useRef(media);
  latest.current = media;
  const patch = (k: number, p: Partial<Upload>) => setUploads((list) => list.map((u) => (u.key === k ? { ...u, ...p } : u)));
  const onFiles = async (files: FileList | null) => {
    for (const file of [...(files ?? [])]) {
      const k = ++key.current;
      setUploads((list) => [...list, { key: k, name: file.name, size: file.size, sent: 0, state: 'uploading' as const, error: null }].slice(-6));
      try {
        const item = await uploadFile(file, (sent) => patch(k, { sent }));
        patch(k, { sent: file.size, state: 'done' });
        onChange([...latest.current, toRef(item)]);
      } catch (e) {
        patch(k, { state: 'failed', error: describe(e) });
      }
    }
  };
  const uploadError = uploads.filter((u) => u.state === 'failed');
  const mediaProblems = problems('media');
  return (
    <section class="card section" aria-labelledby="media-h" id="media">
      <h2 id="media-h">Media</h2>
      {media.length === 0 ? <p class="hint">No media. Add from the library or upload a file.</p> : (
        <ul class="attached" aria-label="Attached media">
          {media.map((m, i) => (
            <li key={m.id} class="attached-item">
              <Thumb media={m} />
              <div class="attached-meta">
                <span class="attached-name">{`${i + 1}. ${m.filename}`}</span>
                <span class="hint">{m.type}{m.state === 'deleted' ? ' · in the bin' : ''}</span>
                {m.type !== 'video' && (
                  <AltText key={m.id} media={m} editable={editable} onSaved={(saved) => onChange(latest.current.map((x) => (x.id === saved.id ? saved : x)))} />
                )}
              </div>
              {editable && <button type="button" class="danger" aria-label={`Remove ${m.filename}`} onClick={() => onChange(media.filter((x) => x.id !== m.id))}>Remove</button>}
            </li>
          ))}
        </ul>
      )}
      <Problems id="media-problems" list={mediaProblems} />
      {editable && (
        <div class="row media-actions">
          <button type="button" id="open-library" onClick={() => dialog.current?.showModal()}>Choose from library</button>
          <label class="upload-label" for="upload">Upload a file</label>
          <input id="upload" type="file" accept="image/png,image/jpeg,image/webp,image/gif,video/mp4,video/quicktime,video/webm" multiple
            aria-describedby="upload-problems"
            onChange={(e) => {
              const input = e.currentTarget as HTMLInputElement;
              void onFiles(input.files).finally(() => { input.value = ''; });
            }} />
        </div>
      )}
      {uploads.length > 0 && (
        <ul class="uploads" aria-label="Uploads">
          {uploads.map((u) => (
            <li key={u.key} class={`upload upload-${u.state}`}>
              <label for={`progress-${u.key}`}>{`${u.name}: ${u.state === 'uploading' ? `uploading, ${Math.floor((u.sent / Math.max(u.size, 1)) * 100)}%` : u.state === 'done' ? 'uploaded' : 'failed'}`}</label>
              <progress id={`progress-${u.key}`} max={u.size} value={u.sent} />
            </li>
          ))}
        </ul>
      )}
      <div id="upload-problems">
        {uploadError.map((u) => <p key={u.key} class="field-error" role="alert">{`${u.name} was not uploaded: ${u.error}`}</p>)}
      </div>
      {editable && <Library dialog={dialog} attached={media} onToggle={(m, on) => onChange(on ? [...latest.current.filter((x) => x.id !== m.id), m] : latest.current.filter((x) => x.id !== m.id))} />}
    </section>
  );
}

/** A field's problems (the check route's or a refusal's), each with its code. */
export function Problems({ id, list }: { id: string; list: PageProblem[] }) {
  return (
    <ul id={id} class="problems" aria-live="polite">
      {list.map((p, i) => <li key={`${p.code}-${i}`} class="field-error" data-code={p.code}>{p.message} <code>{p.code}</code></li>)}
    </ul>
  );
}
