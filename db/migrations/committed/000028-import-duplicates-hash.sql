--! Previous: sha1:2f530be1188ec92d6e7e7d5d1651367291419e74
--! Hash: sha1:ba164383c9c836a4ee635aaecdb29277ccf5a809
--! Message: import duplicates hash

--! split: 10-import-duplicates-hash.sql
-- The CSV import's duplicate check does not depend on fresh statistics.
--
-- api.import_workbench_csv flags possible duplicates in one statement: each
-- line against the file's earlier lines and against the workspace's content.
-- Planned while app.content_items was still counted as nearly empty (a second
-- import right after a first one of 5,000 lines, before autovacuum analyzed
-- it), the statement joined by nested loops and compared every line with every
-- edition: the workbench bench's second import of 5,000 lines ran past the
-- route's 5-minute timeout (perf: heap tuple deforming and expression
-- evaluation, no statement of the loop finishing). That one statement now
-- runs with nested loops off, so it hash-joins whatever the statistics say;
-- the per-line statements keep their index look-ups. Answers are unchanged
-- (94-workbench).

create or replace function api.import_workbench_csv(p_page_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_page app.workbench_pages;
  v_tz text;
  v_dry boolean := coalesce((p_body ->> 'dryRun')::boolean, false);
  v_partial boolean := coalesce((p_body ->> 'allowPartial')::boolean, false);
  v_header jsonb := p_body -> 'header';
  v_cols text[] := '{}';
  v_ignored jsonb := '[]';
  v_col text;
  v_i int;
  v_line jsonb;
  v_fields jsonb;
  v_get jsonb;
  v_errors jsonb;
  v_warnings jsonb;
  v_body jsonb;
  t record;
  r record;
  v_section uuid;
  v_default_section uuid;
  v_new_sections jsonb := '[]';
  v_plan jsonb[] := '{}';
  v_warnings_by_line jsonb;
  v_results jsonb[] := '{}';
  v_keys jsonb := '{}';
  v_used jsonb := '{}';
  v_created uuid[] := '{}';
  v_row app.workbench_rows;
  v_ok int := 0;
  v_bad int := 0;
  v_dupes int := 0;
  v_p jsonb;
  v_k int;
  v_report jsonb;
  v_err jsonb;
  v_state text; v_msg text; v_detail text; v_hint text;
  v_nestloop text;
begin
  perform app.require_role('editor');
  perform app.workbench_lock(p_page_id);
  v_page := app.workbench_page_for_update(p_page_id);
  select timezone into v_tz from app.workspaces where id = v_page.workspace_id;
  if jsonb_array_length(p_body -> 'lines') > 10000 then
    perform app.raise(400, 'CSV_TOO_LARGE', 'A CSV import takes at most 10,000 lines; split the file.',
      jsonb_build_object('lines', jsonb_array_length(p_body -> 'lines'), 'max', 10000));
  end if;
  -- Columns by header.
  for v_i in 0 .. jsonb_array_length(v_header) - 1 loop
    v_col := app.workbench_csv_column(v_header ->> v_i);
    if v_col is null then
      v_ignored := v_ignored || to_jsonb(v_header ->> v_i);
      v_col := '-';
    elsif v_col <> '-' and v_col = any (v_cols) then
      perform app.raise(400, 'CSV_HEADER_INVALID', format('Two columns map to %s.', v_col),
        jsonb_build_object('column', v_col, 'header', v_header));
    end if;
    v_cols := v_cols || v_col;
  end loop;
  if not ('title' = any (v_cols) or 'caption' = any (v_cols)) then
    perform app.raise(400, 'CSV_HEADER_INVALID', 'The header needs a title or a caption column.',
      jsonb_build_object('header', v_header, 'columns', to_jsonb(app.workbench_csv_columns())));
  end if;

  begin
    -- Pass 1: each line to a row body, or its errors.
    for v_line in select e from jsonb_array_elements(p_body -> 'lines') e loop
      v_fields := v_line -> 'fields';
      v_errors := '[]';
      v_warnings := '[]';
      v_section := null;
      v_body := '{}';
      if jsonb_array_length(v_fields) <> cardinality(v_cols) then
        v_errors := jsonb_build_array(app.field_problem(null, 'column_count',
          format('%s fields where the header has %s columns', jsonb_array_length(v_fields), cardinality(v_cols))));
      else
        v_get := '{}';
        for v_i in 1 .. cardinality(v_cols) loop
          if v_cols[v_i] <> '-' then
            v_get := v_get || jsonb_build_object(v_cols[v_i], nullif(btrim(v_fields ->> (v_i - 1)), ''));
          end if;
        end loop;
        if v_get ->> 'title' is null and v_get ->> 'caption' is null then
          v_errors := v_errors || app.field_problem('title', 'required', 'a line needs a title or a caption');
        end if;
        v_body := jsonb_strip_nulls(jsonb_build_object('title', v_get ->> 'title', 'caption', v_get ->> 'caption', 'notes', v_get ->> 'notes'));
        if v_get ->> 'scheduledAt' is not null then
          select * into t from app.workbench_csv_parse_time(v_get ->> 'scheduledAt', v_tz);
          if not t.ok then
            v_errors := v_errors || app.field_problem('scheduled_at', 'invalid_date',
              'not a date (YYYY-MM-DD) or a date and time (YYYY-MM-DD HH:MM, in the workspace''s time zone or with an offset)');
          else
            v_body := v_body || jsonb_build_object('scheduledAt', coalesce(to_jsonb(t.planned_at), to_jsonb(t.planned_on::text)));
          end if;
        end if;
        if v_get ->> 'channels' is not null then
          select * into r from app.workbench_csv_resolve('channels', v_get ->> 'channels', 'channels');
          v_errors := v_errors || r.problems;
          v_body := v_body || jsonb_build_object('channels', to_jsonb(r.ids));
        end if;
        if v_get ->> 'tags' is not null then
          select * into r from app.workbench_csv_resolve('tags', v_get ->> 'tags', 'tags');
          v_errors := v_errors || r.problems;
          v_body := v_body || jsonb_build_object('tagIds', to_jsonb(r.ids));
        end if;
        foreach v_col in array array['pillar', 'format', 'campaign'] loop
          if v_get ->> v_col is not null then
            select * into r from app.workbench_csv_resolve(v_col, v_get ->> v_col, v_col);
            if cardinality(r.ids) > 1 then
              v_errors := v_errors || app.field_problem(v_col, 'too_many', format('one %s per line', v_col));
            end if;
            v_errors := v_errors || r.problems;
            v_body := v_body || jsonb_build_object(v_col || 'Id', r.ids[1]);
          end if;
        end loop;
        if v_get ->> 'mediaIds' is not null then
          select * into r from app.workbench_csv_resolve('media', v_get ->> 'mediaIds', 'media_ids');
          v_errors := v_errors || r.problems;
          v_body := v_body || jsonb_build_object('mediaIds', to_jsonb(r.ids));
        end if;
        -- The section, by name (made at the page's end when new), else the page's first.
        if v_get ->> 'section' is not null then
          select id into v_section from app.workbench_sections
          where page_id = v_page.id and lower(btrim(name)) = lower(v_get ->> 'section') order by position limit 1;
          if v_section is null and length(v_get ->> 'section') > 160 then
            v_errors := v_errors || app.field_problem('section', 'too_long', 'a section name has at most 160 characters');
          elsif v_section is null then
            insert into app.workbench_sections (organization_id, workspace_id, page_id, name, position)
            values (v_page.organization_id, v_page.workspace_id, v_page.id, v_get ->> 'section',
                    app.workbench_slot('sections', v_page.id, null, null, null))
            returning id into v_section;
            v_new_sections := v_new_sections || to_jsonb(v_get ->> 'section');
          end if;
        else
          if v_default_section is null then
            select id into v_default_section from app.workbench_sections where page_id = v_page.id order by position limit 1;
            if v_default_section is null then
              insert into app.workbench_sections (organization_id, workspace_id, page_id, name, position)
              values (v_page.organization_id, v_page.workspace_id, v_page.id, 'Imported', app.workbench_slot('sections', v_page.id, null, null, null))
              returning id into v_default_section;
              v_new_sections := v_new_sections || to_jsonb('Imported'::text);
            end if;
          end if;
          v_section := v_default_section;
        end if;
      end if;
      v_plan := array_append(v_plan, jsonb_build_object('line', v_line -> 'line', 'sectionId', v_section, 'body', v_body,
        'errors', v_errors));
    end loop;

    -- Possible duplicates, in one pass: the same caption (trimmed, any case) on a
    -- same channel within 24 hours of an earlier line, or of the workspace's content.
    -- Hash joins whatever the statistics say: planned while the workspace's editions were
    -- still counted as few (before autovacuum's analyze of a fresh import, say), nested
    -- loops compared every line with every edition, minutes for 5,000 of each.
    v_nestloop := current_setting('enable_nestloop');
    perform set_config('enable_nestloop', 'off', true);
    with cand as (
      select u.n, (u.p ->> 'line')::int as line, lower(btrim(u.p -> 'body' ->> 'caption')) as cap, ch::uuid as ch,
             coalesce(pl.planned_at, pl.planned_on::timestamp at time zone v_tz) as at
      from unnest(v_plan) with ordinality u (p, n)
      cross join lateral app.workbench_planned(u.p -> 'body' ->> 'scheduledAt') pl
      cross join lateral jsonb_array_elements_text(coalesce(u.p -> 'body' -> 'channels', '[]')) ch
      where jsonb_array_length(u.p -> 'errors') = 0 and u.p -> 'body' ->> 'caption' is not null and u.p -> 'body' ? 'scheduledAt'),
    existing as (
      select i.id, i.integration_id, lower(btrim(coalesce(i.caption, cr.caption))) as cap,
             coalesce(i.scheduled_at, i.intended_publish_at) as at
      from app.content_items i join app.content_roots cr on cr.id = i.root_id
      where i.workspace_id = v_page.workspace_id and i.deleted_at is null and cr.deleted_at is null
        and coalesce(i.scheduled_at, i.intended_publish_at) is not null),
    hits as (
      select distinct on (b.n, a.line) b.n, 0 as kind, a.line as sort,
        jsonb_build_object('code', 'possible_duplicate', 'line', a.line, 'contentId', null,
          'message', format('same caption on a same channel within 24 hours as line %s', a.line)) as w
      from cand a join cand b on b.cap = a.cap and b.ch = a.ch and a.n < b.n and abs(extract(epoch from b.at - a.at)) < 86400
      union all
      select distinct on (c.n, e.id) c.n, 1, 0,
        jsonb_build_object('code', 'possible_duplicate', 'line', null, 'contentId', e.id,
          'message', 'same caption on a same channel within 24 hours as existing content')
      from cand c join existing e on e.cap = c.cap and e.integration_id = c.ch
        and e.at between c.at - interval '24 hours' and c.at + interval '24 hours')
    select jsonb_object_agg(n::text, ws) into v_warnings_by_line
    from (select n, jsonb_agg(w order by kind, sort) ws from hits group by n) g;
    perform set_config('enable_nestloop', v_nestloop, true);

    -- Keys at the end of each section, for the lines that may become rows.
    for v_section in select distinct (p ->> 'sectionId')::uuid from unnest(v_plan) p
                     where jsonb_array_length(p -> 'errors') = 0 order by 1 loop
      perform app.workbench_lock(v_section);
      v_keys := v_keys || jsonb_build_object(v_section::text, to_jsonb(app.workbench_append_keys('rows', v_section,
        (select count(*)::int from unnest(v_plan) p where jsonb_array_length(p -> 'errors') = 0 and (p ->> 'sectionId')::uuid = v_section))));
      v_used := v_used || jsonb_build_object(v_section::text, 0);
    end loop;

    -- Pass 2: each line through the row path (content rules included), in its own subtransaction.
    v_i := 0;
    foreach v_p in array v_plan loop
      v_i := v_i + 1;
      v_errors := v_p -> 'errors';
      v_warnings := coalesce(v_warnings_by_line -> v_i::text, '[]');
      v_row := null;
      if jsonb_array_length(v_errors) = 0 then
        begin
          v_k := (v_used ->> (v_p ->> 'sectionId'))::int;
          v_used := jsonb_set(v_used, array[v_p ->> 'sectionId'], to_jsonb(v_k + 1));
          v_row := app.workbench_insert_row((select s from app.workbench_sections s where s.id = (v_p ->> 'sectionId')::uuid),
                                            v_keys -> (v_p ->> 'sectionId') ->> v_k, v_p -> 'body');
        exception when others then
          get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
          v_err := app.workbench_error_json(v_state, v_msg, v_detail, v_hint);
          v_errors := coalesce(v_err -> 'details' -> 'fields',
            jsonb_build_array(jsonb_build_object('field', null, 'code', v_err ->> 'code', 'message', v_err ->> 'message')));
          v_row := null;
        end;
      end if;
      if jsonb_array_length(v_errors) = 0 then
        v_ok := v_ok + 1;
      else
        v_bad := v_bad + 1;
      end if;
      if jsonb_array_length(v_warnings) > 0 then
        v_dupes := v_dupes + 1;
      end if;
      v_results := array_append(v_results, jsonb_build_object('line', v_p -> 'line', 'ok', jsonb_array_length(v_errors) = 0,
        'rowId', case when not v_dry then v_row.id end, 'errors', v_errors, 'warnings', v_warnings));
    end loop;

    v_report := jsonb_build_object('dryRun', v_dry, 'allowPartial', v_partial, 'lines', v_ok + v_bad,
      'valid', v_ok, 'invalid', v_bad, 'imported', case when v_dry or (v_bad > 0 and not v_partial) then 0 else v_ok end,
      'possibleDuplicates', v_dupes, 'newSections', v_new_sections, 'ignoredColumns', v_ignored, 'results', to_jsonb(v_results));
    if v_dry or (v_bad > 0 and not v_partial) then
      raise exception using errcode = 'ZW001', message = 'workbench import dry run or refused: roll back';
    end if;
  exception when sqlstate 'ZW001' then
    null;
  end;
  if not v_dry and v_bad > 0 and not v_partial then
    perform app.raise(400, 'CSV_IMPORT_INVALID',
      format('%s of %s lines have errors; nothing was imported. Fix them, or send allowPartial to import the valid lines.', v_bad, v_ok + v_bad),
      jsonb_build_object('invalid', v_bad, 'valid', v_ok,
        'lines', (select coalesce(jsonb_agg(q.x), '[]')
                  from (select x from unnest(v_results) x where not (x ->> 'ok')::boolean limit 100) q)));
  end if;
  return v_report;
end
$function$;
