// Settings, webhooks tab: the lifecycle webhook subscriptions of docs/webhooks.md
// ({ws}/webhooks and its rotate-secret, test, deliveries, redeliver and log
// routes; manager role). The signing secret of a create or rotate answer lives
// in this component's state only.
import { useEffect, useState } from 'preact/hooks';
import { can, client, type Schema, unwrap, workspace, wsId } from '../lib/api.ts';
import { FieldError, formatInZone, say, sayError, useList } from '../lib/ui.tsx';
import { ConfirmDialog, described, Field, problemsFor, type Problems, ShownOnce, TableBox } from './settings-shared.tsx';

type Sub = Schema<'WebhookSubscription'>;
type EventType = Schema<'WebhookEventType'>;
type Delivery = Schema<'WebhookDelivery'>;
type LogEntry = Schema<'WebhookLogEntry'>;

/** The contract's WebhookEventType enum; the check below fails `tsc` when the contract adds one. */
const EVENTS = [
  'content.created', 'content.scheduled', 'content.published', 'content.failed', 'content.awaiting_confirmation', 'content.deleted',
  'review.sent', 'review.decided', 'review.completed',
  'inbox.message.received',
  'integration.reconnect_required', 'integration.reconnected',
] as const satisfies readonly EventType[];
export const EVENTS_COMPLETE: [Exclude<EventType, (typeof EVENTS)[number]>] extends [never] ? true : never = true;

const FIELDS = ['url', 'events', 'description', 'active'] as const;
const PAUSED: Record<NonNullable<Sub['pausedReason']>, string> = {
  manual: 'paused by a manager',
  failures: 'paused after failed attempts in a row',
  gone: 'paused: the receiver answered 410 Gone',
};

interface Secret { subId: string; value: string; label: string }

export function WebhooksTab() {
  const manager = can('manager');
  const [secret, setSecret] = useState<Secret | null>(null);
  const [openId, setOpenId] = useState<string | null>(null);

  const { items: subs, error: loadError, load } = useList<Sub>(
    async () => (await unwrap(client.value.GET('/v1/workspaces/{workspaceId}/webhooks', { params: { path: { workspaceId: wsId() } } }))).data,
    'webhooks', manager,
  );

  if (!manager) {
    return (
      <>
        <h2 id="webhooks-h">Webhooks</h2>
        <p class="hint">Lifecycle webhooks need the manager role in this workspace; yours is {workspace.value!.role}.</p>
      </>
    );
  }

  const open = subs?.find((s) => s.id === openId) ?? null;
  return (
    <>
      <h2 id="webhooks-h">Webhooks</h2>
      <p class="hint">Pressroom POSTs each chosen event to the URL, signed the Standard Webhooks way with the subscription's secret.</p>
      {secret && (
        <ShownOnce id="new-secret" label={secret.label} value={secret.value} onDone={() => setSecret(null)}>
          Receivers verify the <code>webhook-signature</code> header with it.
        </ShownOnce>
      )}
      <CreateWebhook
        onCreated={(s) => {
          setSecret({ subId: s.id, value: s.secret, label: `Signing secret of ${s.url}` });
          setOpenId(s.id);
          void load();
        }}
      />
      <h3>Subscriptions</h3>
      {subs === null ? (
        loadError ? <p class="error">{loadError}</p> : <p aria-busy="true">Loading webhooks…</p>
      ) : subs.length === 0 ? (
        <p class="hint">No webhooks yet.</p>
      ) : (
        <TableBox label="Webhook subscriptions">
          <table class="list" id="webhooks-list">
            <thead>
              <tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Description</th><th scope="col">State</th><th scope="col">Pending</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
            </thead>
            <tbody>
              {subs.map((s) => (
                <tr key={s.id} data-webhook-id={s.id}>
                  <td class="st-url">{s.url}</td>
                  <td>{s.events.join(', ')}</td>
                  <td>{s.description ?? ''}</td>
                  <td><StateBadge sub={s} /></td>
                  <td>{s.pendingDeliveries}</td>
                  <td>
                    <button type="button" aria-expanded={openId === s.id} aria-controls={openId === s.id ? 'webhook-detail' : undefined} aria-label={`${openId === s.id ? 'Close' : 'Manage'} ${s.url}`} onClick={() => setOpenId(openId === s.id ? null : s.id)}>
                      {openId === s.id ? 'Close' : 'Manage'}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableBox>
      )}
      {open && (
        <Detail
          key={open.id}
          sub={open}
          onChanged={() => void load()}
          onSecret={(value) => setSecret({ subId: open.id, value, label: `New signing secret of ${open.url}` })}
          onDeleted={() => {
            if (secret?.subId === open.id) setSecret(null);
            setOpenId(null);
            void load();
          }}
        />
      )}
    </>
  );
}

function StateBadge({ sub }: { sub: Sub }) {
  if (sub.active) {
    return sub.consecutiveFailures > 0
      ? <span class="badge warn">active, {sub.consecutiveFailures} failed in a row</span>
      : <span class="badge ok">active</span>;
  }
  return <span class="badge bad">{sub.pausedReason ? PAUSED[sub.pausedReason] : 'paused'}</span>;
}

function EventChecks({ idPrefix, chosen, onChange, error }: { idPrefix: string; chosen: Set<EventType>; onChange: (s: Set<EventType>) => void; error?: string }) {
  return (
    <fieldset class="st-checks st-events" aria-describedby={error ? `${idPrefix}-err` : undefined}>
      <legend>Events</legend>
      {EVENTS.map((ev) => (
        <label key={ev}>
          <input
            type="checkbox"
            name="events"
            value={ev}
            checked={chosen.has(ev)}
            onChange={(e) => {
              const next = new Set(chosen);
              if (e.currentTarget.checked) next.add(ev);
              else next.delete(ev);
              onChange(next);
            }}
          />
          <code>{ev}</code>
        </label>
      ))}
      <FieldError id={`${idPrefix}-err`} text={error} />
    </fieldset>
  );
}

function CreateWebhook({ onCreated }: { onCreated: (s: Schema<'WebhookSubscriptionWithSecret'>) => void }) {
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<Set<EventType>>(new Set(['content.published', 'content.failed']));
  const [description, setDescription] = useState('');
  const [busy, setBusy] = useState(false);
  const [problems, setProblems] = useState<Problems>({});
  const submit = async (ev: Event) => {
    ev.preventDefault();
    setBusy(true);
    setProblems({});
    try {
      const body = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/webhooks', {
        params: { path: { workspaceId: wsId() } },
        body: { url: url.trim(), events: [...events], description: description.trim() || null, active: true },
      }));
      setUrl('');
      setDescription('');
      onCreated(body.data);
    } catch (e) {
      setProblems(problemsFor('Could not create the webhook', e, FIELDS));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form id="webhook-form" class="form-grid st-form" onSubmit={submit} noValidate aria-labelledby="webhook-form-h">
      <h3 id="webhook-form-h">Add a webhook</h3>
      <Field id="wh-url" label="URL" error={problems.url} hint="An http(s) address whose host resolves to public addresses.">
        <input type="url" name="url" inputMode="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} {...described('wh-url', problems.url, true)} />
      </Field>
      <EventChecks idPrefix="wh-events" chosen={events} onChange={setEvents} error={problems.events} />
      <Field id="wh-description" label="Description (optional)" error={problems.description}>
        <input name="description" maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} {...described('wh-description', problems.description)} />
      </Field>
      <div class="row">
        <button type="submit" disabled={busy}>{busy ? 'Adding…' : 'Add webhook'}</button>
      </div>
    </form>
  );
}

/** One subscription: edit, test, rotate, delete, its deliveries and log. */
function Detail({ sub, onChanged, onSecret, onDeleted }: { sub: Sub; onChanged: () => void; onSecret: (s: string) => void; onDeleted: () => void }) {
  const tz = workspace.value!.timezone;
  const path = { workspaceId: wsId(), webhookId: sub.id };
  const [url, setUrl] = useState(sub.url);
  const [active, setActive] = useState(sub.active);
  const [events, setEvents] = useState<Set<EventType>>(new Set(sub.events));
  const [description, setDescription] = useState(sub.description ?? '');
  const [problems, setProblems] = useState<Problems>({});
  const [busy, setBusy] = useState<string | null>(null);
  const [confirm, setConfirm] = useState<'rotate' | 'delete' | null>(null);
  const [deliveries, setDeliveries] = useState<Delivery[] | null>(null);
  const [deliveryTotal, setDeliveryTotal] = useState(0);
  const [log, setLog] = useState<LogEntry[] | null>(null);
  const [logTotal, setLogTotal] = useState(0);
  const [limit, setLimit] = useState(20);
  const [tick, setTick] = useState(0);

  const loadActivity = async () => {
    try {
      const [d, l] = await Promise.all([
        unwrap(client.value.GET('/v1/workspaces/{workspaceId}/webhooks/{webhookId}/deliveries', { params: { path, query: { limit } } })),
        unwrap(client.value.GET('/v1/workspaces/{workspaceId}/webhooks/{webhookId}/log', { params: { path, query: { limit } } })),
      ]);
      setDeliveries(d.data);
      setDeliveryTotal(d.meta.total);
      setLog(l.data);
      setLogTotal(l.meta.total);
    } catch (e) {
      sayError('Could not load the deliveries', e);
    }
  };
  useEffect(() => void loadActivity(), [limit, tick]);
  // While something is on its way (and the subscription is not paused), look again shortly,
  // so an outcome shows without a reload.
  const waiting = sub.active && (deliveries ?? []).some((d) => d.state === 'pending');
  useEffect(() => {
    if (!waiting) return;
    const t = setTimeout(() => { setTick((n) => n + 1); onChanged(); }, 1500);
    return () => clearTimeout(t);
  }, [waiting, deliveries]);

  const run = async (what: string, label: string, fn: () => Promise<void>) => {
    setBusy(what);
    try {
      await fn();
    } catch (e) {
      sayError(label, e);
    } finally {
      setBusy(null);
    }
  };

  const save = async (ev: Event) => {
    ev.preventDefault();
    setBusy('save');
    setProblems({});
    try {
      await unwrap(client.value.PATCH('/v1/workspaces/{workspaceId}/webhooks/{webhookId}', {
        params: { path },
        body: { url: url.trim(), active, events: [...events], description: description.trim() || null },
      }));
      say('ok', `Saved the webhook ${url.trim()}.`);
      onChanged();
      setTick((n) => n + 1);
    } catch (e) {
      setProblems(problemsFor('Could not save the webhook', e, FIELDS));
    } finally {
      setBusy(null);
    }
  };

  return (
    <section id="webhook-detail" class="st-detail" aria-labelledby="webhook-detail-h">
      <h3 id="webhook-detail-h">Webhook <span class="st-url">{sub.url}</span></h3>
      <form id="webhook-edit" class="form-grid st-form" onSubmit={save} noValidate aria-label="Edit the webhook">
        <div class="st-field">
          <label class="st-check">
            <input type="checkbox" name="active" checked={active} onChange={(e) => setActive(e.currentTarget.checked)} />
            Enabled (unticked pauses it: events keep queuing and go out in order when it is enabled again)
          </label>
        </div>
        <Field id="wh-edit-url" label="URL" error={problems.url}>
          <input type="url" name="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} {...described('wh-edit-url', problems.url)} />
        </Field>
        <EventChecks idPrefix="wh-edit-events" chosen={events} onChange={setEvents} error={problems.events} />
        <Field id="wh-edit-description" label="Description (optional)" error={problems.description}>
          <input name="description" maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} {...described('wh-edit-description', problems.description)} />
        </Field>
        <div class="row">
          <button type="submit" disabled={busy !== null}>{busy === 'save' ? 'Saving…' : 'Save changes'}</button>
          <button
            type="button"
            disabled={busy !== null}
            onClick={() => void run('test', 'Could not send a test', async () => {
              const r = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/webhooks/{webhookId}/test', { params: { path } }));
              say('ok', r.data.queued ? 'A webhook.test event is on its way; its delivery shows below.' : 'The test is queued; it goes out when the webhook is enabled again.');
              onChanged();
              setTick((n) => n + 1);
            })}
          >
            {busy === 'test' ? 'Sending…' : 'Send test'}
          </button>
          <button type="button" disabled={busy !== null} onClick={() => setConfirm('rotate')}>Rotate secret</button>
          <button type="button" class="danger" disabled={busy !== null} onClick={() => setConfirm('delete')}>Delete webhook</button>
        </div>
      </form>

      <h4>Deliveries {deliveries && <span class="hint">({deliveries.length} of {deliveryTotal}, newest first)</span>}</h4>
      <div class="row">
        <button type="button" onClick={() => setTick((n) => n + 1)}>Refresh</button>
        {waiting && <span class="hint" role="status">Waiting for pending deliveries…</span>}
      </div>
      {deliveries === null ? (
        <p aria-busy="true">Loading deliveries…</p>
      ) : deliveries.length === 0 ? (
        <p class="hint">No deliveries yet. Send a test to try the receiver.</p>
      ) : (
        <TableBox label="Deliveries">
          <table class="list" id="deliveries-list">
            <thead>
              <tr><th scope="col">Event</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Created</th><th scope="col">Delivered</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
            </thead>
            <tbody>
              {deliveries.map((d) => (
                <tr key={d.id} data-delivery-id={d.id}>
                  <td><code>{d.eventType}</code>{d.redeliveryOf && <span class="hint st-block">redelivery</span>}</td>
                  <td><span class={`badge ${d.state === 'delivered' ? 'ok' : 'warn'}`}>{d.state}</span></td>
                  <td>{d.attempts}</td>
                  <td>
                    {d.lastStatus !== null ? `HTTP ${d.lastStatus}` : d.attempts > 0 ? 'no answer' : '—'}
                    {d.lastError && <span class="error st-block">{d.lastError}</span>}
                    {d.state === 'pending' && d.nextAttemptAt && <span class="hint st-block">next try {formatInZone(d.nextAttemptAt, tz)}</span>}
                  </td>
                  <td>{formatInZone(d.createdAt, tz)}</td>
                  <td>{d.deliveredAt ? formatInZone(d.deliveredAt, tz) : ''}</td>
                  <td>
                    <button
                      type="button"
                      aria-label={`Redeliver the ${d.eventType} event of ${formatInZone(d.createdAt, tz)}`}
                      disabled={busy !== null}
                      onClick={() => void run(`redeliver:${d.id}`, 'Could not redeliver', async () => {
                        await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver', { params: { path: { ...path, deliveryId: d.id } } }));
                        say('ok', `The ${d.eventType} event is queued again (same webhook-id).`);
                        onChanged();
                        setTick((n) => n + 1);
                      })}
                    >
                      Redeliver
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableBox>
      )}

      <h4>Log {log && <span class="hint">({log.length} of {logTotal}, newest first)</span>}</h4>
      {log === null ? (
        <p aria-busy="true">Loading the log…</p>
      ) : log.length === 0 ? (
        <p class="hint">Nothing logged yet.</p>
      ) : (
        <TableBox label="Delivery log">
          <table class="list" id="log-list">
            <thead>
              <tr><th scope="col">When</th><th scope="col">What</th><th scope="col">Answer</th><th scope="col">Duration</th><th scope="col">Details</th></tr>
            </thead>
            <tbody>
              {log.map((l) => (
                <tr key={l.id}>
                  <td>{formatInZone(l.createdAt, tz)}</td>
                  <td>{l.kind === 'attempt' ? <>attempt {l.attempt} of <code>{l.eventType}</code></> : <code>{l.kind}</code>}</td>
                  <td>{l.responseStatus !== null ? `HTTP ${l.responseStatus}` : ''}{l.error && <span class="error st-block">{l.error}</span>}</td>
                  <td>{l.durationMs !== null ? `${l.durationMs} ms` : ''}</td>
                  <td>
                    {(l.request || l.responseExcerpt) && (
                      <details>
                        <summary>Request and answer</summary>
                        {l.request && <pre class="st-pre">{JSON.stringify(l.request, null, 2)}</pre>}
                        {l.responseExcerpt && <pre class="st-pre">{l.responseExcerpt}</pre>}
                      </details>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableBox>
      )}
      {(deliveryTotal > limit || logTotal > limit) && limit < 100 && (
        <button type="button" onClick={() => setLimit(Math.min(100, limit + 20))}>Show more</button>
      )}

      {confirm === 'rotate' && (
        <ConfirmDialog
          title="Rotate the signing secret?"
          confirmLabel="Rotate secret"
          onClose={() => setConfirm(null)}
          onConfirm={async () => {
            const r = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/webhooks/{webhookId}/rotate-secret', { params: { path } }));
            onSecret(r.data.secret);
            onChanged();
          }}
        >
          <p>Attempts from now on are signed with a new secret only; the receiver must be given it. The new secret is shown once.</p>
        </ConfirmDialog>
      )}
      {confirm === 'delete' && (
        <ConfirmDialog
          title="Delete this webhook?"
          confirmLabel="Delete webhook"
          danger
          onClose={() => setConfirm(null)}
          onConfirm={async () => {
            await unwrap(client.value.DELETE('/v1/workspaces/{workspaceId}/webhooks/{webhookId}', { params: { path } }));
            say('ok', `The webhook ${sub.url} is deleted, with its deliveries and log.`);
            onDeleted();
          }}
        >
          <p>{sub.url} gets no more events; its pending deliveries and its log are deleted with it.</p>
        </ConfirmDialog>
      )}
    </section>
  );
}
