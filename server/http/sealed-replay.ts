// What an Idempotency-Key keeps for its replays (app.idempotency_keys.response_body, written by
// api.idempotency_finish): the answer sealed with the credential vault (AES-256-GCM, the key
// outside the database; server/platforms/vault.ts), because some answers carry a secret shown
// once (a webhook's signing secret, a webhook channel's secret) and a secret is never stored
// in the clear. The seal is bound to the workspace, the principal, the operation and the key, so
// a record copied onto another row does not open. Records written before sealing existed are
// replayed as stored.
import { ApiError } from '../errors.ts';
import type { CredentialVault } from '../platforms/vault.ts';

export interface ReplayScope {
  workspaceId: string;
  /** The API key's id, else the user's (app.current_principal_id). */
  principalId: string;
  method: string;
  route: string;
  key: string;
}

const binding = (s: ReplayScope) => `idempotency:${s.workspaceId}:${s.principalId}:${s.method}:${s.route}:${s.key}`;

/** The stored form of an answer: `{"sealed": "<base64 ciphertext>"}`. */
export function sealAnswer(vault: CredentialVault, scope: ReplayScope, envelope: unknown): { sealed: string } {
  return { sealed: vault.encryptJson(binding(scope), envelope).toString('base64') };
}

/** The answer a replay gives: the sealed one opened, or a record from before sealing as it is. */
export function openAnswer(vault: CredentialVault, scope: ReplayScope, stored: unknown): unknown {
  if (!stored || typeof stored !== 'object' || typeof (stored as { sealed?: unknown }).sealed !== 'string') return stored;
  try {
    return vault.decryptJson(binding(scope), Buffer.from((stored as { sealed: string }).sealed, 'base64'));
  } catch {
    throw new ApiError(409, 'IDEMPOTENCY_REPLAY_UNREADABLE',
      "The answer kept for this Idempotency-Key does not open with this server's credential keys (a key was removed from CREDENTIALS_KEYS); send the request with a new key.");
  }
}
