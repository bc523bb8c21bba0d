// docker-compose.yml without a Docker engine: the file, with Compose's
// `${...}` interpolation done from the values of .env.example, must be valid
// against the Compose Specification's JSON schema (tests/fixtures/compose-spec.json,
// see tests/fixtures/README.md); the required secrets must stop Compose when
// unset; and the api and worker containers must receive every server setting
// (server/config.ts), as values the server accepts.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigSchema, loadConfig } from '../../server/config.ts';

const draft07 = createRequire(import.meta.url)('ajv/dist/refs/json-schema-draft-07.json');
const ROOT = new URL('../../', import.meta.url);
const read = (file: string) => readFileSync(new URL(file, ROOT), 'utf8');

type Env = Record<string, string | undefined>;

/** .env.example: `NAME=value` lines are set; `# NAME=value` lines are documented but unset. */
function readEnvExample(text: string): { set: Env; documented: Set<string> } {
  const set: Env = {};
  const documented = new Set<string>();
  for (const line of text.split('\n')) {
    const active = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (active) {
      if (active[1] in set) throw new Error(`.env.example sets ${active[1]} twice`);
      // Compose's .env syntax: an unquoted value, or one in single or double quotes.
      set[active[1]] = active[2].replace(/^(['"])(.*)\1$/, '$2');
      documented.add(active[1]);
      continue;
    }
    const commented = /^#\s*([A-Z][A-Z0-9_]*)=/.exec(line);
    if (commented) documented.add(commented[1]);
  }
  return { set, documented };
}

/**
 * Compose's interpolation of one string (the Compose Specification,
 * "Interpolation"): $$ is a literal $; ${VAR} and $VAR; ${VAR:-default} /
 * ${VAR-default} when unset or empty / unset; ${VAR:?error} / ${VAR?error}
 * stop with the error; ${VAR:+alt} / ${VAR+alt}. Anything else throws, so a
 * form this function does not know cannot pass unnoticed.
 */
function interpolate(value: string, env: Env, where: string, used: Set<string>): string {
  return value.replace(/\$(?:(\$)|\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*))|\$/g, (whole, dollar, braced, bare) => {
    if (dollar) return '$';
    if (bare) {
      used.add(bare);
      return env[bare] ?? '';
    }
    if (braced === undefined) throw new Error(`${where}: a lone $ in ${JSON.stringify(value)} (write $$ for a literal $)`);
    const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?+])(.*))?$/s.exec(braced);
    if (!m) throw new Error(`${where}: cannot interpolate ${whole}`);
    const [, name, colon, op, arg = ''] = m;
    if (arg.includes('$')) throw new Error(`${where}: nested interpolation in ${whole} is not handled here`);
    used.add(name);
    const v = env[name];
    const missing = colon ? v === undefined || v === '' : v === undefined;
    if (op === '-') return missing ? arg : v!;
    if (op === '?') {
      if (missing) throw new Error(`${where}: required variable ${name} is missing a value: ${arg}`);
      return v!;
    }
    if (op === '+') return missing ? '' : arg;
    return v ?? '';
  });
}

/** Interpolates every string value (not keys), as Compose does. */
function interpolateTree(node: unknown, env: Env, used: Set<string>, where = ''): unknown {
  if (typeof node === 'string') return interpolate(node, env, where || '(root)', used);
  if (Array.isArray(node)) return node.map((v, i) => interpolateTree(v, env, used, `${where}[${i}]`));
  if (node && typeof node === 'object') {
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, interpolateTree(v, env, used, where ? `${where}.${k}` : k)]));
  }
  return node;
}

/** docker-compose.yml as Compose sees it: YAML with merge keys (<<), then interpolated. */
function loadCompose(text: string, env: Env): { model: any; used: Set<string> } {
  const used = new Set<string>();
  const model = interpolateTree(parse(text, { merge: true }), env, used);
  return { model, used };
}

/** ENV of the Dockerfile's last stage: what the image gives every container. */
function imageEnv(dockerfile: string): Env {
  const stages = dockerfile.replace(/\\\n/g, ' ').split(/^FROM\s/m);
  const env: Env = {};
  for (const line of stages[stages.length - 1].split('\n')) {
    const m = /^ENV\s+(.*)$/.exec(line.trim());
    if (!m) continue;
    for (const pair of m[1].trim().split(/\s+/)) {
      const eq = pair.indexOf('=');
      if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return env;
}

/** A container's environment: the image's ENV, then the service's; a key with no value is unset. */
function containerEnv(service: any, base: Env): Env {
  const env: Env = { ...base };
  for (const [k, v] of Object.entries<unknown>(service.environment ?? {})) {
    if (v === null || v === undefined) delete env[k];
    else env[k] = String(v);
  }
  return env;
}

function explain(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`).join('\n');
}

// Settings the compose file fixes itself (or deliberately leaves to the image):
// every other key of server/config.ts must reach the api and worker containers.
const FIXED_BY_COMPOSE: Record<string, string> = {
  PORT: 'the image listens on 3000; PRESSROOM_PORT picks the host port',
  HOST: 'the image sets 0.0.0.0',
  DATA_DIR: 'the image sets /data, the media volume',
  DATABASE_URL: 'built from POSTGRES_PASSWORD',
  APP_DATABASE_URL: 'built from APP_DB_PASSWORD',
  EMBEDDED_PG_PORT: 'no embedded PostgreSQL: DATABASE_URL is always set',
  RUN_API: 'worker: false',
  RUN_WORKER: 'api: false',
  SHUTDOWN_TIMEOUT_MS: 'must stay below stop_grace_period (35 s), so left at 25 s',
};

// Values for the required secrets, which .env.example leaves empty on purpose.
const REQUIRED = {
  POSTGRES_PASSWORD: 'test-owner-password',
  APP_DB_PASSWORD: 'test-app-password',
  PUBLIC_BASE_URL: 'https://pressroom.example.com',
};

describe('docker-compose.yml', () => {
  const composeText = read('docker-compose.yml');
  const example = readEnvExample(read('.env.example'));
  const env: Env = { ...example.set, ...REQUIRED };
  let validate: ValidateFunction;

  beforeAll(() => {
    const schema = JSON.parse(read('tests/fixtures/compose-spec.json'));
    // The schema names draft-07 as https://json-schema.org/draft-07/schema;
    // ajv knows that meta-schema under its older URI, so it is registered under
    // this one too, and the schema itself is checked against it. strictTypes is
    // off: the schema leaves `type` out beside some keywords, which JSON Schema
    // allows and ajv's strict mode only warns about by default.
    const ajv = new Ajv({ allErrors: true, strictTypes: false });
    ajv.addMetaSchema(draft07, 'https://json-schema.org/draft-07/schema');
    validate = ajv.compile(schema);
  });

  it('is valid against the Compose Specification schema once interpolated with .env.example', () => {
    const { model } = loadCompose(composeText, env);
    const ok = validate(model);
    expect(explain(validate.errors)).toBe('');
    expect(ok).toBe(true);
    expect(Object.keys(model.services).sort()).toEqual(['api', 'migrate', 'postgres', 'worker']);
  });

  it('refuses an unknown key, a misspelt one and a value of the wrong type (the check can fail)', () => {
    const { model } = loadCompose(composeText, env);
    const bad = [
      (m: any) => { m.services.api.enviroment = m.services.api.environment; },
      (m: any) => { m.servics = m.services; },
      (m: any) => { m.services.worker.depends_on.migrate.condition = 'service_finished'; },
      (m: any) => { m.services.api.ports = '3000:3000'; },
      (m: any) => { m.services.worker.environment.PUBLIC_BASE_URL = { url: 'https://x.example' }; },
    ];
    for (const inject of bad) {
      const copy = structuredClone(model);
      inject(copy);
      expect(validate(copy), inject.toString()).toBe(false);
    }
    // The same injection through the YAML text, to show the text is what is checked.
    const typo = composeText.replace(/^(\s+)stop_grace_period:/m, '$1stop_grace_periode:');
    expect(typo).not.toBe(composeText);
    expect(validate(loadCompose(typo, env).model)).toBe(false);
  });

  it('stops with a message when a required secret or PUBLIC_BASE_URL is unset or empty', () => {
    for (const name of Object.keys(REQUIRED)) {
      expect(example.set[name], `.env.example leaves ${name} for the operator to set`).toBe('');
      expect(() => loadCompose(composeText, { ...env, [name]: undefined })).toThrow(new RegExp(`required variable ${name} `));
      expect(() => loadCompose(composeText, { ...env, [name]: '' })).toThrow(new RegExp(`required variable ${name} `));
    }
    // .env.example copied as it is must not start.
    expect(() => loadCompose(composeText, example.set)).toThrow(/required variable/);
  });

  it('reads only variables .env.example lists, and .env.example lists none it does not read', () => {
    const { model, used } = loadCompose(composeText, env);
    // Keys with no value are passed on from the shell or .env (Compose
    // Specification, "environment"): they are read too.
    for (const service of Object.values<any>(model.services)) {
      for (const [k, v] of Object.entries(service.environment ?? {})) if (v === null) used.add(k);
    }
    expect([...used].filter((v) => !example.documented.has(v)).sort(), 'read by docker-compose.yml, missing from .env.example').toEqual([]);
    expect([...example.documented].filter((v) => !used.has(v)).sort(), 'in .env.example, never read by docker-compose.yml').toEqual([]);
  });

  it('gives api and worker every server setting, and they load as a valid configuration', () => {
    const base = imageEnv(read('Dockerfile'));
    expect(base.HOST).toBe('0.0.0.0');
    const { model } = loadCompose(composeText, env);
    for (const name of ['api', 'worker']) {
      const service = model.services[name];
      const declared = new Set(Object.keys(service.environment ?? {}));
      const missing = Object.keys(ConfigSchema.shape).filter((k) => !declared.has(k) && !(k in FIXED_BY_COMPOSE));
      expect(missing, `settings of server/config.ts that docker-compose.yml does not pass to ${name}`).toEqual([]);

      const config = loadConfig(containerEnv(service, base) as NodeJS.ProcessEnv);
      expect(config.PUBLIC_BASE_URL).toBe(REQUIRED.PUBLIC_BASE_URL);
      expect(config.HOST).toBe('0.0.0.0');
      expect(config.DATABASE_URL).toBe(`postgres://pressroom:${REQUIRED.POSTGRES_PASSWORD}@postgres:5432/pressroom`);
      expect(config.APP_DATABASE_URL).toBe(`postgres://pressroom_app:${REQUIRED.APP_DB_PASSWORD}@postgres:5432/pressroom`);
      expect(config.STORAGE_DRIVER).toBe('disk');
    }
    expect(loadConfig(containerEnv(model.services.api, base) as NodeJS.ProcessEnv).RUN_WORKER).toBe(false);
    expect(loadConfig(containerEnv(model.services.worker, base) as NodeJS.ProcessEnv).RUN_API).toBe(false);
  });

  it('passes the S3 settings from .env through to api and worker', () => {
    const s3: Env = {
      ...env,
      STORAGE_DRIVER: 's3',
      S3_ENDPOINT: 'https://s3.example.com',
      S3_REGION: 'eu-west-3',
      S3_BUCKET: 'media',
      S3_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      S3_SECRET_ACCESS_KEY: 'secret-example',
      S3_FORCE_PATH_STYLE: 'false',
      SIGNED_URL_SECRET: 'a-signing-secret-of-32-characters',
    };
    const base = imageEnv(read('Dockerfile'));
    const { model } = loadCompose(composeText, s3);
    for (const name of ['api', 'worker']) {
      // What Compose hands a key with no value: the shell's or .env's value.
      const service = structuredClone(model.services[name]);
      for (const [k, v] of Object.entries(service.environment)) if (v === null && s3[k] !== undefined) service.environment[k] = s3[k];
      const config = loadConfig(containerEnv(service, base) as NodeJS.ProcessEnv);
      expect({
        driver: config.STORAGE_DRIVER, endpoint: config.S3_ENDPOINT, region: config.S3_REGION, bucket: config.S3_BUCKET,
        key: config.S3_ACCESS_KEY_ID, secret: config.S3_SECRET_ACCESS_KEY, pathStyle: config.S3_FORCE_PATH_STYLE,
        signing: config.SIGNED_URL_SECRET,
      }).toEqual({
        driver: 's3', endpoint: 'https://s3.example.com', region: 'eu-west-3', bucket: 'media',
        key: 'AKIDEXAMPLE', secret: 'secret-example', pathStyle: false, signing: 'a-signing-secret-of-32-characters',
      });
    }
  });
});
