// Settings, members tab: GET/POST {ws}/members, PATCH/DELETE {ws}/members/{userId}.
// Every role may list members (without addresses below manager); only managers
// invite, change roles and remove, and the API's refusals (LAST_MANAGER,
// ALREADY_MEMBER) are shown as it words them.
import { useState } from 'preact/hooks';
import { can, client, email, type Schema, unwrap, workspace, wsId } from '../lib/api.ts';
import { formatInZone, say, sayError, useList } from '../lib/ui.tsx';
import { ConfirmDialog, described, Field, problemsFor, type Problems, TableBox } from './settings-shared.tsx';

type Member = Schema<'Member'>;
type Role = Member['role'];
const ROLES: Role[] = ['viewer', 'editor', 'manager'];

const STATUS_BADGE: Record<Member['status'], string> = { active: 'ok', invited: 'warn', disabled: 'bad' };

export function MembersTab() {
  const tz = workspace.value!.timezone;
  const manager = can('manager');
  const [busyId, setBusyId] = useState<string | null>(null);
  const [removing, setRemoving] = useState<Member | null>(null);

  const { items: members, error: loadError, load } = useList<Member>(
    async () => (await unwrap(client.value.GET('/v1/workspaces/{workspaceId}/members', { params: { path: { workspaceId: wsId() } } }))).data,
    'members',
  );

  const who = (m: Member) => m.email ?? `Member ${m.userId.slice(0, 8)}`;

  const changeRole = async (m: Member, role: Role) => {
    setBusyId(m.userId);
    try {
      await unwrap(client.value.PATCH('/v1/workspaces/{workspaceId}/members/{userId}', { params: { path: { workspaceId: wsId(), userId: m.userId } }, body: { role } }));
      say('ok', `${who(m)} is now ${role}.`);
    } catch (e) {
      sayError(`Could not change the role of ${who(m)}`, e);
    } finally {
      // Re-read either way: a refused change shows the role the member still has.
      await load();
      setBusyId(null);
    }
  };

  return (
    <>
      <h2 id="members-h">Members</h2>
      {manager ? (
        <Invite onAdded={() => void load()} />
      ) : (
        <p class="hint">Inviting members and changing roles needs the manager role in this workspace; yours is {workspace.value!.role}. Addresses are shown to managers only.</p>
      )}
      <h3>People in this workspace</h3>
      {members === null ? (
        loadError ? <p class="error">{loadError}</p> : <p aria-busy="true">Loading members…</p>
      ) : members.length === 0 ? (
        <p class="hint">No members.</p>
      ) : (
        <TableBox label="Members">
          <table class="list" id="members-list">
            <thead>
              <tr><th scope="col">Member</th><th scope="col">Role</th><th scope="col">Organization role</th><th scope="col">Status</th><th scope="col">Since</th>{manager && <th scope="col"><span class="sr-only">Actions</span></th>}</tr>
            </thead>
            <tbody>
              {members.map((m) => (
                <tr key={m.userId} data-user-id={m.userId}>
                  <td>{who(m)}{m.email && m.email === email.value && <span class="hint"> (you)</span>}</td>
                  <td>
                    {manager ? (
                      <select
                        aria-label={`Role of ${who(m)}`}
                        value={m.role}
                        disabled={busyId === m.userId}
                        onChange={(e) => void changeRole(m, e.currentTarget.value as Role)}
                      >
                        {ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
                      </select>
                    ) : m.role}
                  </td>
                  <td>{m.orgRole}</td>
                  <td>
                    <span class={`badge ${STATUS_BADGE[m.status]}`}>{m.status}</span>
                    {m.status === 'invited' && <span class="hint st-block">Pending until the invitation is accepted.</span>}
                  </td>
                  <td>{formatInZone(m.createdAt, tz)}</td>
                  {manager && (
                    <td><button type="button" class="danger" aria-label={`Remove ${who(m)}`} disabled={busyId === m.userId} onClick={() => setRemoving(m)}>Remove</button></td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </TableBox>
      )}
      {removing && (
        <ConfirmDialog
          title="Remove this member?"
          confirmLabel="Remove member"
          danger
          onClose={() => setRemoving(null)}
          onConfirm={async () => {
            await unwrap(client.value.DELETE('/v1/workspaces/{workspaceId}/members/{userId}', { params: { path: { workspaceId: wsId(), userId: removing.userId } } }));
            say('ok', `${who(removing)} was removed from the workspace.`);
            await load();
          }}
        >
          <p>{who(removing)} loses access to this workspace at once. Their account and what they made stay.</p>
        </ConfirmDialog>
      )}
    </>
  );
}

function Invite({ onAdded }: { onAdded: () => void }) {
  const [address, setAddress] = useState('');
  const [role, setRole] = useState<Role>('editor');
  const [busy, setBusy] = useState(false);
  const [problems, setProblems] = useState<Problems>({});
  const submit = async (ev: Event) => {
    ev.preventDefault();
    setBusy(true);
    setProblems({});
    try {
      const body = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/members', { params: { path: { workspaceId: wsId() } }, body: { email: address.trim(), role } }));
      say('ok', body.data.status === 'invited' ? `${address.trim()} is invited as ${role}.` : `${address.trim()} was added as ${role}.`);
      setAddress('');
      onAdded();
    } catch (e) {
      setProblems(problemsFor('Could not invite', e, ['email', 'role']));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form id="invite-form" class="form-grid st-form st-inline" onSubmit={submit} noValidate aria-labelledby="invite-h">
      <h3 id="invite-h">Invite a member</h3>
      <Field id="invite-email" label="Email" error={problems.email}>
        <input type="email" name="email" autocomplete="off" required value={address} onInput={(e) => setAddress(e.currentTarget.value)} {...described('invite-email', problems.email)} />
      </Field>
      <Field id="invite-role" label="Role" error={problems.role}>
        <select name="role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)} {...described('invite-role', problems.role)}>
          {ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
        </select>
      </Field>
      <div class="row">
        <button type="submit" disabled={busy}>{busy ? 'Inviting…' : 'Invite'}</button>
      </div>
    </form>
  );
}
