import { z } from 'zod';
import { sql } from '../db/pool.ts';
import { ApiError } from '../http/errors.ts';
import type { RouteTable, TransactionalRoute } from '../http/pipeline.ts';
import type { RequestBody, Schema } from '../http/types.ts';
import { dummyPasswordHash, hashPassword, newSessionToken, sha256, verifyPassword } from '../security.ts';

const LoginRow = z.object({ user_id: z.string(), password_hash: z.string() });

/** The SQL functions store only the token's hash and answer `token: null`; the handler fills the token in. */
type TokenPending<T extends { token: string }> = Omit<T, 'token'> & { token: null };

/** The KDF and the token, before the transaction opens. */
async function prepareSignup({ body }: { body: RequestBody<'signup_v1'> }) {
  const token = newSessionToken();
  return { token, tokenHash: sha256(token), passwordHash: await hashPassword(body.password) };
}

const signup: TransactionalRoute<'signup_v1', Awaited<ReturnType<typeof prepareSignup>>> = {
  prepare: prepareSignup,
  handle: async ({ call, body, prepared }) => {
    type Pending = Omit<Schema<'SignupResult'>, 'session'> & { session: TokenPending<Schema<'SignupResult'>['session']> };
    const r = await call<Pending>(sql.fragment`api.signup(${body.email}, ${prepared.passwordHash}, ${body.organizationName},
      ${body.workspaceName}, ${sql.binary(prepared.tokenHash)})`);
    const data = { ...r, session: { ...r.session, token: prepared.token } };
    return { status: 201, data, actor: { userId: data.user.id, organizationId: data.organization.id } };
  },
};

export const authRoutes = {
  signup_v1: signup,

  createSession_v1: {
    handle: async ({ tx, call, body }) => {
      const { email, password } = body;
      const found = await tx.maybeOne(sql.type(LoginRow)`select user_id, password_hash from api.login_lookup(${email})`);
      // Unknown emails cost the same KDF time as wrong passwords.
      const ok = await verifyPassword(password, found?.password_hash ?? (await dummyPasswordHash()));
      if (!found || !ok) throw new ApiError(401, 'INVALID_CREDENTIALS', 'The email or password is wrong.');
      const token = newSessionToken();
      const r = await call<TokenPending<Schema<'Session'>>>(sql.fragment`api.create_session(${found.user_id}, ${found.password_hash},
        ${sql.binary(sha256(token))})`);
      const data = { ...r, token };
      return { status: 201, data, actor: { userId: data.user.id, organizationId: data.user.organizationId } };
    },
  },

  endSession_v1: {
    handle: async ({ call }) => ({ data: await call(sql.fragment`api.end_current_session()`) }),
  },
} satisfies Partial<RouteTable>;
