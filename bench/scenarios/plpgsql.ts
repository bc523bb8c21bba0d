// Scenario "plpgsql": the table-reading functions as migrated (PL/pgSQL, so
// Citus can plan them: db/migrations/committed/000045-sql-functions-as-plpgsql.sql)
// against the same functions as LANGUAGE sql again, side by side in one run
// (bench/lib/variants.ts: two clones of the 100,000-row workspace, two API
// servers, the content and media lists, one edition, a draft created).
//
// On the "sql" clone every function that 000045 rewrote in one of its two
// regular shapes goes back to SQL, its body the query it returns:
//
//   #variable_conflict use_column begin return query <q>; end   ->  <q>
//   #variable_conflict use_column begin return (<q>); end        ->  <q>
//
// (the few written by hand, a row type returned, a void statement or two
// queries returned, stay PL/pgSQL on both sides). ratio plpgsql/sql: req/s 1.00 = no cost.
import type pg from 'pg';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { runVariants } from '../lib/variants.ts';

const TO_SQL = `
do $$
declare
  f record;
  v_query text;
  v_def text;
begin
  for f in
    select p.oid, p.prosrc, pg_get_functiondef(p.oid) as def
    from pg_proc p join pg_language l on l.oid = p.prolang
    where l.lanname = 'plpgsql' and p.pronamespace in ('app'::regnamespace, 'api'::regnamespace)
      and p.prosrc ~ '^\\s*#variable_conflict use_column\\s'
  loop
    v_query := coalesce(
      substring(f.prosrc from '^\\s*#variable_conflict use_column\\s+begin\\s+return query\\s(.*);\\s*end\\s*$'),
      substring(f.prosrc from '^\\s*#variable_conflict use_column\\s+begin\\s+return \\((.*)\\);\\s*end\\s*$'));
    -- Only a body of one statement (app.user_workspace_roles returns two queries).
    continue when v_query is null or v_query ~* '\\mreturn\\s';
    v_def := replace(replace(f.def, f.prosrc, v_query), 'LANGUAGE plpgsql', 'LANGUAGE sql');
    execute v_def;
  end loop;
end
$$`;

const sqlCount = async (owner: pg.Client) =>
  Number((await owner.query(
    `select count(*) from pg_proc p join pg_language l on l.oid = p.prolang
      where p.pronamespace in ('app'::regnamespace, 'api'::regnamespace) and l.lanname = $1 and p.prosrc ~ '#variable_conflict use_column'`,
    ['plpgsql'],
  )).rows[0].count);

export const plpgsql: Scenario = {
  name: 'plpgsql',
  description: 'the table-reading functions as PL/pgSQL (as migrated, for Citus) against the same as LANGUAGE sql, content and media lists, reads and a create at 100,000 editions: ratio plpgsql/sql',
  run: (ctx: ScenarioContext) =>
    runVariants(ctx, {
      scenario: 'plpgsql',
      description: plpgsql.description,
      variants: [
        {
          name: 'plpgsql',
          verify: async (owner) => `${await sqlCount(owner)} functions rewritten by 000045 are PL/pgSQL`,
        },
        {
          name: 'sql',
          rewrite: TO_SQL,
          verify: async (owner) => {
            const left = await sqlCount(owner);
            if (left > 12) throw new Error(`plpgsql: the sql clone still has ${left} rewritten functions in PL/pgSQL`);
            return `${left} rewritten functions left in PL/pgSQL (written by hand)`;
          },
        },
      ],
      setup: { toSql: 'each function of 000045 in its two regular shapes back to LANGUAGE sql, its body the query it returns' },
      notes: ['ratio plpgsql/sql: req/s and latency with the functions as migrated (PL/pgSQL) against the same functions as LANGUAGE sql (req/s 1.00 = no cost).'],
    }),
};
