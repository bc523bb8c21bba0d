// The channels page (/app/channels): the workspace's connected accounts with
// their connection state, and the ways to connect more, all through the public
// routes of docs/connectors.md: GET {ws}/platforms says what this server can
// connect (and what an operator must configure), POST {ws}/integrations/connect
// and .../reconnect start the OAuth flow whose callback comes back here with
// integration=, connection= (the account choice) or error=, connect-password
// takes Bluesky app passwords, and POST {ws}/integrations makes sandbox and
// webhook channels. Managers connect and disconnect; everyone else reads.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { can, client, fieldProblems, PressroomError, type Schema, unwrap, workspace, wsId } from '../lib/api.ts';
import { route, setQuery } from '../lib/router.ts';
import { CopyButton, FieldError, formatInZone, say, sayError, Section } from '../lib/ui.tsx';
import './channels.css';

type Integration = Schema<'Integration'>;
type Option = Schema<'PlatformConnectionOption'>;
type Pending = Schema<'PendingConnection'>;
type Platform = Schema<'IntegrationPlatform'>;
type Connector = Schema<'ConnectorName'>;
type Behavior = NonNullable<Schema<'IntegrationSettings'>['behavior']>;

/** What the page started before sending the browser to a platform, read back when it returns (no secret in it). */
const FLOW_KEY = 'pressroom.channels.flow';
interface Flow { kind: 'connect' | 'reconnect'; platform: string }

/** The callback's error codes (server/routes/connections.ts, docs/connectors.md) as sentences. */
const CALLBACK_ERRORS: Record<string, string> = {
  access_denied: 'The permission request was declined on the platform, so nothing was connected.',
  state_unknown: 'This sign-in was not started here (or its link was altered); start again from this page.',
  state_expired: 'The sign-in took longer than 10 minutes and expired; start again.',
  state_used: 'This sign-in was already completed once; start again if the channel is not listed.',
  missing_scope: 'Not every permission Pressroom needs was granted; start again and allow all of them.',
  exchange_failed: 'The platform did not complete the sign-in; try again.',
  account_lookup_failed: 'The platform did not say which account signed in; try again.',
  reconnect_account_mismatch: 'You signed in as another account than the channel\'s own; sign in as that account to reconnect it.',
  account_already_connected: 'This account is already connected in this workspace; reconnect that channel instead.',
  not_a_manager: 'Only a manager of the workspace can connect accounts, and your role no longer allows it.',
  platform_app_not_configured: 'This platform\'s app is no longer configured on the server; ask the operator.',
  server_error: 'Something went wrong on the server; try again, or tell the operator if it keeps happening.',
};

const returnTo = () => `${location.origin}/app/channels`;

/** What a field whose value fails the contract's pattern must look like. */
const PATTERN_TEXT: Record<string, string> = {
  url: 'must be an http:// or https:// address',
  secret: 'must be whsec_ followed by base64',
  instanceUrl: 'must be an http:// or https:// address',
  serviceUrl: 'must be an http:// or https:// address',
};

/** The API's field problems of a refusal, by field name (details.fields, `body.` stripped, and details.field). */
function problemsByField(e: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!(e instanceof PressroomError)) return out;
  for (const f of fieldProblems(e)) {
    const k = (f.field ?? f.path ?? '').replace(/^body\./, '').replace(/^settings\./, '');
    let text = f.message ?? f.reason ?? f.code ?? 'is not valid';
    // The contract's regular expressions say nothing to a person: say what the field wants instead.
    if (/^must match pattern/.test(text)) text = PATTERN_TEXT[k] ?? 'is not in the expected form';
    if (k && !out[k]) out[k] = `${text} (${e.code})`;
  }
  const d = e.details as { field?: unknown } | null;
  if (d && typeof d.field === 'string' && !out[d.field]) out[d.field] = `${e.message} (${e.code})`;
  return out;
}

/** One form's errors: the API's problems beside the fields the form has, the rest in the form's own alert line. */
function useFormErrors(fields: readonly string[]) {
  const [errs, setErrs] = useState<Record<string, string>>({});
  const [general, setGeneral] = useState<string | null>(null);
  return {
    of: (f: string) => errs[f] ?? null,
    general,
    clear: () => { setErrs({}); setGeneral(null); },
    show: (e: unknown) => {
      const all = problemsByField(e);
      const mine = Object.fromEntries(Object.entries(all).filter(([k]) => fields.includes(k)));
      setErrs(mine);
      if (Object.keys(mine).length === 0) {
        const p = e instanceof PressroomError ? e : null;
        setGeneral(p ? `${p.message} (${p.code}${p.requestId ? `; request ${p.requestId}` : ''})` : e instanceof Error ? e.message : String(e));
      } else setGeneral(null);
    },
  };
}
type FormErrors = ReturnType<typeof useFormErrors>;

/** A labelled input with its API problem under it (aria-describedby, aria-invalid). */
function Field(props: { id: string; label: string; field: string; errors: FormErrors; hint?: string; children: (a: { id: string; 'aria-invalid': boolean; 'aria-describedby'?: string }) => ComponentChildren }) {
  const err = props.errors.of(props.field);
  const described = [props.hint ? `${props.id}-hint` : null, err ? `${props.id}-err` : null].filter(Boolean).join(' ') || undefined;
  return (
    <div class="ch-field">
      <label for={props.id}>{props.label}</label>
      {props.children({ id: props.id, 'aria-invalid': !!err, 'aria-describedby': described })}
      {props.hint && <p id={`${props.id}-hint`} class="hint">{props.hint}</p>}
      <FieldError id={`${props.id}-err`} text={err} />
    </div>
  );
}

function FormError({ errors }: { errors: FormErrors }) {
  return errors.general ? <p class="field-error ch-form-error" role="alert">{errors.general}</p> : null;
}

/** Sends the browser to the platform's consent page; it comes back to this page (see the mount effect). */
function goToPlatform(started: Schema<'ConnectStarted'>, kind: Flow['kind']) {
  sessionStorage.setItem(FLOW_KEY, JSON.stringify({ kind, platform: started.platform } satisfies Flow));
  location.assign(started.authorizeUrl);
}

async function startConnect(body: Schema<'ConnectIntegrationDto'>) {
  const r = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/integrations/connect', {
    params: { path: { workspaceId: wsId() } },
    body: { ...body, returnTo: returnTo() },
  }));
  goToPlatform(r.data, 'connect');
}

async function startReconnect(id: string) {
  const r = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/integrations/{id}/reconnect', {
    params: { path: { workspaceId: wsId(), id } },
    body: { returnTo: returnTo() },
  }));
  goToPlatform(r.data, 'reconnect');
}

const STATE_TEXT: Record<Integration['connectionState'], { text: string; cls: string }> = {
  ok: { text: 'Connected', cls: 'ok' },
  expiring: { text: 'Expiring', cls: 'warn' },
  refresh_failing: { text: 'Refresh failing', cls: 'warn' },
  reconnect_required: { text: 'Reconnect required', cls: 'bad' },
};

function StateCell({ i, tz }: { i: Integration; tz: string }) {
  const s = STATE_TEXT[i.connectionState];
  return (
    <div class="ch-state">
      <span class={`badge ${s.cls}`}>{s.text}</span>
      {i.connectionState === 'expiring' && i.credentialsExpireAt && (
        <p class="hint">Ends {formatInZone(i.credentialsExpireAt, tz)}; reconnect before then.</p>
      )}
      {i.connectionState === 'refresh_failing' && <p class="hint">Retried automatically; the account stays connected.{i.connectionReason ? ` Last error: ${i.connectionReason}` : ''}</p>}
      {i.connectionState === 'reconnect_required' && <p class="ch-reason">{i.connectionReason ?? 'The platform refused the grant.'} Editions due on it fail until it is reconnected.</p>}
    </div>
  );
}

const NO_SIGN_IN: readonly string[] = ['sandbox', 'webhook'];

export function ChannelsPage() {
  const tz = workspace.value?.timezone ?? 'UTC';
  const manager = can('manager');
  const [channels, setChannels] = useState<Integration[] | null>(null);
  const [options, setOptions] = useState<Option[] | null>(null);
  const [panel, setPanel] = useState<{ key: string; reconnect?: Integration } | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [removing, setRemoving] = useState<Integration | null>(null);
  const [pending, setPending] = useState<Pending | null>(null);
  const [issuedSecret, setIssuedSecret] = useState<{ name: string; secret: string } | null>(null);

  const load = async (): Promise<Integration[]> => {
    try {
      const r = await unwrap(client.value.GET('/v1/workspaces/{workspaceId}/integrations', { params: { path: { workspaceId: wsId() } } }));
      setChannels(r.data);
      return r.data;
    } catch (e) {
      setChannels((c) => c ?? []);
      sayError('Could not load the channels', e);
      return [];
    }
  };

  useEffect(() => {
    // Back from a platform's consent page (the OAuth callback's redirect): say how it went, then clean the address.
    const q = route.value.searchParams;
    const integration = q.get('integration');
    const connection = q.get('connection');
    const error = q.get('error');
    const description = q.get('error_description');
    let flow: Flow | null = null;
    if (integration || connection || error) {
      try {
        flow = JSON.parse(sessionStorage.getItem(FLOW_KEY) ?? 'null') as Flow | null;
      } catch {
        flow = null;
      }
      sessionStorage.removeItem(FLOW_KEY);
      setQuery({ integration: null, connection: null, error: null, error_description: null });
      if (error) {
        const what = flow?.kind === 'reconnect' ? 'reconnect the account' : 'connect the account';
        say('error', `Could not ${what}: ${CALLBACK_ERRORS[error] ?? 'the platform sign-in failed.'} (${error}${description ? `: ${description}` : ''})`);
      }
    }
    void load().then((list) => {
      if (!integration) return;
      const name = list.find((i) => i.id === integration)?.name ?? 'the account';
      say('ok', `${flow?.kind === 'reconnect' ? 'Reconnected' : 'Connected'} ${name}.`);
    });
    unwrap(client.value.GET('/v1/workspaces/{workspaceId}/platforms', { params: { path: { workspaceId: wsId() } } }))
      .then((r) => setOptions(r.data), (e) => { setOptions([]); sayError('Could not load what can be connected', e); });
    if (connection) {
      unwrap(client.value.GET('/v1/workspaces/{workspaceId}/pending-connections/{id}', { params: { path: { workspaceId: wsId(), id: connection } } }))
        .then((r) => setPending(r.data), (e) => sayError('Could not show the accounts to choose from', e));
    }
  }, []);

  const platformName = (p: string) => options?.find((o) => o.platform === p && !NO_SIGN_IN.includes(o.connector))?.platformName
    ?? options?.find((o) => o.platform === p)?.platformName ?? p;

  const reconnect = async (i: Integration) => {
    if (i.connector === 'bluesky') {
      // Bluesky: the app-password form (or its own sign-in) for this account.
      setPanel({ key: 'bluesky:bluesky', reconnect: i });
      return;
    }
    setBusy(`reconnect:${i.id}`);
    try {
      await startReconnect(i.id);
      // the browser is leaving for the platform: stay busy
    } catch (e) {
      sayError(`Could not reconnect ${i.name}`, e);
      setBusy(null);
    }
  };

  const connected = (names: string[]) => {
    setPanel(null);
    say('ok', `Connected ${names.join(', ')}.`);
    void load();
  };

  return (
    <section id="channels-page" aria-labelledby="channels-h">
      <h1 id="channels-h">Channels</h1>
      <Section title="Connected channels" id="channel-list">
        {channels === null ? (
          <p aria-busy="true">Loading channels…</p>
        ) : channels.length === 0 ? (
          <p id="no-channels">No channels yet.{manager ? ' Connect one below: a sandbox channel needs no account.' : ''}</p>
        ) : (
          <div class="ch-table-wrap">
            <table class="list ch-table" id="channels">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Platform</th>
                  <th scope="col">Account</th>
                  <th scope="col">State</th>
                  <th scope="col">Created</th>
                  {manager && <th scope="col"><span class="sr-only">Actions</span></th>}
                </tr>
              </thead>
              <tbody>
                {channels.map((i) => (
                  <tr key={i.id} data-id={i.id} class="ch-row">
                    <td data-label="Name"><strong>{i.name}</strong></td>
                    <td data-label="Platform">{platformName(i.platform)}{NO_SIGN_IN.includes(i.connector) && <span class="hint ch-connector"> ({i.connector})</span>}</td>
                    <td data-label="Account" class="ch-account">
                      {i.username ? `@${i.username.replace(/^@/, '')}` : i.accountId ?? '—'}
                      {i.instanceUrl && <span class="hint"> on {new URL(i.instanceUrl).host}</span>}
                    </td>
                    <td data-label="State"><StateCell i={i} tz={tz} /></td>
                    <td data-label="Created">{new Intl.DateTimeFormat('en-GB', { timeZone: tz, day: 'numeric', month: 'short', year: 'numeric' }).format(new Date(i.createdAt))}</td>
                    {manager && (
                      <td data-label="Actions" class="ch-actions">
                        {!NO_SIGN_IN.includes(i.connector) && (
                          <button type="button" class={i.connectionState === 'ok' ? '' : 'primary'} disabled={busy !== null} aria-label={`Reconnect ${i.name}`} onClick={() => void reconnect(i)}>
                            {busy === `reconnect:${i.id}` ? 'Reconnecting…' : 'Reconnect'}
                          </button>
                        )}
                        <button type="button" class="danger" disabled={busy !== null} aria-label={`Disconnect ${i.name}`} onClick={() => setRemoving(i)}>Disconnect</button>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {!manager && <p class="hint" id="viewer-hint">Only a manager of the workspace can connect, reconnect or disconnect channels.</p>}
      </Section>

      {issuedSecret && (
        <section class="card section ch-secret" aria-labelledby="secret-h" id="webhook-secret">
          <h2 id="secret-h">Signing secret of {issuedSecret.name}</h2>
          <p>Store it in your receiver now: it is shown this once and cannot be read again.</p>
          <div class="row">
            <code class="secret" id="webhook-secret-value">{issuedSecret.secret}</code>
            <CopyButton text={issuedSecret.secret} />
            <button type="button" onClick={() => setIssuedSecret(null)}>Done</button>
          </div>
        </section>
      )}

      {manager && (
        <Section title="Connect a channel" id="connect">
          {options === null ? (
            <p aria-busy="true">Loading what can be connected…</p>
          ) : (
            <ConnectOptions options={options} busy={busy} setBusy={setBusy} open={(key) => setPanel({ key })} current={panel?.key ?? null} />
          )}
          {panel && options && (
            <ConnectPanel
              key={`${panel.key}:${panel.reconnect?.id ?? ''}`}
              panelKey={panel.key}
              reconnect={panel.reconnect}
              options={options}
              busy={busy}
              setBusy={setBusy}
              onClose={() => setPanel(null)}
              onConnected={connected}
              onSecret={(name, secret) => setIssuedSecret({ name, secret })}
            />
          )}
        </Section>
      )}

      {removing && (
        <DisconnectDialog
          integration={removing}
          onClose={() => setRemoving(null)}
          onDone={(name) => {
            setRemoving(null);
            say('ok', `Disconnected ${name}.`);
            void load();
          }}
        />
      )}
      {pending && (
        <ChooseDialog
          pending={pending}
          platformName={platformName(pending.platform)}
          onClose={() => setPending(null)}
          onDone={(made) => {
            setPending(null);
            connected(made.map((m) => m.name));
          }}
        />
      )}
    </section>
  );
}

/** One button per platform that signs in (disabled with the operator's hint when it cannot), one per connector without sign-in. */
function ConnectOptions(props: { options: Option[]; busy: string | null; setBusy: (b: string | null) => void; open: (key: string) => void; current: string | null }) {
  const signIn = props.options.filter((o) => !NO_SIGN_IN.includes(o.connector));
  const noSignIn = [...new Set(props.options.filter((o) => NO_SIGN_IN.includes(o.connector)).map((o) => o.connector))];
  const click = async (o: Option) => {
    const key = `${o.connector}:${o.platform}`;
    if (o.connect === 'oauth' && !o.needsInstanceUrl) {
      // Nothing to ask first (X, LinkedIn): straight to the platform's consent page.
      props.setBusy(`connect:${key}`);
      try {
        await startConnect({ platform: o.platform, connector: o.connector });
      } catch (e) {
        sayError(`Could not start connecting ${o.platformName}`, e);
        props.setBusy(null);
      }
      return;
    }
    props.open(key);
  };
  return (
    <>
      <p class="hint">Connecting an account sends you to the platform to allow Pressroom to post, then back here.</p>
      <ul class="ch-options" aria-label="Platforms">
        {signIn.map((o) => {
          const key = `${o.connector}:${o.platform}`;
          return (
            <li key={key} class={`ch-option${o.connectable ? '' : ' off'}`}>
              <button type="button" id={`connect-${o.platform}`} class={props.current === key ? 'primary' : ''} disabled={!o.connectable || props.busy !== null} aria-describedby={o.connectable ? undefined : `why-${o.platform}`} onClick={() => void click(o)}>
                {props.busy === `connect:${key}` ? `Opening ${o.platformName}…` : `Connect ${o.platformName}`}
              </button>
              {!o.connectable && (
                <div id={`why-${o.platform}`} class="ch-why">
                  <p class="hint">{o.reason?.message ?? 'Not available on this server.'}</p>
                  {o.configure && (
                    <p class="hint">
                      The operator sets {o.configure.env.map((v, n) => <span key={v}>{n > 0 ? ' and ' : ''}<code>{v}</code></span>)}, or runs <code>{o.configure.command}</code>.
                    </p>
                  )}
                </div>
              )}
            </li>
          );
        })}
        {noSignIn.map((c) => (
          <li key={c} class="ch-option">
            <button type="button" id={`add-${c}`} class={props.current === `${c}:` ? 'primary' : ''} disabled={props.busy !== null} onClick={() => props.open(`${c}:`)}>
              {c === 'sandbox' ? 'Add a sandbox channel' : 'Add a webhook channel'}
            </button>
            <p class="hint">{c === 'sandbox' ? 'A simulated platform: try scheduling without an account.' : 'Each post is sent as a signed POST to your URL.'}</p>
          </li>
        ))}
      </ul>
    </>
  );
}

interface PanelProps {
  panelKey: string;
  reconnect?: Integration;
  options: Option[];
  busy: string | null;
  setBusy: (b: string | null) => void;
  onClose: () => void;
  onConnected: (names: string[]) => void;
  onSecret: (name: string, secret: string) => void;
}

/** The form a connection needs before it starts: an instance, a Bluesky handle or app password, a channel's name. */
function ConnectPanel(props: PanelProps) {
  const [connector, platform] = props.panelKey.split(':') as [Connector, string];
  const option = props.options.find((o) => o.connector === connector && (platform ? o.platform === platform : true));
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    // Focus moves to the form that opened (its first field).
    ref.current?.querySelector<HTMLElement>('input, select')?.focus();
  }, []);
  if (!option) return null;
  const title = NO_SIGN_IN.includes(connector)
    ? (connector === 'sandbox' ? 'Add a sandbox channel' : 'Add a webhook channel')
    : props.reconnect ? `Reconnect ${props.reconnect.name}` : `Connect ${option.platformName}`;
  return (
    <div class="ch-panel" id="connect-panel" ref={ref} role="group" aria-labelledby="connect-panel-h">
      <div class="ch-panel-head">
        <h3 id="connect-panel-h">{title}</h3>
        <button type="button" class="link" onClick={props.onClose}>Cancel</button>
      </div>
      {option.connect === 'oauth' && option.needsInstanceUrl && <InstanceForm {...props} option={option} />}
      {option.connect === 'password' && <BlueskyForms {...props} option={option} />}
      {option.connect === 'none' && <ChannelForm {...props} connector={connector} choices={props.options.filter((o) => o.connector === connector)} />}
    </div>
  );
}

function InstanceForm(props: PanelProps & { option: Option }) {
  const errors = useFormErrors(['instanceUrl', 'returnTo']);
  const key = `connect:${props.option.connector}:${props.option.platform}`;
  const submit = async (ev: Event) => {
    ev.preventDefault();
    const url = String(new FormData(ev.currentTarget as HTMLFormElement).get('instanceUrl') ?? '').trim();
    props.setBusy(key);
    errors.clear();
    try {
      await startConnect({ platform: props.option.platform, connector: props.option.connector, instanceUrl: /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : `https://${url}` });
    } catch (e) {
      errors.show(e);
      props.setBusy(null);
    }
  };
  return (
    <form id="instance-form" class="ch-form" onSubmit={submit} noValidate={false}>
      <Field id="instance-url" label={`Your ${props.option.platformName} server`} field="instanceUrl" errors={errors} hint="The address of the instance your account is on, e.g. mastodon.social">
        {(a) => <input {...a} name="instanceUrl" required inputMode="url" autocomplete="url" placeholder="https://mastodon.social" />}
      </Field>
      <div class="row">
        <button type="submit" disabled={props.busy !== null}>{props.busy === key ? 'Opening the instance…' : 'Continue to the instance'}</button>
      </div>
      <FormError errors={errors} />
    </form>
  );
}

/** Bluesky: its own sign-in (AT Protocol OAuth, where the server offers it) or an app password. */
function BlueskyForms(props: PanelProps & { option: Option }) {
  const oauthErrors = useFormErrors(['handle', 'instanceUrl']);
  const pwErrors = useFormErrors(['identifier', 'appPassword', 'serviceUrl']);
  const re = props.reconnect;
  const signIn = async (ev: Event) => {
    ev.preventDefault();
    const handle = String(new FormData(ev.currentTarget as HTMLFormElement).get('handle') ?? '').trim().replace(/^@/, '');
    props.setBusy('bluesky-oauth');
    oauthErrors.clear();
    try {
      if (re) await startReconnect(re.id);
      else await startConnect({ platform: props.option.platform, connector: props.option.connector, ...(handle ? { handle } : {}) });
    } catch (e) {
      oauthErrors.show(e);
      props.setBusy(null);
    }
  };
  const withPassword = async (ev: Event) => {
    ev.preventDefault();
    const form = ev.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const get = (k: string) => String(data.get(k) ?? '').trim();
    const service = get('serviceUrl');
    props.setBusy('bluesky-password');
    pwErrors.clear();
    try {
      const r = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/integrations/connect-password', {
        params: { path: { workspaceId: wsId() } },
        body: {
          platform: props.option.platform,
          connector: props.option.connector,
          identifier: get('identifier').replace(/^@/, ''),
          appPassword: String(data.get('appPassword') ?? ''),
          ...(service && !re ? { serviceUrl: /^[a-z][a-z0-9+.-]*:\/\//i.test(service) ? service : `https://${service}` } : {}),
          ...(re ? { integrationId: re.id } : {}),
        },
      }));
      // The app password is used once by the server and never kept: clear it from the form too.
      form.reset();
      props.onConnected([r.data.name]);
    } catch (e) {
      pwErrors.show(e);
    } finally {
      props.setBusy(null);
    }
  };
  return (
    <>
      {props.option.oauth && (
        <form id="bluesky-signin-form" class="ch-form" onSubmit={signIn} aria-labelledby="bluesky-signin-h">
          <h4 id="bluesky-signin-h">Sign in with Bluesky</h4>
          {!re && (
            <Field id="bluesky-handle" label="Your handle (optional)" field="handle" errors={oauthErrors} hint="e.g. alice.bsky.social; you confirm on your Bluesky server.">
              {(a) => <input {...a} name="handle" autocomplete="username" placeholder="alice.bsky.social" />}
            </Field>
          )}
          <div class="row">
            <button type="submit" disabled={props.busy !== null}>{props.busy === 'bluesky-oauth' ? 'Opening Bluesky…' : 'Continue to Bluesky'}</button>
          </div>
          <FormError errors={oauthErrors} />
        </form>
      )}
      <form id="app-password-form" class="ch-form" onSubmit={withPassword} aria-labelledby="app-password-h">
        <h4 id="app-password-h">{props.option.oauth ? 'Or with an app password' : 'With an app password'}</h4>
        <p class="hint">Make one in Bluesky under Settings, Privacy and security, App passwords. It is used once to sign in and never stored; your account's own password is refused.</p>
        <Field id="bluesky-identifier" label="Handle or DID" field="identifier" errors={pwErrors}>
          {(a) => <input {...a} name="identifier" required autocomplete="username" defaultValue={re?.username ?? undefined} readOnly={!!re && !!re.username} placeholder="alice.bsky.social" />}
        </Field>
        <Field id="bluesky-app-password" label="App password" field="appPassword" errors={pwErrors}>
          {(a) => <input {...a} name="appPassword" type="password" required autocomplete="off" placeholder="xxxx-xxxx-xxxx-xxxx" />}
        </Field>
        {!re && (
          <Field id="bluesky-service" label="Your PDS (optional)" field="serviceUrl" errors={pwErrors} hint="Only if your account is not hosted by Bluesky itself.">
            {(a) => <input {...a} name="serviceUrl" inputMode="url" placeholder="https://bsky.social" />}
          </Field>
        )}
        <div class="row">
          <button type="submit" disabled={props.busy !== null}>{props.busy === 'bluesky-password' ? 'Signing in…' : re ? 'Reconnect' : 'Connect'}</button>
        </div>
        <FormError errors={pwErrors} />
      </form>
    </>
  );
}

const BEHAVIORS: { value: Behavior; label: string }[] = [
  { value: 'succeed', label: 'Every post succeeds' },
  { value: 'fail', label: 'Every post fails' },
  { value: 'transient-then-succeed', label: 'Fails once, then succeeds' },
  { value: 'unknown', label: 'The outcome stays unknown' },
];

/** A sandbox or webhook channel (POST {ws}/integrations): no account, a name and the platform it stands for. */
function ChannelForm(props: PanelProps & { connector: Connector; choices: Option[] }) {
  const webhook = props.connector === 'webhook';
  const errors = useFormErrors(['name', 'platform', 'username', 'url', 'secret', 'behavior', 'settings', 'connector']);
  const platforms = [...props.choices].sort((a, b) => a.platformName.localeCompare(b.platformName));
  const submit = async (ev: Event) => {
    ev.preventDefault();
    const data = new FormData(ev.currentTarget as HTMLFormElement);
    const get = (k: string) => String(data.get(k) ?? '').trim();
    props.setBusy('create');
    errors.clear();
    try {
      const r = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/integrations', {
        params: { path: { workspaceId: wsId() } },
        body: {
          connector: props.connector,
          platform: get('platform') as Platform,
          name: get('name'),
          ...(get('username') ? { username: get('username') } : {}),
          ...(webhook ? { url: get('url') } : { settings: { behavior: get('behavior') as Behavior } }),
          ...(webhook && get('secret') ? { secret: get('secret') } : {}),
        },
      }));
      if (r.data.secret) props.onSecret(r.data.name, r.data.secret);
      props.onConnected([r.data.name]);
    } catch (e) {
      errors.show(e);
    } finally {
      props.setBusy(null);
    }
  };
  return (
    <form id="channel-form" class="ch-form" onSubmit={submit}>
      <Field id="channel-name" label="Name" field="name" errors={errors} hint="How the channel is shown in the calendar and the composer.">
        {(a) => <input {...a} name="name" required maxLength={200} placeholder={webhook ? 'Acme intranet' : 'Acme (sandbox)'} />}
      </Field>
      <Field id="channel-platform" label="Platform it stands for" field="platform" errors={errors} hint="Its rules (caption length, media) are checked for editions on this channel.">
        {(a) => (
          <select {...a} name="platform" required>
            {platforms.map((o) => <option key={o.platform} value={o.platform}>{o.platformName}</option>)}
          </select>
        )}
      </Field>
      <Field id="channel-username" label="Account handle (optional)" field="username" errors={errors}>
        {(a) => <input {...a} name="username" maxLength={200} />}
      </Field>
      {webhook ? (
        <>
          <Field id="webhook-url" label="Receiver URL" field="url" errors={errors} hint="Each post is sent there as a signed POST (https).">
            {(a) => <input {...a} name="url" type="url" required placeholder="https://hooks.example.com/pressroom" />}
          </Field>
          <Field id="webhook-secret-input" label="Signing secret (optional)" field="secret" errors={errors} hint="whsec_ followed by base64; leave empty and the server issues one, shown once.">
            {(a) => <input {...a} name="secret" type="password" autocomplete="off" />}
          </Field>
        </>
      ) : (
        <Field id="channel-behavior" label="How the sandbox answers" field="behavior" errors={errors}>
          {(a) => (
            <select {...a} name="behavior">
              {BEHAVIORS.map((b) => <option key={b.value} value={b.value}>{b.label}</option>)}
            </select>
          )}
        </Field>
      )}
      <div class="row">
        <button type="submit" disabled={props.busy !== null}>{props.busy === 'create' ? 'Adding…' : 'Add channel'}</button>
      </div>
      <FormError errors={errors} />
    </form>
  );
}

/** A modal <dialog>: opened on mount, its Escape or close calls onClose. */
function useModal(onClose: () => void) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current!;
    if (!d.open) d.showModal();
    const closed = () => onClose();
    d.addEventListener('close', closed);
    return () => d.removeEventListener('close', closed);
  }, []);
  return ref;
}

function DisconnectDialog(props: { integration: Integration; onClose: () => void; onDone: (name: string) => void }) {
  const ref = useModal(props.onClose);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const i = props.integration;
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await unwrap(client.value.DELETE('/v1/workspaces/{workspaceId}/integrations/{id}', { params: { path: { workspaceId: wsId(), id: i.id } } }));
      props.onDone(i.name);
    } catch (e) {
      const p = e instanceof PressroomError ? e : null;
      setError(p ? `${p.message} (${p.code}${p.requestId ? `; request ${p.requestId}` : ''})` : String(e));
      setBusy(false);
    }
  };
  return (
    <dialog id="disconnect-dialog" ref={ref} aria-labelledby="disconnect-h" aria-describedby="disconnect-text">
      <h2 id="disconnect-h">Disconnect {i.name}?</h2>
      <p id="disconnect-text">
        The channel is removed from this workspace and nothing more is published to it. Editions still scheduled on it must be moved or unscheduled first.
        {!NO_SIGN_IN.includes(i.connector) && ' To connect the account again later, you sign in on the platform again.'}
      </p>
      {error && <p class="field-error" role="alert" id="disconnect-error">{error}</p>}
      <div class="row ch-dialog-buttons">
        <button type="button" autofocus onClick={() => ref.current?.close()} disabled={busy}>Cancel</button>
        <button type="button" class="danger" id="confirm-disconnect" onClick={() => void confirm()} disabled={busy}>{busy ? 'Disconnecting…' : 'Disconnect'}</button>
      </div>
    </dialog>
  );
}

/** A consent that covers several accounts (LinkedIn: the member and their organization pages): which to connect. */
function ChooseDialog(props: { pending: Pending; platformName: string; onClose: () => void; onDone: (made: Schema<'IntegrationDetail'>[]) => void }) {
  const ref = useModal(props.onClose);
  const tz = workspace.value?.timezone ?? 'UTC';
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  const [busy, setBusy] = useState(false);
  const errors = useFormErrors(['accountIds']);
  const p = props.pending;
  const submit = async (ev: Event) => {
    ev.preventDefault();
    setBusy(true);
    errors.clear();
    try {
      const r = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/pending-connections/{id}/choose', {
        params: { path: { workspaceId: wsId(), id: p.id } },
        body: { accountIds: [...chosen] },
      }));
      props.onDone(r.data);
    } catch (e) {
      errors.show(e);
      setBusy(false);
    }
  };
  const toggle = (id: string, on: boolean) => {
    const next = new Set(chosen);
    if (on) next.add(id);
    else next.delete(id);
    setChosen(next);
  };
  const kind = (k: Pending['accounts'][number]['kind']) => (k === 'person' ? 'your profile' : k === 'organization' || k === 'page' ? 'page' : null);
  return (
    <dialog id="choose-dialog" ref={ref} aria-labelledby="choose-h">
      <form onSubmit={submit}>
        <h2 id="choose-h">Choose the {props.platformName} accounts to connect</h2>
        <p class="hint">Your sign-in covers these accounts; each one you choose becomes a channel. The choice is open until {formatInZone(p.expiresAt, tz)}.</p>
        <fieldset class="ch-accounts" aria-describedby={errors.of('accountIds') ? 'choose-err' : undefined}>
          <legend>Accounts</legend>
          {p.accounts.map((a) => {
            const k = kind(a.kind);
            return (
              <label key={a.accountId} class="ch-account-choice">
                <input type="checkbox" name="accountIds" value={a.accountId} disabled={!!a.integrationId || busy} checked={chosen.has(a.accountId)} onChange={(e) => toggle(a.accountId, (e.currentTarget as HTMLInputElement).checked)} />
                <span>
                  {a.name ?? a.username ?? a.accountId}
                  {k && <span class="hint"> ({k})</span>}
                  {a.integrationId && <span class="hint"> · already connected</span>}
                </span>
              </label>
            );
          })}
        </fieldset>
        <FieldError id="choose-err" text={errors.of('accountIds')} />
        <FormError errors={errors} />
        <div class="row ch-dialog-buttons">
          <button type="button" onClick={() => ref.current?.close()} disabled={busy}>Cancel</button>
          <button type="submit" disabled={busy || chosen.size === 0}>{busy ? 'Connecting…' : chosen.size > 1 ? `Connect ${chosen.size} accounts` : 'Connect'}</button>
        </div>
      </form>
    </dialog>
  );
}
