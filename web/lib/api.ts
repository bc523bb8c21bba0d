// The pages' one way to the API: the SDK (clients/typescript) with the
// signed-in session's token as its bearer, so every page uses the public
// routes with the same rules, grants and audit as any other caller, and a
// contract change that breaks a page fails `tsc`.
import { signal, computed } from '@preact/signals';
import { createPressroomClient, PressroomError, unwrap, type PressroomClient, type Schema } from '../../clients/typescript/src/client.ts';

export { PressroomError, unwrap, type Schema };
export type Workspace = Schema<'Workspace'>;

const TOKEN_KEY = 'pressroom.session';
const EMAIL_KEY = 'pressroom.email';
const WS_KEY = 'pressroom.workspace';

/** The session token (sessionStorage: it ends with the tab). */
export const session = signal<string | null>(sessionStorage.getItem(TOKEN_KEY));
export const email = signal<string>(sessionStorage.getItem(EMAIL_KEY) ?? '');
/** Why the last session ended, shown on the sign-in form. */
export const signedOutReason = signal<string | null>(null);

/** Signs out locally when the API answers 401 to a signed-in call. */
const on401 = {
  onResponse({ response }: { response: Response }) {
    if (response.status === 401 && session.value) endLocally('Your session has ended; sign in again.');
    return response;
  },
};

function build(token: string | null): PressroomClient {
  const c = createPressroomClient({ baseUrl: location.origin, apiKey: token ?? undefined, retry: { maxRetries: 2, maxDelayMs: 5_000 } });
  if (token) c.use(on401);
  return c;
}

/** The client of the current session (anonymous before sign-in). */
export const client = computed(() => build(session.value));

export function endLocally(reason: string | null = null) {
  sessionStorage.removeItem(TOKEN_KEY);
  session.value = null;
  workspaces.value = [];
  signedOutReason.value = reason;
}

export async function signIn(address: string, password: string) {
  const s = await unwrap(client.value.POST('/v1/auth/sessions', { body: { email: address, password } }));
  sessionStorage.setItem(TOKEN_KEY, s.data.token);
  sessionStorage.setItem(EMAIL_KEY, s.data.user.email);
  email.value = s.data.user.email;
  signedOutReason.value = null;
  session.value = s.data.token;
}

export async function signOut() {
  try {
    await client.value.DELETE('/v1/auth/sessions/current');
  } catch {
    // the session may already be gone; signing out locally is what matters
  }
  endLocally();
}

// ---- workspaces --------------------------------------------------------------------------

export const workspaces = signal<Workspace[]>([]);
export const workspaceId = signal<string | null>(sessionStorage.getItem(WS_KEY));
/** The workspace the pages work in (the header's picker). */
export const workspace = computed(() => workspaces.value.find((w) => w.id === workspaceId.value) ?? workspaces.value[0] ?? null);

export async function loadWorkspaces() {
  const list = await unwrap(client.value.GET('/v1/workspaces'));
  workspaces.value = list.data;
}

export function chooseWorkspace(id: string) {
  sessionStorage.setItem(WS_KEY, id);
  workspaceId.value = id;
}

/** The current workspace's id; throws when there is none (pages render only inside one). */
export function wsId(): string {
  const w = workspace.value;
  if (!w) throw new Error('No workspace is open.');
  return w.id;
}

/** Whether the caller's role in the current workspace is at least `role`. */
export function can(role: 'viewer' | 'editor' | 'manager'): boolean {
  const order = { viewer: 0, editor: 1, manager: 2 };
  const r = workspace.value?.role;
  return !!r && order[r] >= order[role];
}

// ---- errors ------------------------------------------------------------------------------

export interface FieldProblem { field?: string; path?: string; code?: string; reason?: string; message?: string }

/** The per-field problems of a refusal (details.fields), if any. */
export function fieldProblems(e: unknown): FieldProblem[] {
  if (!(e instanceof PressroomError)) return [];
  const d = e.details as { fields?: FieldProblem[] } | null;
  return Array.isArray(d?.fields) ? d.fields : [];
}

/** "Message (CODE; field: reason; request id)" for a refusal. */
export function describe(e: unknown): string {
  if (!(e instanceof PressroomError)) return e instanceof Error ? e.message : String(e);
  const parts = [e.code];
  for (const f of fieldProblems(e)) parts.push(`${f.field ?? f.path ?? ''}: ${f.message ?? f.reason ?? f.code ?? ''}`.trim());
  if (e.requestId) parts.push(`request ${e.requestId}`);
  return `${e.message} (${parts.join('; ')})`;
}
