import { z } from 'zod';
import { sql } from '../db/pool.ts';
import type { components } from '../generated/api.d.ts';
import { ApiError } from '../http/errors.ts';
import type { RouteDefinition } from '../http/pipeline.ts';
import { dummyPasswordHash, hashPassword, newSessionToken, sha256, verifyPassword } from '../security.ts';

const LoginRow = z.object({ user_id: z.string(), password_hash: z.string() });

export const authRoutes: Record<string, RouteDefinition> = {
  signup_v1: {
    prepare: async ({ body }) => {
      const token = newSessionToken();
      return { token, tokenHash: sha256(token), passwordHash: await hashPassword(body.password) };
    },
    handle: async ({ call, body, prepared, config }) => {
      const b = body as components['schemas']['SignupRequest'];
      const data = await call(sql.fragment`api.signup(${b.email}, ${prepared.passwordHash}, ${b.organizationName},
        ${b.workspaceName}, ${sql.binary(prepared.tokenHash)})`);
      data.session.token = prepared.token;
      return { status: 201, data, actor: { userId: data.user.id, organizationId: data.organization.id } };
    },
  },

  createSession_v1: {
    handle: async ({ tx, call, body, config }) => {
      const { email, password } = body as components['schemas']['SessionRequest'];
      const found = await tx.maybeOne(sql.type(LoginRow)`select user_id, password_hash from api.login_lookup(${email})`);
      // Unknown emails cost the same KDF time as wrong passwords.
      const ok = await verifyPassword(password, (found?.password_hash as string) ?? (await dummyPasswordHash()));
      if (!found || !ok) throw new ApiError(401, 'INVALID_CREDENTIALS', 'The email or password is wrong.');
      const token = newSessionToken();
      const data = await call(sql.fragment`api.create_session(${found.user_id}, ${found.password_hash},
        ${sql.binary(sha256(token))})`);
      data.token = token;
      return { status: 201, data, actor: { userId: data.user.id, organizationId: data.user.organizationId } };
    },
  },

  endSession_v1: {
    handle: async ({ call }) => ({ data: await call(sql.fragment`api.end_current_session()`) }),
  },
};
