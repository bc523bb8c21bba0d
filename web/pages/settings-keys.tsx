// Settings, API keys tab: POST/GET {ws}/api-keys and DELETE {ws}/api-keys/{id}
// with the session (the API refuses keys to keys). The raw key of ApiKeyCreated
// lives in this component's state only, so it is gone when the tab or page is left.
import { useState } from 'preact/hooks';
import { can, client, type Schema, unwrap, workspace, workspaces, wsId } from '../lib/api.ts';
import { FieldError, formatInZone, say, useList, zonedToIso } from '../lib/ui.tsx';
import { ConfirmDialog, described, Field, problemsFor, type Problems, ShownOnce, TableBox } from './settings-shared.tsx';

type Key = Schema<'ApiKeyListItem'>;
type Created = Schema<'ApiKeyCreated'>;
type Role = Schema<'CreateApiKeyRequest'>['role'] & string;

const ROLES: Role[] = ['viewer', 'editor', 'manager'];
const FIELDS = ['name', 'role', 'workspaceIds', 'expiresAt'] as const;

export function KeysTab() {
  const tz = workspace.value!.timezone;
  const manager = can('manager');
  const [created, setCreated] = useState<Created | null>(null);
  const [revoking, setRevoking] = useState<Key | null>(null);

  const { items: keys, error: loadError, load } = useList<Key>(
    async () => (await unwrap(client.value.GET('/v1/workspaces/{workspaceId}/api-keys', { params: { path: { workspaceId: wsId() } } }))).data,
    'API keys', manager,
  );

  if (!manager) {
    return (
      <>
        <h2 id="keys-h">API keys</h2>
        <p class="hint">Creating, listing and revoking API keys needs the manager role in this workspace; yours is {workspace.value!.role}.</p>
      </>
    );
  }

  return (
    <>
      <h2 id="keys-h">API keys</h2>
      <p class="hint">A key lets a server, script or CI job call the API in the workspaces it is granted, with its role. Keys are made with your session only.</p>
      {created && (
        <ShownOnce id="new-key" label={`New key “${created.name}”`} value={created.key} onDone={() => setCreated(null)}>
          Pressroom keeps only its hash; this is the one time the key is shown.
        </ShownOnce>
      )}
      <CreateKey tz={tz} onCreated={(k) => { setCreated(k); void load(); }} />

      <h3>Active keys</h3>
      {keys === null ? (
        loadError ? <p class="error">{loadError}</p> : <p aria-busy="true">Loading keys…</p>
      ) : keys.length === 0 ? (
        <p class="hint" id="keys-empty">No active keys yet.</p>
      ) : (
        <TableBox label="Active API keys">
          <table class="list" id="keys-list">
            <thead>
              <tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Role</th><th scope="col">Workspaces</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id} data-key-id={k.id}>
                  <td>{k.name}</td>
                  <td><code class="st-prefix">{k.keyPrefix}…</code></td>
                  <td>{k.role}</td>
                  <td>
                    {k.workspaces.map((w) => w.name).join(', ')}
                    {k.workspaceCount > k.workspaces.length && ` and ${k.workspaceCount - k.workspaces.length} more`}
                  </td>
                  <td>{formatInZone(k.createdAt, tz)}</td>
                  <td>{k.lastUsedAt ? formatInZone(k.lastUsedAt, tz) : 'never'}</td>
                  <td>{k.expiresAt ? formatInZone(k.expiresAt, tz) : 'never'}</td>
                  <td><button type="button" class="danger" aria-label={`Revoke ${k.name}`} onClick={() => setRevoking(k)}>Revoke</button></td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableBox>
      )}
      {revoking && (
        <ConfirmDialog
          title="Revoke this API key?"
          confirmLabel="Revoke key"
          danger
          onClose={() => setRevoking(null)}
          onConfirm={async () => {
            await unwrap(client.value.DELETE('/v1/workspaces/{workspaceId}/api-keys/{id}', { params: { path: { workspaceId: wsId(), id: revoking.id } } }));
            say('ok', `The key “${revoking.name}” is revoked; calls with it are refused from now on.`);
            if (created?.id === revoking.id) setCreated(null);
            await load();
          }}
        >
          <p>
            “{revoking.name}” (<code>{revoking.keyPrefix}…</code>) stops working at once, for good. Whatever uses it will get 401.
          </p>
        </ConfirmDialog>
      )}
    </>
  );
}

function CreateKey({ tz, onCreated }: { tz: string; onCreated: (k: Created) => void }) {
  // The workspaces a key may be granted: those the user manages (POST api-keys refuses others).
  const grantable = workspaces.value.filter((w) => w.role === 'manager');
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('editor');
  const [chosen, setChosen] = useState<Set<string>>(new Set([wsId()]));
  const [expiry, setExpiry] = useState('');
  const [busy, setBusy] = useState(false);
  const [problems, setProblems] = useState<Problems>({});

  const submit = async (ev: Event) => {
    ev.preventDefault();
    setBusy(true);
    setProblems({});
    try {
      const body = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/api-keys', {
        params: { path: { workspaceId: wsId() } },
        body: {
          name: name.trim(),
          role,
          workspaceIds: [...chosen],
          // The end of the chosen day in the workspace's time zone.
          expiresAt: expiry ? zonedToIso(expiry, '23:59', tz) : null,
        },
      }));
      setName('');
      setExpiry('');
      onCreated(body.data);
    } catch (e) {
      setProblems(problemsFor('Could not create the key', e, FIELDS));
    } finally {
      setBusy(false);
    }
  };

  const toggle = (id: string, on: boolean) => {
    const next = new Set(chosen);
    if (on) next.add(id);
    else next.delete(id);
    setChosen(next);
  };

  return (
    <form id="key-form" class="form-grid st-form" onSubmit={submit} noValidate aria-labelledby="key-form-h">
      <h3 id="key-form-h">Create a key</h3>
      <Field id="key-name" label="Name" error={problems.name}>
        <input name="name" value={name} maxLength={200} required onInput={(e) => setName(e.currentTarget.value)} {...described('key-name', problems.name)} />
      </Field>
      <Field id="key-role" label="Role" error={problems.role} hint="What the key may do: viewer reads, editor drafts and schedules, manager also manages.">
        <select name="role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)} {...described('key-role', problems.role, true)}>
          {ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
        </select>
      </Field>
      <fieldset class="st-checks" aria-describedby={problems.workspaceIds ? 'key-ws-err' : undefined}>
        <legend>Workspaces</legend>
        {grantable.map((w) => (
          <label key={w.id}>
            <input type="checkbox" name="workspaceIds" value={w.id} checked={chosen.has(w.id)} onChange={(e) => toggle(w.id, e.currentTarget.checked)} />
            {w.name}
          </label>
        ))}
        <FieldError id="key-ws-err" text={problems.workspaceIds} />
      </fieldset>
      <Field id="key-expires" label="Expires (optional)" error={problems.expiresAt} hint={`At the end of that day (23:59, ${tz}). Empty: the key does not expire.`}>
        <input type="date" name="expiresAt" value={expiry} onInput={(e) => setExpiry(e.currentTarget.value)} {...described('key-expires', problems.expiresAt, true)} />
      </Field>
      <div class="row">
        <button type="submit" disabled={busy}>{busy ? 'Creating…' : 'Create key'}</button>
      </div>
    </form>
  );
}
