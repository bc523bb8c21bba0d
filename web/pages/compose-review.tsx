// "Send for review" in the composer's edit mode: the opened post's editions
// go to approvers (members of the workspace and client reviewers, who need no
// account) through POST {ws}/reviews then POST {ws}/reviews/{id}/send, the
// same routes as the API (docs/reviews.md). The client links come back once,
// each as the review page's URL (/review#token=...), shown here with a copy
// button and kept in this page's memory only.
import { useEffect, useState } from 'preact/hooks';
import { client, describe, fieldProblems, type Schema, unwrap, wsId } from '../lib/api.ts';
import { CopyButton, FieldError } from '../lib/ui.tsx';

type Member = Schema<'Member'>;
type Link = Schema<'ReviewLinkToken'>;
type Approver = Schema<'ReviewApprover'>;

interface Props {
  contentIds: string[];
  defaultTitle: string;
  /** The links of a review sent from this page (kept by the composer while it stays open). */
  links: Link[] | null;
  onSent: (links: Link[]) => void;
}

export function ReviewRequest({ contentIds, defaultTitle, links, onSent }: Props) {
  const [open, setOpen] = useState(false);
  const [members, setMembers] = useState<Member[]>([]);
  const [title, setTitle] = useState(defaultTitle);
  const [message, setMessage] = useState('');
  const [memberIds, setMemberIds] = useState<string[]>([]);
  const [clientEmail, setClientEmail] = useState('');
  const [clientName, setClientName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [fields, setFields] = useState<Record<string, string>>({});

  useEffect(() => {
    if (!open) return;
    unwrap(client.value.GET('/v1/workspaces/{workspaceId}/members', { params: { path: { workspaceId: wsId() } } }))
      .then((b) => setMembers(b.data.filter((m) => m.status === 'active')), (e) => setError(`Could not load the members: ${describe(e)}`));
  }, [open]);

  const send = async (ev: Event) => {
    ev.preventDefault();
    setError(null);
    setFields({});
    const approvers: Approver[] = memberIds.map((userId) => ({ type: 'member', userId }));
    if (clientEmail.trim() || clientName.trim()) approvers.push({ type: 'client', email: clientEmail.trim(), name: clientName.trim() });
    if (!approvers.length) {
      setFields({ approvers: 'Choose at least one member or enter a client reviewer.' });
      return;
    }
    setBusy(true);
    try {
      const created = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/reviews', {
        params: { path: { workspaceId: wsId() } },
        body: { title: title.trim(), ...(message.trim() ? { message: message.trim() } : {}), stages: [{ name: 'Review', rule: 'all', approvers }], contentIds },
      }));
      const sent = await unwrap(client.value.POST('/v1/workspaces/{workspaceId}/reviews/{reviewId}/send', {
        params: { path: { workspaceId: wsId(), reviewId: created.data.id } },
      }));
      onSent(sent.data.links);
    } catch (e) {
      const f: Record<string, string> = {};
      for (const p of fieldProblems(e)) {
        const k = (p.field ?? p.path ?? '').replace(/^\/?body\/?/, '');
        const msg = `${p.message ?? p.reason ?? 'is not valid'} (${p.code ?? 'invalid'})`;
        if (/title/.test(k)) f.title = msg;
        else if (/message/.test(k)) f.message = msg;
        else if (/email/.test(k)) f.clientEmail = msg;
        else if (/name/.test(k)) f.clientName = msg;
        else f.approvers = msg;
      }
      setFields(f);
      setError(`Could not send the review: ${describe(e)}`);
    } finally {
      setBusy(false);
    }
  };

  if (links) {
    return (
      <section class="card section review-request" aria-labelledby="review-req-h" id="review-request">
        <h2 id="review-req-h">Sent for review</h2>
        {links.length === 0 ? <p>The approvers find it in their Approvals inbox.</p> : (
          <>
            <p>Send each client reviewer their link. It is shown here only once; it needs no account.</p>
            <ul class="review-links">
              {links.map((l) => (
                <li key={l.id}>
                  <strong>{l.name}</strong> <span class="hint">{l.email}</span>
                  <div class="row">
                    <code class="secret review-link-url">{l.url}</code>
                    <CopyButton text={l.url} label={`Copy ${l.name}'s link`} />
                  </div>
                </li>
              ))}
            </ul>
          </>
        )}
      </section>
    );
  }

  return (
    <section class="card section review-request" aria-labelledby="review-req-h" id="review-request">
      <h2 id="review-req-h">Send for review</h2>
      {!open ? (
        <button type="button" id="open-review" onClick={() => setOpen(true)}>Send for review…</button>
      ) : (
        <form class="form-grid" onSubmit={send} noValidate>
          <label>Title
            <input id="review-title" value={title} required maxLength={200} aria-invalid={!!fields.title} aria-describedby={fields.title ? 'review-title-err' : undefined}
              onInput={(e) => setTitle((e.currentTarget as HTMLInputElement).value)} />
          </label>
          <FieldError id="review-title-err" text={fields.title} />
          <label>Message to the reviewers (optional)
            <textarea id="review-message" rows={2} value={message} onInput={(e) => setMessage((e.currentTarget as HTMLTextAreaElement).value)} />
          </label>
          <FieldError id="review-message-err" text={fields.message} />
          <fieldset class="review-members" aria-describedby={fields.approvers ? 'review-approvers-err' : undefined}>
            <legend>Members who approve</legend>
            {members.length === 0 ? <p class="hint">Loading members…</p> : members.map((m) => (
              <label key={m.userId} class="row">
                <input type="checkbox" name="review-member" value={m.userId} checked={memberIds.includes(m.userId)}
                  onChange={(e) => setMemberIds((e.currentTarget as HTMLInputElement).checked ? [...memberIds, m.userId] : memberIds.filter((x) => x !== m.userId))} />
                {`${m.email ?? `Member ${m.userId.slice(0, 8)}`} (${m.role})`}
              </label>
            ))}
          </fieldset>
          <fieldset class="review-client">
            <legend>Client reviewer (no account needed)</legend>
            <label>Client's email
              <input id="review-client-email" type="email" value={clientEmail} aria-invalid={!!fields.clientEmail} aria-describedby={fields.clientEmail ? 'review-client-email-err' : undefined}
                onInput={(e) => setClientEmail((e.currentTarget as HTMLInputElement).value)} />
            </label>
            <FieldError id="review-client-email-err" text={fields.clientEmail} />
            <label>Client's name
              <input id="review-client-name" value={clientName} maxLength={200} aria-invalid={!!fields.clientName} aria-describedby={fields.clientName ? 'review-client-name-err' : undefined}
                onInput={(e) => setClientName((e.currentTarget as HTMLInputElement).value)} />
            </label>
            <FieldError id="review-client-name-err" text={fields.clientName} />
          </fieldset>
          <FieldError id="review-approvers-err" text={fields.approvers} />
          {error && <p class="field-error" role="alert">{error}</p>}
          <div class="row">
            <button type="submit" class="primary" id="send-review" disabled={busy}>{busy ? 'Sending…' : 'Send for review'}</button>
            <button type="button" onClick={() => setOpen(false)} disabled={busy}>Cancel</button>
          </div>
        </form>
      )}
    </section>
  );
}
