// Crash test of the publishing engine against real platform connectors
// (tests/api/publish-crash.test.ts does the same for the sandbox and webhook
// connectors): accounts connected through the API, editions due at once, the
// publish worker in a child process SIGKILLed mid-publish and started again.
//
//   - Mastodon (tests/support/fakes/mastodon.ts, answers after 80 ms): three
//     accounts connected with OAuth, 60 text editions. Once a third are sent,
//     the fake makes the next two statuses and never answers them (a worker
//     dying after the platform committed), and the worker is killed. After the
//     restart those two are re-sent with the same Idempotency-Key and Mastodon
//     answers the status it made: every edition sent, one status each.
//   - Bluesky (the reference PDS, tests/support/pds.ts): three accounts
//     connected with app passwords, 30 text editions, the worker killed once a
//     third are sent while attempts are in flight. A re-sent edition finds its
//     record under the key derived from its token: every edition sent, one
//     record each (com.atproto.repo.listRecords).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeMastodon, type FakeAccount, type FakeMastodon } from '../support/fakes/mastodon.ts';
import { client, signup } from '../support/http.ts';
import { startPds, type PdsAccount, type TestPds } from '../support/pds.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const NODE = path.join(ROOT, 'node_modules/.bin/node');
const KEYS = `1:${randomBytes(32).toString('base64')}`;
const ACCOUNTS = 3;
const MASTODON_ROOTS = 20; // x 3 accounts = 60 editions
const BLUESKY_ROOTS = 10; // x 3 accounts = 30 editions

let server: TestServer;
let api: ReturnType<typeof client>;
let mastodon: FakeMastodon;
let pds: TestPds;
let tmp = '';
const children: ChildProcess[] = [];

// The worker as `npm start` runs it, with the test server's credential keys (CREDENTIALS_KEYS in its environment).
const CHILD = (r: string) => `
import { PgBoss } from ${JSON.stringify(pathToFileURL(path.join(r, 'node_modules/pg-boss/dist/index.js')).href)};
import { loadConfig } from ${JSON.stringify(pathToFileURL(path.join(r, 'server/config.ts')).href)};
import { openPool } from ${JSON.stringify(pathToFileURL(path.join(r, 'server/db/pool.ts')).href)};
import { createLogger } from ${JSON.stringify(pathToFileURL(path.join(r, 'server/log.ts')).href)};
import { registerPublishJobs } from ${JSON.stringify(pathToFileURL(path.join(r, 'server/jobs/publish.ts')).href)};
import { createAppDeps } from ${JSON.stringify(pathToFileURL(path.join(r, 'server/deps.ts')).href)};
const [ownerUrl, appUrl] = process.argv.slice(2);
const config = loadConfig({ LOG_LEVEL: 'silent' }, { CREDENTIALS_KEYS: process.env.CREDENTIALS_KEYS, WEBHOOK_ALLOW_PRIVATE_NETWORKS: true, JOB_HEARTBEAT_SECONDS: 10, PUBLISH_CONCURRENCY: 16, PUBLISH_BATCH_SIZE: 40, PUBLISH_TIMEOUT_MS: 5000 });
const pool = await openPool(appUrl, 10);
const boss = new PgBoss({ connectionString: ownerUrl, schema: 'pgboss', max: 4, superviseIntervalSeconds: 2 });
boss.on('error', () => {});
await boss.start();
await registerPublishJobs(boss, createAppDeps({ pool, config, log: createLogger('silent') }), { pollingIntervalSeconds: 0.5 });
process.stdout.write('ready\\n');
`;

function startChild(): Promise<ChildProcess> {
  const script = path.join(tmp, 'worker.mjs');
  writeFileSync(script, CHILD(ROOT));
  const child = spawn(NODE, [script, server.db.ownerUrl, server.db.appUrl], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CREDENTIALS_KEYS: KEYS } });
  children.push(child);
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).includes('ready') && resolve(child));
    child.on('exit', (code) => reject(new Error(`worker exited early (${code}): ${err}`)));
  });
}

async function kill(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
}

beforeAll(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), 'publish-crash-platforms-'));
  // A Mastodon instance that answers after 80 ms, with room for the whole run in its request window.
  mastodon = await startFakeMastodon({ latencyMs: 80, requestLimit: 10_000 });
  pds = await startPds({ appViewUrl: null });
  server = await startTestServer('publish_crash_platforms', { WEBHOOK_ALLOW_PRIVATE_NETWORKS: true, CREDENTIALS_KEYS: KEYS, PUBLISH_TIMEOUT_MS: 5000 });
  api = client(server);
}, 120_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await server?.close();
  await mastodon?.close();
  await pds?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const q = async (text: string, params: unknown[] = []) => (await server.owner.query(text, params)).rows;

/** Schedules `roots` roots on every integration, all due at `at` (20 s from now: the worker is started first). */
async function scheduleAll(o: Awaited<ReturnType<typeof signup>>, integrationIds: string[], roots: number, label: string): Promise<Date> {
  const at = new Date(Date.now() + 20_000);
  at.setMilliseconds(0);
  for (let i = 0; i < roots; i += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, roots - i) }, (_, k) =>
        api
          .post(
            `/v1/workspaces/${o.workspaceId}/content`,
            { intent: 'schedule', scheduledAt: at.toISOString(), caption: `${label} crash test ${i + k}`, channels: integrationIds.map((integrationId) => ({ integrationId })) },
            { token: o.token },
          )
          .then((r) => expect(r.status, JSON.stringify(r.body)).toBe(201)),
      ),
    );
  }
  expect(Date.now()).toBeLessThan(at.getTime());
  return at;
}

const progressQuery = `select (select count(*)::int from app.content_items where workspace_id = $1 and status = 'sent') as sent,
  (select count(*)::int from app.publish_attempts where workspace_id = $1 and finished_at is null) as open`;

/** Waits (after the kill and restart) until no edition of the workspace is left unsent; the dead worker's jobs come back through the heartbeat. */
async function settle(workspaceId: string, killedAt: number): Promise<number> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const [{ n }] = await q(`select count(*)::int n from app.content_items where workspace_id = $1 and status <> 'sent'`, [workspaceId]);
    if (n === 0) return Date.now() - killedAt;
    if (Date.now() > deadline) {
      const stuck = await q(
        `select i.status, s.state, (select string_agg(coalesce(a.outcome, 'open') || ':' || coalesce(a.error, ''), ' | ') from app.publish_attempts a where a.content_item_id = i.id) as outcomes
         from app.content_items i left join app.publishing_states s on s.content_item_id = i.id where i.workspace_id = $1 and i.status <> 'sent' limit 5`,
        [workspaceId],
      );
      throw new Error(`${n} editions left unsent 120 s after the kill; for example ${JSON.stringify(stuck)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Each edition with its integration, caption, state, outcome and the idempotency token its attempts share. */
const editionsOf = (workspaceId: string) =>
  q(
    `select i.id, i.integration_id, i.status, i.platform_post_id, coalesce(i.caption, r.caption) as caption,
            (select array_agg(distinct a.idempotency_token) from app.publish_attempts a where a.content_item_id = i.id) as tokens,
            (select count(*)::int from app.publish_attempts a where a.content_item_id = i.id) as attempts,
            (select coalesce(sum(a.resent), 0)::int from app.publish_attempts a where a.content_item_id = i.id) as resent,
            extract(epoch from i.sent_at) * 1000 as sent_ms
     from app.content_items i join app.content_roots r on r.id = i.root_id where i.workspace_id = $1`,
    [workspaceId],
  );

it('Mastodon: SIGKILL after the instance made two statuses it never answered, restart: every edition posted exactly once', async () => {
  const o = await signup(api);
  // Three accounts on the instance, each connected through the OAuth flow (the consent simulated by following the redirect).
  const accounts: FakeAccount[] = [];
  const integrations: string[] = [];
  for (let k = 0; k < ACCOUNTS; k++) {
    const acc = mastodon.createAccount({ username: `crash${k}`, displayName: `Crash ${k}` });
    mastodon.signedIn = acc.id;
    const start = await api.post(`/v1/workspaces/${o.workspaceId}/integrations/connect`, { platform: 'mastodon', instanceUrl: mastodon.url }, { token: o.token });
    expect(start.status, JSON.stringify(start.body)).toBe(201);
    const toCallback = (await fetch(start.body.data.authorizeUrl, { redirect: 'manual' })).headers.get('location')!;
    const back = new URL((await fetch(toCallback, { redirect: 'manual' })).headers.get('location')!);
    const id = back.searchParams.get('integration');
    expect(id, back.toString()).toBeTruthy();
    accounts.push(acc);
    integrations.push(id!);
  }
  const total = MASTODON_ROOTS * ACCOUNTS;
  // The queue's heartbeat (10 s) applies to jobs created after the worker set it.
  let worker = await startChild();
  const at = await scheduleAll(o, integrations, MASTODON_ROOTS, 'Mastodon');
  expect((await editionsOf(o.workspaceId)).length).toBe(total);

  // Once a third are sent, the next two statuses are made and never answered; the worker dies with them in flight.
  const statusCalls = () => mastodon.callsTo('POST', '/api/v1/statuses');
  let before = 0;
  const until = at.getTime() + 60_000;
  for (;;) {
    const [p] = await q(progressQuery, [o.workspaceId]);
    if (p.sent >= total / 3) break;
    if (Date.now() > until) throw new Error(`the worker did not publish: ${JSON.stringify(p)}`);
    await new Promise((r) => setTimeout(r, 5));
  }
  before = statusCalls().length;
  mastodon.inject({ method: 'POST', path: '/api/v1/statuses', kind: 'hang-after-commit', times: 2 });
  while (statusCalls().slice(before, before + 2).filter((c) => c.status === 200).length < 2) {
    if (Date.now() > until) throw new Error('the instance was not sent two more statuses');
    await new Promise((r) => setTimeout(r, 5));
  }
  await kill(worker);
  const killedAt = Date.now();
  const hung = statusCalls().slice(before, before + 2).map((c) => String(c.headers['idempotency-key']));
  const [atKill] = await q(progressQuery, [o.workspaceId]);
  const madeAtKill = accounts.reduce((t, a) => t + mastodon.statusesOf(a.id).length, 0);
  // The two statuses exist on the instance, and their editions are not recorded as sent: their attempts are open.
  const hungStatuses = [...mastodon.statuses.values()].filter((s) => hung.includes(s.idempotencyKey ?? ''));
  expect(hungStatuses).toHaveLength(2);
  const hungEditions = (await editionsOf(o.workspaceId)).filter((e) => e.tokens?.some((t: string) => hung.includes(t)));
  expect(hungEditions).toHaveLength(2);
  expect(hungEditions.every((e) => e.status === 'scheduled')).toBe(true);
  expect(atKill.open).toBeGreaterThanOrEqual(2);
  expect(atKill.sent).toBeLessThan(total);

  worker = await startChild();
  const recoveredMs = await settle(o.workspaceId, killedAt);
  await kill(worker);

  // None lost: every edition sent. None twice: one status per edition on its account, made under
  // the edition's token, with its caption; the two left unanswered were answered on the re-send
  // with the status already made.
  const editions = await editionsOf(o.workspaceId);
  expect(editions.filter((e) => e.status !== 'sent')).toEqual([]);
  for (const [k, acc] of accounts.entries()) {
    const made = mastodon.statusesOf(acc.id);
    const mine = editions.filter((e) => e.integration_id === integrations[k]);
    expect(made).toHaveLength(MASTODON_ROOTS);
    expect(new Set(made.map((s) => s.text)).size).toBe(MASTODON_ROOTS);
    expect(new Set(made.map((s) => s.idempotencyKey)).size).toBe(MASTODON_ROOTS);
    expect(made.map((s) => s.id).sort()).toEqual(mine.map((e) => e.platform_post_id).sort());
    for (const e of mine) {
      const s = mastodon.statuses.get(e.platform_post_id)!;
      expect(e.tokens).toEqual([s.idempotencyKey]);
      expect(s.text).toBe(e.caption);
    }
  }
  for (const e of hungEditions) {
    const [after] = editions.filter((x) => x.id === e.id);
    expect(hungStatuses.map((s) => s.id)).toContain(after.platform_post_id);
    // Sent again after the restart (the same key), not made again.
    expect(after.resent).toBeGreaterThanOrEqual(1);
    expect(statusCalls().filter((c) => c.headers['idempotency-key'] === e.tokens[0]).length).toBeGreaterThanOrEqual(2);
  }
  // When the dead worker's jobs of the two came back (pg-boss heartbeat), for the log.
  const jobs = await q(
    `select j.state, j.retry_count, round(extract(epoch from j.started_on) * 1000 - $2)::int as started_ms
     from app.content_items i join pgboss.job j on j.id = i.publish_job_id where i.id = any($1::uuid[])`,
    [hungEditions.map((e) => e.id), killedAt],
  );
  const resent = editions.filter((e) => e.resent > 0).length;
  const afterKill = (ids: string[]) => Math.round(Math.max(...editions.filter((e) => ids.includes(e.id)).map((e) => Number(e.sent_ms))) - killedAt);
  console.log(
    `[publish-crash-platforms] Mastodon: ${total} editions on ${ACCOUNTS} accounts; at SIGKILL ${atKill.sent} sent, ${atKill.open} attempts in flight, ` +
      `${madeAtKill} statuses on the instance (2 made and never answered); after restart (${recoveredMs} ms to settle): ${total}/${total} sent, ` +
      `${accounts.reduce((t, a) => t + mastodon.statusesOf(a.id).length, 0)} statuses, ${resent} edition(s) re-sent with their token (the two unanswered sent ${afterKill(hungEditions.map((e) => e.id))} ms after the kill, ` +
      `the last edition ${afterKill(editions.map((e) => e.id))} ms; their jobs ${JSON.stringify(jobs)}), ${statusCalls().length} POST /api/v1/statuses calls; none posted twice, none lost.`,
  );
}, 240_000);

it('Bluesky on the reference PDS: SIGKILL mid-publish, restart: every edition posted exactly once', async () => {
  const o = await signup(api);
  const accounts: PdsAccount[] = [];
  const integrations: string[] = [];
  for (let k = 0; k < ACCOUNTS; k++) {
    const acc = await pds.createAccount(`cr${k}${randomBytes(3).toString('hex')}`);
    const r = await api.post(
      `/v1/workspaces/${o.workspaceId}/integrations/connect-password`,
      { platform: 'bluesky', serviceUrl: pds.url, identifier: acc.handle, appPassword: acc.appPassword },
      { token: o.token },
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    accounts.push(acc);
    integrations.push(r.body.data.id);
  }
  const total = BLUESKY_ROOTS * ACCOUNTS;
  let worker = await startChild();
  const at = await scheduleAll(o, integrations, BLUESKY_ROOTS, 'Bluesky');
  expect((await editionsOf(o.workspaceId)).length).toBe(total);

  const records = async (did: string): Promise<{ uri: string; value: { text: string } }[]> => {
    const r = await pds.xrpc('GET', 'com.atproto.repo.listRecords', { params: { repo: did, collection: 'app.bsky.feed.post', limit: '100' } });
    expect(r.status).toBe(200);
    return r.json.records;
  };
  // The poll and the kill race the worker's own progress (a record on the local PDS takes a few ms): a kill that finds
  // every attempt finished restarts the worker and waits for the next open attempt, a few times at most.
  const until = at.getTime() + 60_000;
  let atKill: { sent: number; open: number } | undefined;
  let killedAt = 0;
  let kills = 0;
  while (!atKill) {
    for (;;) {
      const [p] = await q(progressQuery, [o.workspaceId]);
      if (p.sent >= total / 3 && p.open >= 1) break;
      if (p.sent >= total) throw new Error(`every edition was sent before the worker could be killed mid-publish (${kills} kills found none open)`);
      if (Date.now() > until) throw new Error(`the worker did not publish: ${JSON.stringify(p)}`);
      await new Promise((r) => setTimeout(r, 2));
    }
    await kill(worker);
    kills++;
    killedAt = Date.now();
    const [p] = await q(progressQuery, [o.workspaceId]);
    if (p.open >= 1) atKill = p;
    else if (kills >= 5) throw new Error(`five kills found no attempt in flight: ${JSON.stringify(p)}`);
    else worker = await startChild();
  }
  expect(atKill.sent).toBeLessThan(total);
  const openAtKill = (await q(`select content_item_id from app.publish_attempts where workspace_id = $1 and finished_at is null`, [o.workspaceId])).map((r) => r.content_item_id);
  // Posts the PDS made whose attempt was not recorded when the worker died.
  await new Promise((r) => setTimeout(r, 500));
  let madeAtKill = 0;
  for (const a of accounts) madeAtKill += (await records(a.did)).length;

  worker = await startChild();
  const recoveredMs = await settle(o.workspaceId, killedAt);
  await kill(worker);

  const editions = await editionsOf(o.workspaceId);
  expect(editions.filter((e) => e.status !== 'sent')).toEqual([]);
  let posts = 0;
  for (const [k, acc] of accounts.entries()) {
    const made = await records(acc.did);
    const mine = editions.filter((e) => e.integration_id === integrations[k]);
    posts += made.length;
    expect(made).toHaveLength(BLUESKY_ROOTS);
    expect(new Set(made.map((r) => r.value.text)).size).toBe(BLUESKY_ROOTS);
    expect(made.map((r) => r.uri).sort()).toEqual(mine.map((e) => e.platform_post_id).sort());
    for (const e of mine) expect(made.find((r) => r.uri === e.platform_post_id)!.value.text).toBe(e.caption);
  }
  // The editions whose attempt was in flight at the kill were re-sent with their token after the restart.
  for (const id of openAtKill) expect(editions.find((e) => e.id === id)!.resent).toBeGreaterThanOrEqual(1);
  const resent = editions.filter((e) => e.resent > 0).length;
  console.log(
    `[publish-crash-platforms] Bluesky: ${total} editions on ${ACCOUNTS} PDS accounts; ${kills} kill(s); at the last SIGKILL ${atKill.sent} sent, ${atKill.open} attempts in flight, ` +
      `${madeAtKill} records on the PDS (${madeAtKill - atKill.sent} made but not recorded); after restart (${recoveredMs} ms to settle): ${total}/${total} sent, ` +
      `${posts} records, ${resent} edition(s) re-sent with their token; none posted twice, none lost.`,
  );
}, 240_000);
