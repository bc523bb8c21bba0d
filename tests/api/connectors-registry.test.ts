// One place to add a connector: the registry (server/platforms/index.ts) is the
// one list, and this file fails when the SQL (app.connectors after migrating,
// what api.create_integration takes), the contract's connector enums or the
// configuration disagree with it (docs/connectors.md, "Adding a connector").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../server/config.ts';
import { declareConnectors } from '../../server/db/migrate.ts';
import {
  CONNECTOR_BASE_URL_ENV,
  CONNECTOR_MODULES,
  CONNECTOR_NAMES,
  connectorDeclarations,
  createConnectorRegistry,
  PLATFORM_CODES,
} from '../../server/platforms/index.ts';
import { openapi, startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer('connectors_registry');
});
afterAll(async () => {
  await server?.close();
});

const schemas = () => openapi.doc.components.schemas as Record<string, any>;
const sorted = <T extends string>(xs: readonly T[]): T[] => [...xs].sort();
const noSignIn = () => sorted(CONNECTOR_NAMES.filter((n) => CONNECTOR_MODULES[n].connect === 'none'));

/** Every `connector` property of every schema of the contract, with the enum it allows. */
function connectorEnums(): { where: string; values: string[] }[] {
  const out: { where: string; values: string[] }[] = [];
  const resolve = (s: any): any => (s?.$ref ? schemas()[s.$ref.split('/').pop()] : s);
  const visit = (s: any, where: string, seen: Set<any>) => {
    if (!s || typeof s !== 'object' || seen.has(s)) return;
    seen.add(s);
    for (const [k, v] of Object.entries<any>(s.properties ?? {})) {
      const r = resolve(v);
      if (k === 'connector' && r?.enum) out.push({ where: `${where}.${k}`, values: r.enum });
      visit(r, `${where}.${k}`, seen);
    }
    if (s.items) visit(resolve(s.items), `${where}[]`, seen);
  };
  for (const [name, s] of Object.entries(schemas())) visit(s, name, new Set());
  return out;
}

describe('the connector registry', () => {
  it('names each module by its own name, and builds one connector per entry', () => {
    for (const name of CONNECTOR_NAMES) {
      expect(CONNECTOR_MODULES[name].name, `registry entry ${name}`).toBe(name);
      expect(CONNECTOR_MODULES[name].platforms.length).toBeGreaterThan(0);
      for (const p of CONNECTOR_MODULES[name].platforms) expect(PLATFORM_CODES).toContain(p);
    }
    const registry = createConnectorRegistry({ timeoutMs: 1000, allowPrivateNetworks: false });
    expect(sorted(registry.names())).toEqual(sorted(CONNECTOR_NAMES));
    for (const name of CONNECTOR_NAMES) expect(registry.get(name).name).toBe(name);
  });

  it('is what app.connectors holds after migrating', async () => {
    const { rows } = await server.owner.query<{ name: string; platforms: string[]; connect: string }>('select name, platforms, connect from app.connectors order by name');
    expect(rows.map((r) => ({ name: r.name, platforms: sorted(r.platforms), connect: r.connect }))).toEqual(
      sorted(CONNECTOR_NAMES).map((n) => ({ name: n, platforms: sorted(CONNECTOR_MODULES[n].platforms), connect: CONNECTOR_MODULES[n].connect })),
    );
  });

  it('is declared again by the migration step: a drifted app.connectors is put back', async () => {
    await server.owner.query(`update app.connectors set platforms = '{x}', connect = 'none' where name = 'mastodon'`);
    await server.owner.query(`insert into app.connectors (name, platforms, connect) values ('myspace', '{x}', 'oauth')`);
    expect(await declareConnectors(server.db.ownerUrl)).toBe(true);
    const { rows } = await server.owner.query<{ name: string; platforms: string[]; connect: string }>('select name, platforms, connect from app.connectors order by name');
    expect(rows.map((r) => r.name)).toEqual(sorted(CONNECTOR_NAMES));
    expect(rows.find((r) => r.name === 'mastodon')).toMatchObject({ platforms: ['mastodon'], connect: 'oauth' });
    expect(connectorDeclarations().map((d) => d.name)).toEqual(CONNECTOR_NAMES);
  });

  it('lists the platforms of app.platforms and of the contract', async () => {
    const { rows } = await server.owner.query<{ code: string }>('select code from app.platforms order by code');
    expect(rows.map((r) => r.code)).toEqual(sorted(PLATFORM_CODES));
    expect(sorted(schemas().IntegrationPlatform.enum)).toEqual(sorted(PLATFORM_CODES));
  });

  it('matches every connector enum of the contract', () => {
    const enums = connectorEnums();
    expect(enums.length).toBeGreaterThanOrEqual(6);
    expect(sorted(schemas().ConnectorName.enum)).toEqual(sorted(CONNECTOR_NAMES));
    for (const e of enums) expect(sorted(e.values), e.where).toEqual(sorted(CONNECTOR_NAMES));
    // POST integrations creates those that need no sign-in; its description names them.
    for (const n of noSignIn()) expect(schemas().CreateIntegrationDto.description).toContain(`{"connector": "${n}"`);
    expect(enums.map((e) => e.where)).toEqual(expect.arrayContaining(['Integration.connector', 'IntegrationDetail.connector', 'CreateIntegrationDto.connector']));
  });

  it('is what api.create_integration takes: connectors without sign-in only, the others pointed to their flow', async () => {
    // As a request runs it: a manager's context, then the api function.
    const c = server.owner;
    await c.query('begin');
    try {
      const org = (await c.query(`insert into app.organizations (name, plan) values ('R', 'basic') returning id`)).rows[0].id;
      const user = (await c.query(`insert into app.users (organization_id, email, password_hash, org_role) values ($1, 'r@example.test', 'x', 'owner') returning id`, [org])).rows[0].id;
      const ws = (await c.query(`insert into app.workspaces (organization_id, name) values ($1, 'W') returning id`, [org])).rows[0].id;
      await c.query(`insert into app.workspace_members (workspace_id, user_id, organization_id, role) values ($1, $2, $3, 'manager')`, [ws, user, org]);
      const outcome = async (connector: string) => {
        await c.query('savepoint s');
        try {
          await c.query(
            `select set_config('pressroom.actor_kind', 'user', true), set_config('pressroom.user_id', $1, true), set_config('pressroom.organization_id', $2, true),
                    set_config('pressroom.workspace_id', $3, true), set_config('pressroom.workspace_role', 'manager', true)`,
            [user, org, ws],
          );
          await c.query('set local role pressroom_request');
          await c.query(`select api.create_integration($1, $2, 'N', null, null, $3, $4, $5)`, [
            connector,
            CONNECTOR_MODULES[connector as keyof typeof CONNECTOR_MODULES]?.platforms[0] ?? 'x',
            connector === 'webhook' ? 'https://hooks.example.com/p' : null,
            connector === 'webhook' ? 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' : null,
            // the route's sealed form (server/platforms/webhook-secret.ts); its content is not read here
            connector === 'webhook' ? `prv1:${Buffer.from('sealed by the route').toString('base64')}` : null,
          ]);
          return 'ok';
        } catch (e) {
          return (e as { detail?: string }).detail ?? String(e);
        } finally {
          await c.query('rollback to savepoint s');
        }
      };
      for (const name of CONNECTOR_NAMES) {
        expect(await outcome(name), name).toBe(CONNECTOR_MODULES[name].connect === 'none' ? 'ok' : 'CONNECT_FLOW_REQUIRED');
      }
      expect(await outcome('myspace')).toBe('UNKNOWN_CONNECTOR');
    } finally {
      await c.query('rollback');
    }
  });

  it("names configuration variables the server knows: each module's app variables and API base override", () => {
    const keys = Object.keys(ConfigSchema.shape);
    for (const name of CONNECTOR_NAMES) {
      const m = CONNECTOR_MODULES[name];
      if (m.connect === 'oauth' && m.oauth?.needsOperatorApp) {
        expect(m.appEnv, `${name} names its operator app variables`).toBeTruthy();
        expect(keys).toEqual(expect.arrayContaining([m.appEnv!.clientId, m.appEnv!.clientSecret]));
      }
    }
    for (const env of Object.values(CONNECTOR_BASE_URL_ENV)) expect(keys).toContain(env);
  });
});
