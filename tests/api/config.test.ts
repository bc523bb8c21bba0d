// server/config.ts: the configuration parsed from an environment object, as
// the server (server/main.ts) and the administrator's commands
// (server/cli/pressroom.ts) parse process.env. An empty variable (`VAR=`, as
// Compose's `${VAR:-}` and many .env files give) is unset: its default applies
// (README.md, "Configuration").
import { describe, expect, it } from 'vitest';
import { ConfigSchema, loadConfig } from '../../server/config.ts';

const NAMES = Object.keys(ConfigSchema.shape);

describe('loadConfig', () => {
  it('takes DATABASE_URL= as unset: the embedded PostgreSQL, not "Invalid URL"', () => {
    const config = loadConfig({ DATABASE_URL: '', APP_DATABASE_URL: '' });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.APP_DATABASE_URL).toBeUndefined();
    expect(loadConfig({ DATABASE_URL: 'postgres://u:p@db:5432/pressroom' }).DATABASE_URL).toBe('postgres://u:p@db:5432/pressroom');
  });

  it('gives every variable set to the empty string, or to blanks, its default', () => {
    const defaults = loadConfig({});
    expect(defaults.PORT).toBe(3000);
    for (const blank of ['', ' ', '\t \n']) {
      const env = Object.fromEntries(NAMES.map((n) => [n, blank]));
      expect(loadConfig(env), JSON.stringify(blank)).toEqual(defaults);
      // One at a time too, so no variable's empty value hides behind another's.
      for (const name of NAMES) expect(loadConfig({ [name]: blank }), `${name}=${JSON.stringify(blank)}`).toEqual(defaults);
    }
  });

  it('still refuses a value that is set and wrong, naming the variable', () => {
    expect(() => loadConfig({ DATABASE_URL: 'not a url' })).toThrow(/DATABASE_URL/);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN/);
    expect(() => loadConfig({ ALLOW_SIGNUP: 'maybe' })).toThrow(/ALLOW_SIGNUP/);
  });
});
