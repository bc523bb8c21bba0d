// The client review page at /review (server/web-app.ts, docs/web-app.md):
// what a client reviewer opens from the link a review's send or submit
// answers (ReviewLinkToken.url, `<base>/review#token=<token>`). No account:
// the link token is the credential, sent only as the bearer of the
// /v1/review-link routes. It comes in the URL fragment (never sent to a
// server), is kept in sessionStorage so a reload works, and is removed from
// the address bar at once. It does not use web/lib/api.ts: that is the app's
// session, this page has its own client.
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { createPressroomClient, PressroomError, unwrap, type PressroomClient, type Schema } from '../../clients/typescript/src/client.ts';
import '../app.css';
import './review.css';

type View = Schema<'ReviewLinkView'>;
type Item = View['items'][number];
type Media = Item['media'][number];
type Activity = Schema<'ReviewActivity'>;
type DecisionResult = Schema<'ReviewDecisionResult'>;

const TOKEN_KEY = 'pressroom.reviewLink';

/** The link's token: from the fragment (then kept and removed from the address bar), else the one this tab kept. */
function takeToken(): string | null {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromHash) {
    sessionStorage.setItem(TOKEN_KEY, fromHash);
    history.replaceState(null, '', location.pathname + location.search);
    return fromHash;
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

// ---- errors ------------------------------------------------------------------------------

interface FieldProblem { field?: string; path?: string; code?: string; reason?: string; message?: string }

function fieldProblems(e: unknown): FieldProblem[] {
  if (!(e instanceof PressroomError)) return [];
  const d = e.details as { fields?: FieldProblem[] } | null;
  return Array.isArray(d?.fields) ? d.fields : [];
}

/** "Message (CODE; field: reason; request id)", as the app's pages say it (web/lib/api.ts). */
function describe(e: unknown): string {
  if (!(e instanceof PressroomError)) return e instanceof Error ? e.message : String(e);
  const parts = [e.code];
  for (const f of fieldProblems(e)) parts.push(`${f.field ?? f.path ?? ''}: ${f.message ?? f.reason ?? f.code ?? ''}`.trim());
  if (e.requestId) parts.push(`request ${e.requestId}`);
  return `${e.message} (${parts.join('; ')})`;
}

/** A 401 on a link route: the link is unknown, revoked or expired, or the review ended (api.gate_review_link). */
const linkEnded = (e: unknown): e is PressroomError => e instanceof PressroomError && e.status === 401;

// ---- formatting --------------------------------------------------------------------------

const PLATFORMS: Record<string, string> = {
  x: 'X', linkedin: 'LinkedIn', bluesky: 'Bluesky', mastodon: 'Mastodon', instagram: 'Instagram', facebook: 'Facebook',
  threads: 'Threads', tiktok: 'TikTok', youtube: 'YouTube', pinterest: 'Pinterest',
};
const platformName = (p: string) => PLATFORMS[p] ?? (p ? p[0].toUpperCase() + p.slice(1) : '');

/** An instant in the reader's own time zone (a client has no workspace). */
function when(iso: string | null | undefined): string {
  if (!iso) return '';
  return new Intl.DateTimeFormat(undefined, {
    weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short',
  }).format(new Date(iso));
}

function activityText(a: Activity): string {
  const stage = (a.data as { stageName?: string }).stageName;
  if (a.kind === 'system') {
    switch (a.event) {
      case 'approved': return 'The post is approved.';
      case 'changes_requested': return 'Changes were requested.';
      case 'stage_opened': return stage ? `The review moved to the stage "${stage}".` : 'The next stage opened.';
      case 'sent': return 'The review was sent.';
      case 'reminded': return 'A reminder was sent.';
      case 'removed': return 'The post was taken out of the review.';
      case 'stages_replaced': return 'The review\'s stages changed.';
      case 'completed': return 'The review is complete.';
      case 'cancelled': return 'The review was cancelled.';
      case 'expired': return 'The review expired.';
      default: return a.event.replaceAll('_', ' ');
    }
  }
  switch (a.event) {
    case 'approved': return 'approved';
    case 'changes_requested': return 'requested changes';
    case 'override_approved': return 'approved by override';
    case 'override_changes_requested': return 'requested changes by override';
    case 'revoked': return 'withdrew a decision';
    case 'comment': return 'commented';
    default: return a.event.replaceAll('_', ' ');
  }
}

// ---- the page ----------------------------------------------------------------------------

type Phase =
  | { kind: 'loading' }
  | { kind: 'missing' }
  | { kind: 'ended'; message: string; code: string; requestId: string | null }
  | { kind: 'failed'; text: string }
  | { kind: 'ready'; view: View; completed: boolean };

function ReviewPage() {
  const [token] = useState(takeToken);
  const api = useRef<PressroomClient | null>(null);
  if (token && !api.current) {
    api.current = createPressroomClient({ baseUrl: location.origin, apiKey: token, retry: { maxRetries: 2, maxDelayMs: 5_000 } });
  }
  const [phase, setPhase] = useState<Phase>(token ? { kind: 'loading' } : { kind: 'missing' });
  const [refreshing, setRefreshing] = useState(false);
  const [refreshError, setRefreshError] = useState<string | null>(null);

  const ended = (e: PressroomError) => setPhase({ kind: 'ended', message: e.message, code: e.code, requestId: e.requestId });

  /** Reads the review; an ended link turns the page into the ended page. */
  const load = async () => {
    if (!api.current) return;
    setRefreshing(true);
    try {
      const r = await unwrap(api.current.GET('/v1/review-link'));
      setPhase({ kind: 'ready', view: r.data, completed: false });
      setRefreshError(null);
    } catch (e) {
      if (linkEnded(e)) ended(e);
      else {
        // A failed refresh keeps what is on screen and says so; a failed first load is the failed page.
        setRefreshError(describe(e));
        setPhase((p) => (p.kind === 'ready' ? p : { kind: 'failed', text: describe(e) }));
      }
    } finally {
      setRefreshing(false);
    }
  };

  useEffect(() => {
    void load();
  }, []);

  useEffect(() => {
    const titles: Record<Phase['kind'], string> = {
      loading: 'Review', missing: 'Review link needed', ended: 'Review link ended', failed: 'Review', ready: 'Review',
    };
    document.title = phase.kind === 'ready' ? `${phase.view.review.title} · Review · Pressroom` : `${titles[phase.kind]} · Pressroom`;
  }, [phase]);

  const decided = (itemId: string, r: DecisionResult) => {
    setPhase((p) => {
      if (p.kind !== 'ready') return p;
      const items = p.view.items.map((it) =>
        it.id === itemId
          ? {
            ...it,
            state: r.itemState === 'removed' ? it.state : r.itemState,
            currentStage: r.currentStage,
            // the next stage's name comes with the review read below
            currentStageName: r.currentStage === it.currentStage ? it.currentStageName : null,
            awaitingYou: false,
          }
          : it);
      // The last decision completes the review, which ends the link: keep what is on screen and say so.
      return { kind: 'ready', view: { ...p.view, review: { ...p.view.review, status: r.reviewStatus }, items }, completed: r.reviewStatus !== 'active' };
    });
    if (r.reviewStatus === 'active') void load();
  };

  return (
    <>
      <header class="bar">
        <strong class="brand">Pressroom</strong>
        <span class="rv-tag">Client review</span>
      </header>
      <main class="rv-main">
        {phase.kind === 'loading' && <p class="card" aria-busy="true">Loading the review…</p>}
        {phase.kind === 'missing' && (
          <section class="card rv-end" id="missing" aria-labelledby="missing-h">
            <h1 id="missing-h">This page needs your review link</h1>
            <p>Open the review link you were sent, in full, as it came (it ends with <code>#token=</code> and a long code).</p>
            <p>If you no longer have it, ask the person who sent you the review for a new link.</p>
          </section>
        )}
        {phase.kind === 'ended' && (
          <section class="card rv-end" id="ended" aria-labelledby="ended-h">
            <h1 id="ended-h">This review link has ended</h1>
            <p>
              {phase.code === 'PLAN_REQUIRED'
                ? 'Client review is not available for this organization at the moment.'
                : 'The review it belongs to is finished, was cancelled or has expired, or the link was withdrawn. Decisions and comments can no longer be made here.'}
            </p>
            <p>If you still need to review these posts, ask the person who sent you the link for a new one.</p>
            <p class="hint">{phase.message} ({phase.code}{phase.requestId ? `; request ${phase.requestId}` : ''})</p>
          </section>
        )}
        {phase.kind === 'failed' && (
          <section class="card rv-end" aria-labelledby="failed-h">
            <h1 id="failed-h">The review could not be loaded</h1>
            <p id="notice" class="notice error" role="alert">{phase.text}</p>
            <button type="button" class="primary" disabled={refreshing} onClick={() => { setPhase({ kind: 'loading' }); void load(); }}>Try again</button>
          </section>
        )}
        {phase.kind === 'ready' && api.current && (
          <>
            {refreshError && <p id="notice" class="notice error" role="alert">Could not read the review again: {refreshError}</p>}
            <Review view={phase.view} completed={phase.completed} api={api.current} onEnded={ended} onDecided={decided} onStale={() => void load()} />
          </>
        )}
      </main>
    </>
  );
}

function Review({ view, completed, api, onEnded, onDecided, onStale }: {
  view: View;
  completed: boolean;
  api: PressroomClient;
  onEnded: (e: PressroomError) => void;
  onDecided: (itemId: string, r: DecisionResult) => void;
  onStale: () => void;
}) {
  const waiting = view.items.filter((i) => i.awaitingYou && i.state === 'pending').length;
  return (
    <>
      <section class="card rv-intro" aria-labelledby="review-h">
        <h1 id="review-h">{view.review.title}</h1>
        <p class="rv-for">For {view.reviewer.name} ({view.reviewer.email})</p>
        {view.review.message && <p class="rv-message">{view.review.message}</p>}
        <dl class="rv-facts">
          {view.review.dueAt && (<><dt>Please decide by</dt><dd>{when(view.review.dueAt)}</dd></>)}
          {view.reviewer.expiresAt && (<><dt>This link works until</dt><dd>{when(view.reviewer.expiresAt)}</dd></>)}
          <dt>Posts</dt>
          <dd id="progress">{view.items.length} in this review; {waiting === 0 ? 'none waits' : `${waiting} ${waiting === 1 ? 'waits' : 'wait'}`} for your decision</dd>
        </dl>
        {completed && (
          <p id="completed" class="notice ok" role="status">
            Thank you: every post in this review has a decision, so the review is complete and this link has now ended.
          </p>
        )}
      </section>
      {view.items.length === 0 && <p class="card">There are no posts in this review any more.</p>}
      {view.items.map((item, i) => (
        <ItemCard
          key={item.id}
          item={item}
          index={i + 1}
          total={view.items.length}
          me={view.reviewer.email}
          open={view.review.status === 'active' && !completed}
          api={api}
          onEnded={onEnded}
          onDecided={onDecided}
          onStale={onStale}
        />
      ))}
    </>
  );
}

function MediaView({ m, n, onStale }: { m: Media; n: number; onStale: () => void }) {
  // A signed view URL expires (viewUrlExpiresAt): a failed load after that reads the review again for fresh ones.
  const stale = () => {
    if (m.viewUrlExpiresAt && Date.parse(m.viewUrlExpiresAt) <= Date.now()) onStale();
  };
  // The media's alt text, as the platform will announce it; else what it is.
  const label = m.altText?.trim() || `${m.type === 'video' ? 'Video' : 'Image'} ${n}${m.filename ? `: ${m.filename}` : ''}`;
  if (m.type === 'video' || m.contentType.startsWith('video/')) {
    return <video class="rv-media-el" src={m.viewUrl} controls preload="metadata" playsInline aria-label={label} onError={stale} />;
  }
  return <img class="rv-media-el" src={m.viewUrl} alt={label} loading="lazy" onError={stale} />;
}

function ItemCard({ item, index, total, me, open, api, onEnded, onDecided, onStale }: {
  item: Item;
  index: number;
  total: number;
  me: string;
  open: boolean;
  api: PressroomClient;
  onEnded: (e: PressroomError) => void;
  onDecided: (itemId: string, r: DecisionResult) => void;
  onStale: () => void;
}) {
  const [activity, setActivity] = useState<Activity[] | null>(null);
  const [activityError, setActivityError] = useState<string | null>(null);
  const [text, setText] = useState('');
  const [busy, setBusy] = useState<null | 'approved' | 'changes_requested' | 'comment'>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [said, setSaid] = useState<string | null>(null);
  // The decision just made, for when the activity cannot be read again (the last decision ends the link).
  const [justDecided, setJustDecided] = useState<{ event: string; body: string | null; createdAt: string } | null>(null);
  const id = item.id;
  const commentId = `comment-${id}`;

  const loadActivity = async () => {
    try {
      const r = await unwrap(api.GET('/v1/review-link/items/{itemId}/activity', { params: { path: { itemId: id } } }));
      setActivity(r.data);
      setActivityError(null);
    } catch (e) {
      if (linkEnded(e)) onEnded(e);
      else setActivityError(describe(e));
    }
  };
  useEffect(() => {
    void loadActivity();
  }, [id]);

  const mine = (activity ?? []).filter((a) => a.kind === 'decision' && a.actor === `client:${me.toLowerCase()}`).at(-1) ?? justDecided;

  const decide = async (decision: 'approved' | 'changes_requested') => {
    const comment = text.trim();
    if (decision === 'changes_requested' && !comment) {
      setProblem('Say what should change: a comment is needed to request changes.');
      document.getElementById(commentId)?.focus();
      return;
    }
    setBusy(decision);
    setProblem(null);
    setSaid(null);
    try {
      const r = await unwrap(api.POST('/v1/review-link/items/{itemId}/decision', {
        params: { path: { itemId: id } },
        body: comment ? { decision, comment } : { decision },
      }));
      setText('');
      setJustDecided({ event: decision, body: comment || null, createdAt: new Date().toISOString() });
      setSaid(decision === 'approved' ? 'You approved this post.' : 'You requested changes to this post.');
      onDecided(id, r.data);
      if (r.data.reviewStatus === 'active') await loadActivity();
    } catch (e) {
      if (linkEnded(e)) onEnded(e);
      else setProblem(describe(e));
    } finally {
      setBusy(null);
    }
  };

  const postComment = async (ev: Event) => {
    ev.preventDefault();
    const body = text.trim();
    if (!body) {
      setProblem('Write a comment first.');
      return;
    }
    setBusy('comment');
    setProblem(null);
    setSaid(null);
    try {
      const r = await unwrap(api.POST('/v1/review-link/items/{itemId}/comments', { params: { path: { itemId: id } }, body: { body } }));
      setText('');
      setSaid('Your comment was added.');
      setActivity((a) => [...(a ?? []), r.data]);
    } catch (e) {
      if (linkEnded(e)) onEnded(e);
      else setProblem(describe(e));
    } finally {
      setBusy(null);
    }
  };

  const thread = item.thread ?? [];
  const channel = item.channelName || platformName(item.platform);
  const canDecide = open && item.awaitingYou && item.state === 'pending';
  const h = `item-${id}-h`;

  let state: { cls: string; text: string };
  if (item.state === 'approved') state = { cls: 'ok', text: 'Approved' };
  else if (item.state === 'changes_requested') state = { cls: 'bad', text: 'Changes requested' };
  else if (item.awaitingYou) state = { cls: 'warn', text: 'Waiting for your decision' };
  else if (mine) state = { cls: '', text: `In review${item.currentStageName ? `: with ${item.currentStageName}` : ''}` };
  else state = { cls: '', text: `Not your turn yet${item.currentStageName ? `: with ${item.currentStageName}` : ''}` };

  return (
    <article class="card rv-item" aria-labelledby={h} data-item={id}>
      <div class="rv-item-head">
        <h2 id={h}>
          <span class="sr-only">Post {index} of {total}: </span>
          {channel} <span class="rv-platform">on {platformName(item.platform)}</span>
        </h2>
        <span class={`badge ${state.cls} rv-state`} data-state={item.state}>{state.text}</span>
      </div>

      <div class="rv-post" aria-label={`The post as ${platformName(item.platform)} will show it`} role="group">
        <div class="rv-post-author">
          <span class="rv-avatar" aria-hidden="true">{channel.slice(0, 1).toUpperCase()}</span>
          <span>
            <strong>{channel}</strong>
            <span class="rv-when">{item.scheduledAt ? `Planned for ${when(item.scheduledAt)}` : 'No publication time yet'}</span>
          </span>
        </div>
        <p class="rv-caption">{item.caption || <em>(no text)</em>}</p>
        {item.media.length > 0 && (
          <div class={`rv-media rv-media-${Math.min(item.media.length, 4)}`}>
            {item.media.map((m, i) => <MediaView key={m.id} m={m} n={i + 1} onStale={onStale} />)}
          </div>
        )}
        {thread.length > 0 && (
          <ol class="rv-thread" aria-label="The rest of the thread">
            {thread.map((t, i) => (
              <li key={i}>
                <p class="rv-caption">{t.caption || <em>(no text)</em>}</p>
                {t.media.length > 0 && (
                  <div class={`rv-media rv-media-${Math.min(t.media.length, 4)}`}>
                    {t.media.map((m, j) => <MediaView key={m.id} m={m} n={j + 1} onStale={onStale} />)}
                  </div>
                )}
              </li>
            ))}
          </ol>
        )}
      </div>

      {mine && (
        <p class="rv-mine" data-mine={mine.event}>
          Your decision: <strong>{mine.event === 'approved' ? 'approved' : 'changes requested'}</strong> on {when(mine.createdAt)}
          {mine.body ? <>, with the comment “{mine.body}”</> : null}
        </p>
      )}

      {open && (
        <form class="rv-respond" onSubmit={postComment} aria-label={`Respond to post ${index}`}>
          <label for={commentId}>
            {canDecide ? 'Comment (needed to request changes)' : 'Comment'}
          </label>
          <textarea
            id={commentId}
            value={text}
            maxLength={5000}
            aria-describedby={problem ? `${commentId}-err` : undefined}
            aria-invalid={problem ? true : undefined}
            onInput={(e) => setText((e.currentTarget as HTMLTextAreaElement).value)}
          />
          {problem && <p id={`${commentId}-err`} class="field-error" role="alert">{problem}</p>}
          <div class="rv-actions">
            {canDecide && (
              <>
                <button type="button" class="primary rv-approve" disabled={busy !== null} onClick={() => decide('approved')}>
                  {busy === 'approved' ? 'Approving…' : 'Approve'}
                </button>
                <button type="button" class="danger rv-changes" disabled={busy !== null} onClick={() => decide('changes_requested')}>
                  {busy === 'changes_requested' ? 'Sending…' : 'Request changes'}
                </button>
              </>
            )}
            <button type="submit" class="rv-comment" disabled={busy !== null}>{busy === 'comment' ? 'Posting…' : 'Post comment'}</button>
          </div>
          {said && <p class="rv-said" role="status">{said}</p>}
        </form>
      )}

      <section class="rv-activity" aria-labelledby={`${h}-act`}>
        <h3 id={`${h}-act`}>Activity</h3>
        {activityError && <p class="field-error" role="alert">Could not load the activity: {activityError}</p>}
        {!activity && !activityError && <p class="hint" aria-busy="true">Loading…</p>}
        {activity && activity.length === 0 && <p class="hint">Nothing yet.</p>}
        {activity && activity.length > 0 && (
          <ol class="rv-feed">
            {activity.map((a) => (
              <li key={a.id} data-event={a.event}>
                <span class="rv-feed-line">
                  {a.kind === 'system' ? activityText(a) : <><strong>{a.actorName ?? 'Someone'}</strong> {activityText(a)}</>}
                </span>
                <time class="rv-when" dateTime={a.createdAt}>{when(a.createdAt)}</time>
                {a.body && <p class="rv-body">{a.body}</p>}
                {(a.attachments ?? []).map((f) => (
                  <p key={f.id} class="rv-attachment"><a href={f.viewUrl} target="_blank" rel="noopener noreferrer">{f.filename}</a></p>
                ))}
              </li>
            ))}
          </ol>
        )}
      </section>
    </article>
  );
}

render(<ReviewPage />, document.getElementById('root')!);
