// The Approvals page (/app/approvals, docs/web-app.md): the member's review
// inbox (GET {ws}/reviews/inbox) with decide, comment and each item's
// activity, and the workspace's reviews (GET {ws}/reviews) with their status;
// a draft review can be sent here, and the client links its send answers are
// shown once. Reviews are created by the API or the composer, not here.
import { useEffect, useState } from 'preact/hooks';
import { can, client, describe, fieldProblems, type Schema, unwrap, workspace, wsId } from '../lib/api.ts';
import { CopyButton, FieldError, formatInZone, say, sayError } from '../lib/ui.tsx';
import './approvals.css';

type Integration = Schema<'Integration'>;
type ReviewItem = Schema<'ReviewItem'>;
type Review = Schema<'Review'>;
type Activity = Schema<'ReviewActivity'>;
type DecisionResult = Schema<'ReviewDecisionResult'>;
type Link = Schema<'ReviewLinkToken'>;

const URGENCIES = [
  { value: 'all', label: 'Any time' },
  { value: 'overdue', label: 'Overdue' },
  { value: 'today', label: 'Due today' },
  { value: 'week', label: 'Due this week' },
  { value: 'later', label: 'Later or no due time' },
] as const;
type Urgency = (typeof URGENCIES)[number]['value'];
const STATUSES = ['draft', 'active', 'completed', 'cancelled', 'expired'] as const;
type Status = (typeof STATUSES)[number];

const tz = () => workspace.value?.timezone ?? 'UTC';
const STATUS_BADGE: Record<Status, string> = { draft: '', active: 'warn', completed: 'ok', cancelled: 'bad', expired: 'bad' };
const URGENCY_BADGE: Record<string, string> = { overdue: 'bad', today: 'warn', week: '', later: '' };
const URGENCY_LABEL: Record<string, string> = { overdue: 'Overdue', today: 'Due today', week: 'Due this week', later: 'Later' };

function activityText(a: Activity): string {
  const stage = (a.data as { stageName?: string }).stageName;
  switch (a.event) {
    case 'approved': return a.kind === 'system' ? 'Approved at the last stage' : 'approved';
    case 'changes_requested': return a.kind === 'system' ? 'Changes requested: the content went back to its author' : 'requested changes';
    case 'override_approved': return 'approved by override';
    case 'override_changes_requested': return 'requested changes by override';
    case 'revoked': return 'withdrew a decision';
    case 'comment': return 'commented';
    case 'stage_opened': return stage ? `Stage "${stage}" opened` : 'The next stage opened';
    case 'sent': return 'Review sent';
    case 'reminded': return 'Reminder sent';
    default: return a.event.replaceAll('_', ' ');
  }
}

export function ApprovalsPage() {
  // Bumped by a decision in the inbox, so the reviews list reads the statuses again.
  const [version, setVersion] = useState(0);
  const [channels, setChannels] = useState<Map<string, Integration>>(new Map());
  useEffect(() => {
    unwrap(client.value.GET('/v1/workspaces/{workspaceId}/integrations', { params: { path: { workspaceId: wsId() } } }))
      .then((b) => setChannels(new Map(b.data.map((c) => [c.id, c]))), (e) => sayError('Could not load the channels', e));
  }, []);
  return (
    <div class="approvals">
      <h1>Approvals</h1>
      <Inbox channels={channels} onDecided={() => setVersion((v) => v + 1)} />
      <Reviews version={version} />
    </div>
  );
}

// ---- the inbox -----------------------------------------------------------------------------

function Inbox({ channels, onDecided }: { channels: Map<string, Integration>; onDecided: () => void }) {
  const [platform, setPlatform] = useState('all');
  const [urgency, setUrgency] = useState<Urgency>('all');
  const [items, setItems] = useState<ReviewItem[] | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const load = async () => {
    setLoading(true);
    try {
      const r = await unwrap(client.value.GET('/v1/workspaces/{workspaceId}/reviews/inbox', {
        params: { path: { workspaceId: wsId() }, query: { platform, urgency } },
      }));
      setItems(r.data);
      setError(null);
    } catch (e) {
      setError(describe(e));
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    void load();
  }, [platform, urgency]);

  const platforms = [...new Set([...channels.values()].map((c) => c.platform))].sort();
  return (
    <section class="card section" aria-labelledby="inbox-h" id="inbox">
      <h2 id="inbox-h">Waiting on you</h2>
      <div class="filters">
        <label>Platform
          <select id="inbox-platform" value={platform} onChange={(e) => setPlatform((e.currentTarget as HTMLSelectElement).value)}>
            <option value="all">All platforms</option>
            {platforms.map((p) => <option key={p} value={p}>{p}</option>)}
          </select>
        </label>
        <label>Due
          <select id="inbox-urgency" value={urgency} onChange={(e) => setUrgency((e.currentTarget as HTMLSelectElement).value as Urgency)}>
            {URGENCIES.map((u) => <option key={u.value} value={u.value}>{u.label}</option>)}
          </select>
        </label>
        <span class="spacer" />
        <button type="button" id="inbox-refresh" disabled={loading} onClick={() => void load()}>{loading ? 'Loading…' : 'Refresh'}</button>
      </div>
      {error && <p class="notice error" role="alert">Could not load your inbox: {error}</p>}
      {items === null && !error && <p aria-busy="true">Loading…</p>}
      {items !== null && items.length === 0 && (
        <p class="hint ap-empty" id="inbox-empty">Nothing waits on you{platform !== 'all' || urgency !== 'all' ? ' with these filters' : ''}.</p>
      )}
      {items !== null && items.length > 0 && (
        <ul class="ap-inbox">
          {items.map((it) => <li key={it.id}><InboxItem item={it} channel={channels.get(it.integrationId) ?? null} onDecided={onDecided} /></li>)}
        </ul>
      )}
    </section>
  );
}

function InboxItem({ item, channel, onDecided }: { item: ReviewItem; channel: Integration | null; onDecided: () => void }) {
  const [activity, setActivity] = useState<Activity[] | null>(null);
  const [activityError, setActivityError] = useState<string | null>(null);
  const [text, setText] = useState('');
  const [busy, setBusy] = useState<null | 'approved' | 'changes_requested' | 'comment'>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [result, setResult] = useState<DecisionResult | null>(null);
  const path = { workspaceId: wsId(), reviewId: item.reviewId, itemId: item.id };
  const fieldId = `ap-comment-${item.id}`;

  const loadActivity = async () => {
    try {
      const r = await unwrap(client.value.GET('/v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId}/activity', { params: { path } }));
      setActivity(r.data);
      setActivityError(null);
    } catch (e) {
      setActivityError(describe(e));
    }
  };
  useEffect(() => {
    void loadActivity();
  }, [item.id]);

  /** A refusal: next to the comment box when it concerns the text, else in the page's notice. */
  const refused = (what: string, e: unknown) => {
    const f = fieldProblems(e).find((p) => ['comment', 'body'].includes((p.field ?? p.path ?? '').replace(/^\//, '')));
    if (f) setProblem(describe(e));
    else {
      setProblem(null);
      sayError(what, e);
    }
  };

  const decide = async (decision: 'approved' | 'changes_requested') => {
    const comment = text.trim();
    if (decision === 'changes_requested' && !comment) {
      setProblem('Say what should change: a comment is needed to request changes.');
      document.getElementById(fieldId)?.focus();
      return;
    }
    setBusy(decision);
    setProblem(null);
    try {
      const r = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId}/decision', {
        params: { path },
        body: comment ? { decision, comment } : { decision },
      }));
      setResult(r.data);
      setText('');
      onDecided();
      say('ok', decision === 'approved' ? `Approved "${item.reviewTitle ?? 'the item'}".` : `Requested changes on "${item.reviewTitle ?? 'the item'}".`);
      await loadActivity();
    } catch (e) {
      refused('Could not record the decision', e);
    } finally {
      setBusy(null);
    }
  };

  const comment = async (ev: Event) => {
    ev.preventDefault();
    const body = text.trim();
    if (!body) {
      setProblem('Write a comment first.');
      return;
    }
    setBusy('comment');
    setProblem(null);
    try {
      const r = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId}/comments', { params: { path }, body: { body } }));
      setActivity((a) => [...(a ?? []), r.data]);
      setText('');
      say('ok', 'Comment added.');
    } catch (e) {
      refused('Could not add the comment', e);
    } finally {
      setBusy(null);
    }
  };

  const h = `ap-item-${item.id}-h`;
  const decided = result !== null;
  // A completed review takes no more comments (the API answers 409): the form goes with it.
  const editor = can('editor') && (!result || result.reviewStatus === 'active');
  const outcome = result
    ? result.itemState === 'approved' ? 'Approved: every stage is done.'
      : result.itemState === 'changes_requested' ? 'Changes requested: the content went back to its author.'
      : `Your ${result.decision === 'approved' ? 'approval' : 'decision'} is recorded; the item waits on ${result.currentStage !== item.currentStage ? 'the next stage' : 'the other approvers of this stage'}.`
    : null;

  return (
    <article class="ap-item" aria-labelledby={h} data-item={item.id}>
      <div class="ap-item-head">
        <h3 id={h}>{item.reviewTitle ?? 'Review'}<span class="ap-sub"> · {channel?.name ?? item.platform} ({item.platform})</span></h3>
        {item.urgency && <span class={`badge ${URGENCY_BADGE[item.urgency] ?? ''}`}>{URGENCY_LABEL[item.urgency] ?? item.urgency}</span>}
      </div>
      <dl class="d-fields">
        <dt>Stage</dt><dd>{item.currentStageName ?? `Stage ${item.currentStage + 1}`}</dd>
        {item.dueAt && (<><dt>Due</dt><dd>{formatInZone(item.dueAt, tz())}</dd></>)}
        {item.intendedPublishAt && (<><dt>Publishes</dt><dd>{formatInZone(item.intendedPublishAt, tz())}</dd></>)}
      </dl>
      <p class="d-caption">{item.caption || <em>(no caption)</em>}</p>
      <p><a href={`/app/compose/${item.contentId}`}>Open in the composer</a></p>

      {decided && <p class="notice ok ap-outcome" role="status" data-state={result.itemState}>{outcome}</p>}

      {editor && (
        <form class="ap-respond" onSubmit={comment} aria-label={`Respond to ${item.reviewTitle ?? 'this item'}`}>
          <label for={fieldId}>{decided ? 'Comment' : 'Comment (needed to request changes)'}</label>
          <textarea
            id={fieldId}
            value={text}
            maxLength={5000}
            aria-invalid={problem ? true : undefined}
            aria-describedby={problem ? `${fieldId}-err` : undefined}
            onInput={(e) => setText((e.currentTarget as HTMLTextAreaElement).value)}
          />
          <FieldError id={`${fieldId}-err`} text={problem} />
          <div class="row">
            {!decided && (
              <>
                <button type="button" class="primary ap-approve" disabled={busy !== null} onClick={() => void decide('approved')}>
                  {busy === 'approved' ? 'Approving…' : 'Approve'}
                </button>
                <button type="button" class="danger ap-changes" disabled={busy !== null} onClick={() => void decide('changes_requested')}>
                  {busy === 'changes_requested' ? 'Sending…' : 'Request changes'}
                </button>
              </>
            )}
            <button type="submit" class="ap-comment" disabled={busy !== null}>{busy === 'comment' ? 'Posting…' : 'Post comment'}</button>
          </div>
        </form>
      )}
      {!can('editor') && <p class="hint">Viewers follow reviews; deciding and commenting need the editor role.</p>}

      <details class="ap-activity" open>
        <summary>Activity{activity ? ` (${activity.length})` : ''}</summary>
        {activityError && <p class="field-error" role="alert">Could not load the activity: {activityError}</p>}
        {!activity && !activityError && <p class="hint" aria-busy="true">Loading…</p>}
        {activity && activity.length === 0 && <p class="hint">Nothing yet.</p>}
        {activity && activity.length > 0 && (
          <ol class="ap-feed">
            {activity.map((a) => (
              <li key={a.id} data-event={a.event}>
                <span>{a.kind === 'system' ? activityText(a) : <><strong>{a.actorName ?? a.actor ?? 'Someone'}</strong> {activityText(a)}</>}</span>
                <time class="hint" dateTime={a.createdAt}>{formatInZone(a.createdAt, tz())}</time>
                {a.body && <p class="ap-body">{a.body}</p>}
                {(a.attachments ?? []).map((f) => (
                  <p key={f.id} class="ap-attachment"><a href={f.viewUrl} target="_blank" rel="noopener noreferrer">{f.filename}</a></p>
                ))}
              </li>
            ))}
          </ol>
        )}
      </details>
    </article>
  );
}

// ---- the workspace's reviews -----------------------------------------------------------------

function counts(r: Review): string {
  const items = (r.items ?? []).filter((i) => i.state !== 'removed');
  if (items.length === 0) return 'No items';
  const by = new Map<string, number>();
  for (const i of items) by.set(i.state, (by.get(i.state) ?? 0) + 1);
  const names: Record<string, string> = { pending: 'pending', approved: 'approved', changes_requested: 'changes requested' };
  return [...by].map(([s, n]) => `${n} ${names[s] ?? s}`).join(', ');
}

function Reviews({ version }: { version: number }) {
  const [status, setStatus] = useState<Status | ''>('');
  const [reviews, setReviews] = useState<Review[] | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [sending, setSending] = useState<string | null>(null);
  const [links, setLinks] = useState<{ title: string; links: Link[] } | null>(null);

  const load = async () => {
    setLoading(true);
    try {
      const r = await unwrap(client.value.GET('/v1/workspaces/{workspaceId}/reviews', {
        params: { path: { workspaceId: wsId() }, query: status ? { status } : {} },
      }));
      setReviews(r.data);
      setError(null);
    } catch (e) {
      setError(describe(e));
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    void load();
  }, [status, version]);

  const send = async (r: Review) => {
    setSending(r.id);
    try {
      const res = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/reviews/{reviewId}/send', {
        params: { path: { workspaceId: wsId(), reviewId: r.id } },
      }));
      // The tokens are in this answer only (stored as hashes): shown here once, kept nowhere else.
      if (res.data.links.length > 0) setLinks({ title: r.title, links: res.data.links });
      say('ok', `Sent "${r.title}"${res.data.links.length ? `; ${res.data.links.length} client link${res.data.links.length === 1 ? '' : 's'} below` : ''}.`);
      await load();
    } catch (e) {
      sayError(`Could not send "${r.title}"`, e);
    } finally {
      setSending(null);
    }
  };

  const editor = can('editor');
  return (
    <section class="card section" aria-labelledby="reviews-h" id="reviews">
      <h2 id="reviews-h">Reviews</h2>
      {links && (
        <div class="ap-links" id="client-links" role="region" aria-labelledby="client-links-h">
          <h3 id="client-links-h">Client links of "{links.title}"</h3>
          <p>Send each client its own link. They are shown this once: the server keeps only a fingerprint of each, and this page keeps none.</p>
          <ul>
            {links.links.map((l) => (
              <li key={l.id}>
                <strong>{l.name}</strong> <span class="hint">{l.email}</span>
                {l.expiresAt && <span class="hint"> · works until {formatInZone(l.expiresAt, tz())}</span>}
                <div class="row">
                  <code class="secret ap-link-url">{l.url}</code>
                  <CopyButton text={l.url} label="Copy link" />
                </div>
              </li>
            ))}
          </ul>
          <button type="button" onClick={() => setLinks(null)}>I have copied them</button>
        </div>
      )}
      <div class="filters">
        <label>Status
          <select id="reviews-status" value={status} onChange={(e) => setStatus((e.currentTarget as HTMLSelectElement).value as Status | '')}>
            <option value="">All</option>
            {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
        <span class="spacer" />
        <button type="button" disabled={loading} onClick={() => void load()}>{loading ? 'Loading…' : 'Refresh'}</button>
      </div>
      {error && <p class="notice error" role="alert">Could not load the reviews: {error}</p>}
      {reviews === null && !error && <p aria-busy="true">Loading…</p>}
      {reviews !== null && reviews.length === 0 && (
        <p class="hint" id="reviews-empty">No reviews{status ? ` with status ${status}` : ''} yet. Reviews are started from the composer or the API.</p>
      )}
      {reviews !== null && reviews.length > 0 && (
        <div class="ap-table-wrap">
          <table class="list ap-reviews">
            <thead>
              <tr><th scope="col">Review</th><th scope="col">Status</th><th scope="col">Items</th><th scope="col">Stages</th><th scope="col">Sent</th><th scope="col">Due</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
            </thead>
            <tbody>
              {reviews.map((r) => (
                <tr key={r.id} data-review={r.id}>
                  <td>{r.title}{r.clientReviewers.length > 0 && <div class="hint">Clients: {r.clientReviewers.map((c) => c.name).join(', ')}</div>}</td>
                  <td><span class={`badge ${STATUS_BADGE[r.status]}`} data-status={r.status}>{r.status}</span></td>
                  <td>{counts(r)}</td>
                  <td>{r.stages.map((s) => s.name).join(' → ') || '—'}</td>
                  <td>{r.sentAt ? formatInZone(r.sentAt, tz()) : '—'}</td>
                  <td>{r.dueAt ? formatInZone(r.dueAt, tz()) : '—'}</td>
                  <td>
                    {r.status === 'draft' && editor && (
                      <button type="button" class="primary ap-send" aria-label={`Send ${r.title}`} disabled={sending !== null} onClick={() => void send(r)}>
                        {sending === r.id ? 'Sending…' : 'Send'}
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
