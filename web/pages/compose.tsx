// The composer (/app/compose, /app/compose/<contentId>; docs/web-app.md): one
// post for several channels through the public content routes. New: POST
// {ws}/content (intent draft, schedule or publish_now) with the shared caption
// and media, a caption per channel once customised, thread messages where the
// platform has threads, campaign and tags. While typing, POST {ws}/content/check
// (debounced) answers the platform rules' problems, shown beside their fields.
// Edit: GET content/{id} and its root (GET content-roots/{rootId}) for the other
// editions; saved with PATCH metadata, root, edition, schedule, or publish/retry,
// each only where the API allows it (draft or scheduled editions).
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { can, client, describe, fieldProblems, type Schema, unwrap, workspace, wsId } from '../lib/api.ts';
import {
  buildBody, channelDraft, checkProblems, countChars, type ContentDetail, type Draft, effectiveCaption, emptyDraft,
  type FieldContext, fieldKey, type IntegrationDetail, lockedReason, type MediaRef, type PageProblem, PLATFORM_NAMES,
  sameChannel, sameMetadata, sameRoot,
} from '../lib/compose-model.ts';
import { navigate } from '../lib/router.ts';
import { formatInZone, notice, partsInZone, say, sayError, zonedToIso } from '../lib/ui.tsx';
import { MediaSection, Problems, toRef } from './compose-media.tsx';
import { Preview, type PreviewChannel } from './compose-preview.tsx';
import { ReviewRequest } from './compose-review.tsx';
import './compose.css';

type Campaign = Schema<'Campaign'>;
type Tag = Schema<'TaxonomyTerm'>;
type Root = Schema<'ContentRoot'>;

/** An opened edition with its root and the root's other editions (posts), each in full. */
interface Loaded { focus: ContentDetail; root: Root; editions: ContentDetail[]; media: MediaRef[] }

const clone = (d: Draft): Draft => JSON.parse(JSON.stringify(d)) as Draft;
const ws = () => ({ workspaceId: wsId() });
const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });

/** A refusal's field problems, placed on the page. */
function refusal(e: unknown, ctx: FieldContext): PageProblem[] {
  return fieldProblems(e).map((f) => ({
    key: fieldKey(f.field ?? f.path ?? '', ctx),
    code: f.code ?? f.reason ?? 'invalid',
    message: f.message ?? f.reason ?? 'is not valid',
  }));
}

function draftFrom(l: Loaded, tz: string): Draft {
  const at = l.focus.scheduledAt ?? l.focus.intendedPublishAt;
  const p = at ? partsInZone(at, tz) : { date: '', time: '' };
  return {
    title: l.root.organizationalTitle ?? '',
    caption: l.root.caption ?? '',
    channelIds: l.editions.map((e) => e.integrationId),
    channels: Object.fromEntries(l.editions.map((e) => [e.integrationId, { caption: e.captionOverride, thread: e.thread.map((t) => t.caption) }])),
    media: l.media,
    campaignId: l.root.campaignId ?? '',
    tagIds: [...l.root.metadata.tagIds],
    date: p.date,
    time: p.time,
  };
}

/** A caption's first words as a title: at most 60 characters, cut at a word, with an ellipsis when cut. */
function shortTitle(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= 60) return flat;
  const cut = flat.slice(0, 60);
  return `${cut.slice(0, cut.lastIndexOf(' ') > 20 ? cut.lastIndexOf(' ') : 60).replace(/[\s,.;:!?-]+$/, '')}…`;
}

function Counter({ id, text, max }: { id: string; text: string; max: number | null }) {
  const n = countChars(text);
  const over = max !== null && n > max;
  return <span id={id} class={`counter${over ? ' over' : ''}`}>{max === null ? `${n} characters` : `${n} / ${max}${over ? ` (${n - max} over)` : ''}`}</span>;
}

function StatusBadge({ e }: { e: ContentDetail }) {
  const cls = e.status === 'failed' ? 'bad' : e.status === 'sent' ? 'ok' : e.status === 'scheduled' ? 'sched' : '';
  return <span class={`badge ${cls}`}>{e.workflowStatus.replace('_', ' ')}</span>;
}

export function ComposePage({ contentId }: { contentId: string | null }) {
  const tz = workspace.value?.timezone ?? 'UTC';
  const editor = can('editor');
  const [channels, setChannels] = useState<IntegrationDetail[] | null>(null);
  const [extra, setExtra] = useState<Record<string, IntegrationDetail>>({});
  const [campaigns, setCampaigns] = useState<Campaign[]>([]);
  const [tags, setTags] = useState<Tag[]>([]);
  const [draft, setDraftState] = useState<Draft>(emptyDraft);
  const base = useRef<Draft>(emptyDraft());
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [reload, setReload] = useState(0);
  const [reviewLinks, setReviewLinks] = useState<Schema<'ReviewLinkToken'>[] | null>(null);
  const [check, setCheck] = useState<{ problems: PageProblem[]; valid: boolean | null; busy: boolean; error: string | null }>({ problems: [], valid: null, busy: false, error: null });
  const [refused, setRefused] = useState<PageProblem[]>([]);
  const [busy, setBusy] = useState<string | null>(null);
  const checkSeq = useRef(0);

  /** Every edit goes through here: a refusal's problems stay until the draft changes. */
  const setDraft = (next: Draft | ((d: Draft) => Draft)) => {
    setDraftState(next);
    setRefused([]);
  };

  // ---- reference data: channels (with rules), campaigns, tags ----
  useEffect(() => {
    let live = true;
    (async () => {
      try {
        const list = await unwrap(client.value.GET('/v1/workspaces/{workspaceId}/integrations', { params: { path: ws() } }));
        const details = await Promise.all(list.data.filter((i) => i.status === 'active').map((i) =>
          unwrap(client.value.GET('/v1/workspaces/{workspaceId}/integrations/{id}', { params: { path: { ...ws(), id: i.id } } })).then((b) => b.data)));
        if (live) setChannels(details);
      } catch (e) {
        if (live) { setChannels([]); sayError('Could not load the channels', e); }
      }
    })();
    unwrap(client.value.GET('/v1/workspaces/{workspaceId}/campaigns', { params: { path: ws() } }))
      .then((b) => live && setCampaigns(b.data), (e) => sayError('Could not load the campaigns', e));
    unwrap(client.value.GET('/v1/workspaces/{workspaceId}/tags', { params: { path: ws() } }))
      .then((b) => live && setTags(b.data), (e) => sayError('Could not load the tags', e));
    return () => { live = false; };
  }, []);

  // ---- edit mode: the edition, its root and the root's other editions ----
  useEffect(() => {
    if (!contentId) return;
    let live = true;
    (async () => {
      try {
        const focus = (await unwrap(client.value.GET('/v1/workspaces/{workspaceId}/content/{id}', { params: { path: { ...ws(), id: contentId } } }))).data;
        const root = (await unwrap(client.value.GET('/v1/workspaces/{workspaceId}/content-roots/{id}', { params: { path: { ...ws(), id: focus.rootId } } }))).data;
        const others = root.editions.filter((e) => e.id !== focus.id && e.kind === 'post');
        const editions = [focus, ...await Promise.all(others.map((e) =>
          unwrap(client.value.GET('/v1/workspaces/{workspaceId}/content/{id}', { params: { path: { ...ws(), id: e.id } } })).then((b) => b.data)))];
        const media = await Promise.all(root.mediaIds.map((id) =>
          unwrap(client.value.GET('/v1/workspaces/{workspaceId}/media/{id}', { params: { path: { ...ws(), id } } }))
            .then((b) => toRef(b.data), (): MediaRef => ({ id, type: 'image', filename: 'unavailable item', altText: null, state: 'deleted' }))));
        // Rules of every edition's channel, disconnected ones too (the list above has the active ones).
        const det = await Promise.all(editions.map((e) =>
          unwrap(client.value.GET('/v1/workspaces/{workspaceId}/integrations/{id}', { params: { path: { ...ws(), id: e.integrationId } } })).then((b) => b.data, () => null)));
        if (!live) return;
        const l = { focus, root, editions, media };
        setExtra(Object.fromEntries(det.filter((d): d is IntegrationDetail => !!d).map((d) => [d.id, d])));
        setLoaded(l);
        const d = draftFrom(l, tz);
        base.current = clone(d);
        setDraftState(d);
        setLoadError(null);
      } catch (e) {
        if (live) setLoadError(describe(e));
      }
    })();
    return () => { live = false; };
  }, [contentId, reload]);

  const editMode = contentId !== null;
  const detailOf = (iid: string): IntegrationDetail | null => extra[iid] ?? channels?.find((c) => c.id === iid) ?? null;
  const editionOf = (iid: string) => loaded?.editions.find((e) => e.integrationId === iid) ?? null;
  const threads = (iid: string) => detailOf(iid)?.capabilities.threads ?? false;
  const channelName = (iid: string) => detailOf(iid)?.name ?? editionOf(iid)?.integration.name ?? iid;
  const platformOf = (iid: string) => detailOf(iid)?.platform ?? editionOf(iid)?.platform ?? '';
  const platformName = (iid: string) => detailOf(iid)?.platformName ?? PLATFORM_NAMES[platformOf(iid)] ?? platformOf(iid);
  /** Editions the API lets this person change (draft or scheduled, time ahead; editor role). */
  const editable = (iid: string) => editor && (!editMode || (!!editionOf(iid) && !lockedReason(editionOf(iid)!)));
  const editableEditions = loaded?.editions.filter((e) => editor && !lockedReason(e)) ?? [];
  /** Root fields (shared caption, media, planning) are open while any edition is. */
  const rootEditable = editor && (!editMode || editableEditions.length > 0);
  const ready = editMode ? loaded !== null && channels !== null : channels !== null;
  const at = draft.date && draft.time ? zonedToIso(draft.date, draft.time, tz) : null;
  const halfTime = !!draft.date !== !!draft.time;

  // ---- live check (POST content/check), debounced ----
  const checkIds = editMode ? editableEditions.map((e) => e.integrationId) : draft.channelIds;
  useEffect(() => {
    if (!editor || !ready) return;
    const empty = !checkIds.length && !draft.caption.trim() && !draft.media.length && !at;
    const n = ++checkSeq.current;
    if (empty || (editMode && !checkIds.length)) {
      setCheck({ problems: [], valid: null, busy: false, error: null });
      return;
    }
    setCheck((c) => ({ ...c, busy: true }));
    const t = setTimeout(async () => {
      const ids = [...checkIds];
      const body = buildBody(draft, at ? 'schedule' : 'draft', { at, channelIds: ids, threads });
      // An edition with media of its own is checked with that media (the composer edits the root's).
      for (const c of body.channels ?? []) {
        const e = editionOf(c.integrationId);
        if (e?.ownMedia) c.mediaIds = e.mediaIds;
      }
      try {
        const r = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/content/check', { params: { path: ws() }, body }));
        if (n === checkSeq.current) setCheck({ problems: checkProblems(r.data, ids), valid: r.data.valid, busy: false, error: null });
      } catch (e) {
        if (n === checkSeq.current) setCheck({ problems: refusal(e, { channelIds: ids }), valid: false, busy: false, error: describe(e) });
      }
    }, 400);
    return () => clearTimeout(t);
  }, [draft, ready, checkIds.join()]);

  const problems = useMemo(() => {
    const all = [...check.problems, ...refused];
    return (key: string) => {
      const seen = new Set<string>();
      return all.filter((p) => p.key === key && !seen.has(`${p.code}|${p.message}`) && seen.add(`${p.code}|${p.message}`));
    };
  }, [check.problems, refused]);

  // ---- actions ----
  const verb = { draft: 'save the draft', schedule: 'schedule', publish_now: 'publish' } as const;

  const create = async (intent: 'draft' | 'schedule' | 'publish_now') => {
    setBusy(intent);
    setRefused([]);
    notice.value = null;
    const ids = [...draft.channelIds];
    const body = buildBody(draft, intent, { at: intent === 'publish_now' ? null : at, channelIds: ids, threads });
    try {
      const r = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/content', { params: { path: ws() }, body }));
      const n = r.data.editions.length;
      const where = `${n} channel${n === 1 ? '' : 's'}`;
      say('ok', intent === 'schedule' ? `Scheduled for ${formatInZone(at, tz)} on ${where}.`
        : intent === 'publish_now' ? `Publishing now on ${where}.`
        : n ? `Saved as a draft on ${where}.` : 'Saved as an idea (no channel yet).');
      const first = r.data.editions[0];
      if (first) navigate(`/app/compose/${first.id}`);
      else setDraftState(emptyDraft());
    } catch (e) {
      setRefused(refusal(e, { channelIds: ids }));
      sayError(`Could not ${verb[intent]}`, e);
    } finally {
      setBusy(null);
    }
  };

  const saveEdits = async (then: 'save' | 'schedule' | 'publish') => {
    const l = loaded;
    if (!l) return;
    setBusy(then);
    setRefused([]);
    notice.value = null;
    const b = base.current;
    const d = draft;
    const open = l.editions.filter((e) => !lockedReason(e));
    const editionCtx = Object.fromEntries(l.editions.map((e) => [e.id, e.integrationId]));
    let step = 'save';
    let ctx: FieldContext = {};
    let changed = 0;
    try {
      if (!sameMetadata(d, b)) {
        step = 'save the planning details';
        const target = l.editions.find((e) => e.status === 'draft' || e.status === 'scheduled' || e.status === 'sent') ?? l.focus;
        await unwrap(client.value.PATCH('/v1/workspaces/{workspaceId}/content/{id}/metadata', {
          params: { path: { ...ws(), id: target.id } },
          body: { title: d.title.trim() || null, campaignId: d.campaignId || null, tagIds: d.tagIds },
        }));
        Object.assign(b, { title: d.title, campaignId: d.campaignId, tagIds: [...d.tagIds] });
        changed++;
      }
      if (!sameRoot(d, b)) {
        step = 'save the shared caption and media';
        ctx = { editions: editionCtx };
        await unwrap(client.value.PATCH('/v1/workspaces/{workspaceId}/content-roots/{id}', {
          params: { path: { ...ws(), id: l.root.id } },
          body: { caption: d.caption, mediaIds: d.media.map((m) => m.id) },
        }));
        Object.assign(b, { caption: d.caption, media: [...d.media] });
        changed++;
      }
      for (const e of open) {
        const iid = e.integrationId;
        if (sameChannel(d, b, iid)) continue;
        step = `save the post on ${channelName(iid)}`;
        ctx = { channel: iid };
        const c = channelDraft(d, iid);
        await unwrap(client.value.PATCH('/v1/workspaces/{workspaceId}/content/{id}', {
          params: { path: { ...ws(), id: e.id } },
          body: { caption: c.caption, ...(threads(iid) ? { thread: c.thread.map((caption) => ({ caption })) } : {}) },
        }));
        b.channels[iid] = { caption: c.caption, thread: [...c.thread] };
        changed++;
      }
      const timeChanged = d.date !== b.date || d.time !== b.time;
      for (const e of open) {
        const iid = e.integrationId;
        ctx = { channel: iid };
        if (then === 'schedule' || (then === 'save' && timeChanged && e.status === 'scheduled')) {
          step = `schedule the post on ${channelName(iid)}`;
          await unwrap(client.value.PATCH('/v1/workspaces/{workspaceId}/content/{id}/schedule', {
            params: { path: { ...ws(), id: e.id } }, body: { scheduledAt: at ?? '' }, headers: idem(),
          }));
          changed++;
        } else if (then === 'save' && timeChanged && e.status === 'draft' && at) {
          step = `plan the time of the post on ${channelName(iid)}`;
          await unwrap(client.value.PATCH('/v1/workspaces/{workspaceId}/content/{id}/intended-publish-time', {
            params: { path: { ...ws(), id: e.id } }, body: { scheduledAt: at },
          }));
          changed++;
        } else if (then === 'publish') {
          step = `publish the post on ${channelName(iid)}`;
          await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/content/{id}/publish', { params: { path: { ...ws(), id: e.id } } }));
          changed++;
        }
      }
      say('ok', then === 'schedule' ? `Scheduled for ${formatInZone(at, tz)}.` : then === 'publish' ? 'Publishing now.' : changed ? 'Changes saved.' : 'Nothing to save.');
      setReload((n) => n + 1);
    } catch (e) {
      setRefused(refusal(e, ctx));
      sayError(`Could not ${step}`, e);
    } finally {
      setBusy(null);
    }
  };

  const retry = async (e: ContentDetail) => {
    setBusy(`retry-${e.id}`);
    try {
      await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/content/{id}/retry', { params: { path: { ...ws(), id: e.id } } }));
      say('ok', `Retrying the post on ${e.integration.name} now.`);
      setReload((n) => n + 1);
    } catch (err) {
      sayError(`Could not retry the post on ${e.integration.name}`, err);
    } finally {
      setBusy(null);
    }
  };

  // ---- rendering ----
  const title = editMode ? 'Edit post' : 'New post';
  if (!editMode && !editor) {
    return (
      <section class="compose" aria-labelledby="compose-h">
        <h1 id="compose-h">{title}</h1>
        <p class="card">Your role in this workspace is viewer: you can read posts (open one on the <a href="/app">calendar</a>) but not write them.</p>
      </section>
    );
  }
  if (editMode && loadError) {
    return (
      <section class="compose" aria-labelledby="compose-h">
        <h1 id="compose-h">{title}</h1>
        <p class="notice error" role="alert">Could not open this post: {loadError}</p>
        <p><a href="/app">Back to the calendar</a></p>
      </section>
    );
  }
  if (!ready) {
    return (
      <section class="compose" aria-labelledby="compose-h">
        <h1 id="compose-h">{title}</h1>
        <p aria-busy="true">Loading…</p>
      </section>
    );
  }

  const selected = draft.channelIds;
  const setChannel = (iid: string, patch: Partial<{ caption: string | null; thread: string[] }>) =>
    setDraft((d) => ({ ...d, channels: { ...d.channels, [iid]: { ...channelDraft(d, iid), ...patch } } }));
  const toggleChannel = (iid: string, on: boolean) =>
    setDraft((d) => ({ ...d, channelIds: (channels ?? []).map((c) => c.id).filter((id) => (id === iid ? on : d.channelIds.includes(id))) }));
  const previewChannels: PreviewChannel[] = selected.map((iid) => {
    const det = detailOf(iid);
    const e = editionOf(iid);
    return { id: iid, platform: platformOf(iid), name: channelName(iid), username: det?.username ?? e?.integration.username ?? null, detail: det };
  });
  const mediaOf = (iid: string) => {
    const e = editionOf(iid);
    return e?.ownMedia ? e.media.map(toRef) : draft.media;
  };
  const sharedLimits = selected.filter((iid) => channelDraft(draft, iid).caption === null && detailOf(iid));
  const minLimit = sharedLimits.length ? Math.min(...sharedLimits.map((iid) => detailOf(iid)!.rules.caption.maxLength)) : null;
  const channelMediaProblems = selected.flatMap((iid) => problems(`ch:${iid}:media`).map((p) => ({ ...p, message: `${channelName(iid)}: ${p.message}` })));
  const general = problems('general');
  const localZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const anyBusy = busy !== null;

  return (
    <section class="compose" aria-labelledby="compose-h">
      <div class="compose-head">
        <h1 id="compose-h">{title}</h1>
        {editMode && loaded && <span class="hint">{`${loaded.editions.length} channel${loaded.editions.length === 1 ? '' : 's'} · created ${formatInZone(loaded.root.createdAt, tz)}`}</span>}
        <span class="spacer" />
        {editMode && editor && <a class="button" href="/app/compose">New post</a>}
      </div>
      {!editor && <p class="card readonly-note">Your role in this workspace is viewer: this post is read-only.</p>}
      <div class="compose-grid">
        <div class="compose-main">
          {/* Channels: checkboxes (new) or the editions with their status (edit). */}
          {!editMode ? (
            <section class="card section" aria-labelledby="channels-h" id="channels">
              <h2 id="channels-h">Channels</h2>
              {channels!.length === 0 ? (
                <p class="hint">No active channel in this workspace. Connect one on the <a href="/app/channels">Channels page</a>.</p>
              ) : (
                <fieldset class="channel-pick" aria-describedby="channels-problems">
                  <legend class="sr-only">Publish to</legend>
                  {channels!.map((c) => (
                    <label key={c.id} class={`channel-opt pf-${c.platform}`}>
                      <input type="checkbox" name="channel" value={c.id} checked={selected.includes(c.id)} onChange={(e) => toggleChannel(c.id, (e.currentTarget as HTMLInputElement).checked)} />
                      <span class="channel-name">{c.name}</span>
                      <span class="badge">{c.platformName}</span>
                    </label>
                  ))}
                </fieldset>
              )}
              <Problems id="channels-problems" list={problems('channels')} />
            </section>
          ) : (
            <section class="card section" aria-labelledby="editions-h" id="editions">
              <h2 id="editions-h">Channels and status</h2>
              <ul class="editions">
                {loaded!.editions.map((e) => {
                  const reason = lockedReason(e);
                  const time = e.status === 'sent' ? e.sentAt ?? e.scheduledAt : e.scheduledAt ?? e.intendedPublishAt;
                  return (
                    <li key={e.id} class={`edition st-${e.status}${e.id === loaded!.focus.id ? ' focus' : ''}`} id={`edition-${e.id}`}>
                      <div class="row">
                        <strong>{e.integration.name}</strong>
                        <span class="badge">{platformName(e.integrationId)}</span>
                        <StatusBadge e={e} />
                        {time && <span class="hint">{`${e.status === 'sent' ? 'Published' : e.scheduledAt ? 'At' : 'Planned for'} ${formatInZone(time, tz)}`}</span>}
                        {e.integration.status !== 'active' && <span class="badge warn">{`channel ${e.integration.status}`}</span>}
                      </div>
                      {e.error && <p class="edition-error" role="status">{`Error: ${e.error}`}</p>}
                      {reason && <p class="hint">{`Read-only: ${reason}`}</p>}
                      {e.permalink && /^https?:\/\//.test(e.permalink) && <p><a href={e.permalink} target="_blank" rel="noopener noreferrer">{`View on ${platformName(e.integrationId)}`}</a></p>}
                      {editor && e.status === 'failed' && (
                        <button type="button" id={`retry-${e.id}`} disabled={anyBusy} onClick={() => void retry(e)}>{busy === `retry-${e.id}` ? 'Retrying…' : 'Retry now'}</button>
                      )}
                    </li>
                  );
                })}
              </ul>
            </section>
          )}

          {/* Captions: the shared one, then one per channel that starts as the shared one. */}
          <section class="card section" aria-labelledby="caption-h" id="captions">
            <h2 id="caption-h">Caption</h2>
            <label for="caption" class="field-label">Shared caption</label>
            <textarea id="caption" rows={5} value={draft.caption} disabled={!rootEditable}
              aria-describedby="caption-count caption-problems"
              onInput={(e) => { const v = (e.currentTarget as HTMLTextAreaElement).value; setDraft((d) => ({ ...d, caption: v })); }} />
            <div class="row counters">
              <Counter id="caption-count" text={draft.caption} max={minLimit} />
              {sharedLimits.length > 0 && <span class="hint">{`Used by ${sharedLimits.map((iid) => `${channelName(iid)} (${detailOf(iid)!.rules.caption.maxLength})`).join(', ')}`}</span>}
            </div>
            <Problems id="caption-problems" list={problems('caption')} />

            {selected.map((iid) => {
              const c = channelDraft(draft, iid);
              const det = detailOf(iid);
              const max = det?.rules.caption.maxLength ?? null;
              const canEdit = editable(iid);
              const e = editionOf(iid);
              const reason = e ? lockedReason(e) : null;
              const cid = `ch-${iid}`;
              return (
                <div key={iid} class={`channel-caption pf-${platformOf(iid)}`} id={cid} role="group" aria-labelledby={`${cid}-h`}>
                  <div class="row">
                    <h3 id={`${cid}-h`}>{channelName(iid)}</h3>
                    <span class="badge">{platformName(iid)}</span>
                    <span class={`badge${c.caption !== null ? ' custom' : ''}`} id={`${cid}-mode`}>{c.caption !== null ? 'customised' : 'follows the shared caption'}</span>
                    {c.caption !== null && canEdit && (
                      <button type="button" class="link" id={`${cid}-reset`} onClick={() => setChannel(iid, { caption: null })}>Reset to the shared caption</button>
                    )}
                  </div>
                  <label for={`${cid}-caption`} class="field-label">{`Caption on ${channelName(iid)}`}</label>
                  <textarea id={`${cid}-caption`} rows={4} value={effectiveCaption(draft, iid)} disabled={!canEdit}
                    aria-describedby={`${cid}-count ${cid}-caption-problems`}
                    onInput={(ev) => setChannel(iid, { caption: (ev.currentTarget as HTMLTextAreaElement).value })} />
                  <div class="row counters"><Counter id={`${cid}-count`} text={effectiveCaption(draft, iid)} max={max} /></div>
                  <Problems id={`${cid}-caption-problems`} list={[...problems(`ch:${iid}:caption`), ...problems(`ch:${iid}:channel`)]} />
                  {reason && <p class="hint">{`Read-only: ${reason}`}</p>}
                  {e?.ownMedia && <p class="hint">{`This channel has media of its own (${e.media.length}); the composer keeps it as it is.`}</p>}

                  {threads(iid) && (
                    <div class="thread" role="group" aria-label={`Thread on ${channelName(iid)}`}>
                      {c.thread.map((t, n) => (
                        <div key={n} class="thread-msg">
                          <label for={`${cid}-thread-${n}`} class="field-label">{`Thread message ${n + 2} on ${channelName(iid)}`}</label>
                          <textarea id={`${cid}-thread-${n}`} rows={3} value={t} disabled={!canEdit}
                            aria-describedby={`${cid}-thread-${n}-count ${cid}-thread-${n}-problems`}
                            onInput={(ev) => { const v = (ev.currentTarget as HTMLTextAreaElement).value; setChannel(iid, { thread: c.thread.map((x, i) => (i === n ? v : x)) }); }} />
                          <div class="row counters">
                            <Counter id={`${cid}-thread-${n}-count`} text={t} max={max} />
                            {canEdit && <button type="button" class="link" onClick={() => setChannel(iid, { thread: c.thread.filter((_, i) => i !== n) })}>{`Remove message ${n + 2}`}</button>}
                          </div>
                          <Problems id={`${cid}-thread-${n}-problems`} list={problems(`ch:${iid}:thread.${n}`)} />
                        </div>
                      ))}
                      <Problems id={`${cid}-thread-problems`} list={problems(`ch:${iid}:thread`)} />
                      {canEdit && <button type="button" id={`${cid}-add-thread`} onClick={() => setChannel(iid, { thread: [...c.thread, ''] })}>Add thread message</button>}
                    </div>
                  )}
                </div>
              );
            })}
          </section>

          <MediaSection media={draft.media} editable={rootEditable}
            problems={(k) => (k === 'media' ? [...problems('media'), ...channelMediaProblems] : problems(k))}
            onChange={(media) => setDraft((d) => ({ ...d, media }))} />

          {/* Planning metadata. */}
          <section class="card section" aria-labelledby="planning-h" id="planning">
            <h2 id="planning-h">Planning</h2>
            <div class="form-grid planning-grid">
              <div>
                <label for="title" class="field-label">Internal title (never published)</label>
                <input id="title" value={draft.title} maxLength={500} disabled={!rootEditable} aria-describedby="title-problems"
                  onInput={(e) => { const v = (e.currentTarget as HTMLInputElement).value; setDraft((d) => ({ ...d, title: v })); }} />
                <Problems id="title-problems" list={problems('title')} />
              </div>
              <div>
                <label for="campaign" class="field-label">Campaign</label>
                <select id="campaign" value={draft.campaignId} disabled={!rootEditable} aria-describedby="campaign-problems"
                  onChange={(e) => { const v = (e.currentTarget as HTMLSelectElement).value; setDraft((d) => ({ ...d, campaignId: v })); }}>
                  <option value="">No campaign</option>
                  {campaigns.map((c) => <option key={c.id} value={c.id}>{c.name}</option>)}
                </select>
                <Problems id="campaign-problems" list={problems('campaign')} />
              </div>
            </div>
            <fieldset class="tags" aria-describedby="tags-problems">
              <legend class="field-label">Tags</legend>
              {tags.length === 0 ? <p class="hint">No tags in this workspace yet.</p> : tags.map((t) => (
                <label key={t.id} class="tag-opt">
                  <input type="checkbox" name="tag" value={t.id} checked={draft.tagIds.includes(t.id)} disabled={!rootEditable}
                    onChange={(e) => { const on = (e.currentTarget as HTMLInputElement).checked; setDraft((d) => ({ ...d, tagIds: on ? [...d.tagIds, t.id] : d.tagIds.filter((x) => x !== t.id) })); }} />
                  {` ${t.name}`}
                </label>
              ))}
            </fieldset>
            <Problems id="tags-problems" list={problems('tags')} />
          </section>

          {/* When: wall-clock date and time in the workspace's time zone. */}
          <section class="card section" aria-labelledby="when-h" id="when">
            <h2 id="when-h">When</h2>
            <p class="hint" id="tz-note">{`Times are in the workspace's time zone, ${tz}.`}</p>
            <div class="row when-row">
              <label class="stack-label">Date <input id="date" type="date" value={draft.date} disabled={!rootEditable} aria-describedby="tz-note schedule-problems"
                onInput={(e) => { const v = (e.currentTarget as HTMLInputElement).value; setDraft((d) => ({ ...d, date: v })); }} /></label>
              <label class="stack-label">{`Time (${tz})`} <input id="time" type="time" value={draft.time} disabled={!rootEditable} aria-describedby="tz-note schedule-problems"
                onInput={(e) => { const v = (e.currentTarget as HTMLInputElement).value; setDraft((d) => ({ ...d, time: v })); }} /></label>
              {rootEditable && (draft.date || draft.time) && <button type="button" class="link" onClick={() => setDraft((d) => ({ ...d, date: '', time: '' }))}>Clear</button>}
            </div>
            <p class="hint" id="when-summary" role="status">
              {at ? `${formatInZone(at, tz)}${localZone !== tz ? `; your time: ${formatInZone(at, localZone)}` : ''}` : halfTime ? 'Choose both a date and a time.' : 'No time chosen: a draft without a time, or publish now.'}
            </p>
            <Problems id="schedule-problems" list={problems('schedule')} />
          </section>

          {/* Actions. */}
          <section class="card section actions" aria-labelledby="actions-h" id="actions">
            <h2 id="actions-h" class="sr-only">Actions</h2>
            <p class="hint check-state" id="check-state" role="status">
              {!editor ? '' : check.busy ? 'Checking against the channels\' rules…' : check.error ? `The check could not run: ${check.error}` : check.valid === true ? 'Checked: every channel\'s rules are met.' : check.valid === false ? 'Checked: see the problems beside the fields.' : ''}
            </p>
            <Problems id="general-problems" list={general} />
            {editor && !editMode && (
              <div class="row">
                <button type="button" id="save-draft" disabled={anyBusy} onClick={() => void create('draft')}>{busy === 'draft' ? 'Saving…' : 'Save draft'}</button>
                <button type="button" id="schedule" class="primary" disabled={anyBusy} onClick={() => void create('schedule')}>{busy === 'schedule' ? 'Scheduling…' : 'Schedule'}</button>
                <button type="button" id="publish-now" disabled={anyBusy} onClick={() => void create('publish_now')}>{busy === 'publish_now' ? 'Publishing…' : 'Publish now'}</button>
              </div>
            )}
            {editor && editMode && rootEditable && (
              <div class="row">
                <button type="button" id="save" disabled={anyBusy} onClick={() => void saveEdits('save')}>{busy === 'save' ? 'Saving…' : 'Save changes'}</button>
                <button type="button" id="schedule" class="primary" disabled={anyBusy} onClick={() => void saveEdits('schedule')}>{busy === 'schedule' ? 'Scheduling…' : editableEditions.some((e) => e.status === 'scheduled') ? 'Save and reschedule' : 'Schedule'}</button>
                <button type="button" id="publish-now" disabled={anyBusy} onClick={() => void saveEdits('publish')}>{busy === 'publish' ? 'Publishing…' : 'Publish now'}</button>
              </div>
            )}
            {editor && editMode && !rootEditable && <p class="hint">No edition of this post can be changed now (see each channel's status).</p>}
          </section>
          {editor && editMode && loaded && (editableEditions.length > 0 || reviewLinks) && (
            <ReviewRequest contentIds={editableEditions.map((e) => e.id)} links={reviewLinks}
              defaultTitle={loaded.root.organizationalTitle || shortTitle(loaded.root.caption ?? '') || 'Review'}
              onSent={(links) => { setReviewLinks(links); setReload((n) => n + 1); }} />
          )}
        </div>
        <div class="compose-side">
          <Preview draft={draft} channels={previewChannels} mediaOf={mediaOf} />
        </div>
      </div>
    </section>
  );
}
