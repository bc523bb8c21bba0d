// Scenario "policies": the row-level security policies as they are (no
// subqueries, so Citus can distribute the tables: docs/citus.md) against the
// same policies written the old way, each context helper wrapped in a scalar
// subquery that PostgreSQL evaluates once per query, side by side in one run.
//
// Two clones of the template with the same fixture, each with its own API
// server (bench/lib/variants.ts). On the "wrapped" clone every policy is
// rewritten back:
//
//   app.current_x()                                  -> (SELECT app.current_x())
//   workspace_id = app.current_accessible_workspace_id()
//     -> workspace_id = (SELECT app.current_workspace_id()) AND (SELECT app.current_workspace_accessible())
//
// The two servers are driven alternately in slices over the same routes. ratio plain/wrapped: 1.00 = the policies
// without subqueries cost nothing.
import type pg from 'pg';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { runVariants } from '../lib/variants.ts';

/** Rewrites every policy of the clone back to the wrapped form (what the policies were before 000036). */
const WRAP_SQL = `
do $$
declare
  p record;
  v_using text;
  v_check text;
  v_sql text;
begin
  for p in
    select n.nspname, c.relname, pol.polname, pg_get_expr(pol.polqual, pol.polrelid) as qual, pg_get_expr(pol.polwithcheck, pol.polrelid) as with_check
    from pg_policy pol join pg_class c on c.oid = pol.polrelid join pg_namespace n on n.oid = c.relnamespace
  loop
    v_using := replace(p.qual, 'app.current_accessible_workspace_id()', 'app.current_workspace_id()) AND (app.current_workspace_accessible()');
    v_check := replace(p.with_check, 'app.current_accessible_workspace_id()', 'app.current_workspace_id()) AND (app.current_workspace_accessible()');
    v_using := regexp_replace(v_using, 'app\\.(current_\\w+)\\(\\)', '(SELECT app.\\1())', 'g');
    v_check := regexp_replace(v_check, 'app\\.(current_\\w+)\\(\\)', '(SELECT app.\\1())', 'g');
    if v_using is distinct from p.qual or v_check is distinct from p.with_check then
      v_sql := format('alter policy %I on %I.%I', p.polname, p.nspname, p.relname);
      if v_using is not null then v_sql := v_sql || format(' using (%s)', v_using); end if;
      if v_check is not null then v_sql := v_sql || format(' with check (%s)', v_check); end if;
      execute v_sql;
    end if;
  end loop;
end
$$`;

const wrappedPolicies = async (owner: pg.Client) =>
  Number((await owner.query(`select count(*) from pg_policies where qual ~ 'SELECT app' or with_check ~ 'SELECT app'`)).rows[0].count);

export const policies: Scenario = {
  name: 'policies',
  description: 'row-level security without subqueries (as migrated) against the old wrapped form, content and media lists, reads and a create at 100,000 editions: ratio plain/wrapped',
  run: (ctx: ScenarioContext) =>
    runVariants(ctx, {
      scenario: 'policies',
      description: policies.description,
      variants: [
        {
          name: 'plain',
          verify: async (owner) => {
            const n = await wrappedPolicies(owner);
            if (n > 0) throw new Error(`policies: the plain clone has ${n} policies with subqueries`);
            return '0 policies with subqueries';
          },
        },
        {
          name: 'wrapped',
          rewrite: WRAP_SQL,
          verify: async (owner) => {
            const n = await wrappedPolicies(owner);
            if (n === 0) throw new Error('policies: the wrapped clone has no policy with a subquery');
            return `${n} policies with subqueries`;
          },
        },
      ],
      setup: { wrap: 'every app.current_*() wrapped in (SELECT ...); the accessible-workspace scope split back into its two terms' },
      notes: [
        'ratio plain/wrapped: req/s and latency with the policies as migrated (no subqueries) against the same policies with each helper in a scalar subquery (req/s 1.00 = no cost).',
      ],
    }),
};
