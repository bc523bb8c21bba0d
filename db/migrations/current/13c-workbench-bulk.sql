-- Workbench (the /v2 spreadsheet planner), part 3 of 3: bulk scheduling and
-- CSV. Both dry runs execute the real path (api.schedule_content for each
-- row and channel; app.workbench_insert_row for each CSV line) inside a
-- subtransaction that is rolled back, so every rule of scheduling and of
-- content, and any added later to those functions (a review policy), applies
-- to the dry run without being repeated here.

-- The sentinel a dry run raises to roll its subtransaction back.
-- SQLSTATE ZW001 never leaves these functions.

------------------------------------------------------------------------------
-- Bulk scheduling
------------------------------------------------------------------------------

create function api.schedule_workbench_rows(p_body jsonb, p_dry_run boolean) returns jsonb
language plpgsql as $$
declare
  v_row_id uuid;
  v app.workbench_rows;
  v_item app.content_items;
  v_n int := 0;
  v_row_results jsonb;
  v_results jsonb[] := '{}';
  v_e jsonb;
  v_failed boolean;
  v_rows_ok int := 0;
  v_channels_ok int := 0;
  v_channels_failed int := 0;
  v_state text; v_msg text; v_detail text; v_hint text;
  v_err jsonb;
begin
  perform app.require_role('editor');
  for v_row_id in select (e #>> '{}')::uuid from jsonb_array_elements(p_body -> 'rowIds') e loop
    v_row_results := '[]';
    v_failed := false;
    begin
      select * into v from app.workbench_rows where id = v_row_id and workspace_id = app.current_workspace_id();
      if v.id is null then
        perform app.raise_not_found('workbench row', v_row_id);
      end if;
      if v.content_root_id is null or not exists (select 1 from app.content_roots where id = v.content_root_id and deleted_at is null) then
        perform app.raise(400, 'ROW_HAS_NO_CONTENT', 'This row has no content to schedule; give it a caption or media and channels.',
          jsonb_build_object('rowId', v.id));
      end if;
      if v.planned_at is null then
        perform app.raise(400, 'ROW_TIME_REQUIRED', 'This row has no date and time to schedule at (a date alone is a plan, not a time).',
          jsonb_build_object('rowId', v.id, 'scheduledAt', v.planned_on));
      end if;
      if not exists (select 1 from app.content_items where root_id = v.content_root_id and deleted_at is null) then
        perform app.raise(400, 'ROW_HAS_NO_CHANNELS', 'This row has no channel to schedule on.', jsonb_build_object('rowId', v.id));
      end if;
      for v_item in select i.* from app.content_items i join app.integrations g on g.id = i.integration_id
                    where i.root_id = v.content_root_id and i.deleted_at is null order by g.created_at, g.id loop
        begin
          -- The content route's own path: status, time, platform rules, review, publish job.
          perform api.schedule_content(v_item.id, v.planned_at);
          v_row_results := v_row_results || jsonb_build_object('rowId', v.id, 'contentId', v_item.id, 'integrationId', v_item.integration_id,
            'outcome', case when p_dry_run then 'valid' else 'scheduled' end, 'error', null);
        exception when others then
          get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
          v_row_results := v_row_results || jsonb_build_object('rowId', v.id, 'contentId', v_item.id, 'integrationId', v_item.integration_id,
            'outcome', 'failed', 'error', app.workbench_error_json(v_state, v_msg, v_detail, v_hint));
          v_failed := true;
        end;
      end loop;
      if v_failed or p_dry_run then
        raise exception using errcode = 'ZW001', message = 'workbench dry run or failed row: roll back';
      end if;
    exception
      when sqlstate 'ZW001' then
        null;
      when others then
        get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
        v_err := app.workbench_error_json(v_state, v_msg, v_detail, v_hint);
        v_row_results := jsonb_build_array(jsonb_build_object('rowId', v_row_id, 'contentId', null, 'integrationId', null,
          'outcome', 'failed', 'error', v_err));
        v_failed := true;
    end;
    if v_failed then
      -- The row's other channels were rolled back with it: a row is scheduled whole or not at all.
      v_row_results := (select jsonb_agg(case when r ->> 'outcome' = 'scheduled' then r || '{"outcome": "not_scheduled"}' else r end)
                        from jsonb_array_elements(v_row_results) r);
    else
      v_rows_ok := v_rows_ok + 1;
    end if;
    v_channels_ok := v_channels_ok + (select count(*) from jsonb_array_elements(v_row_results) r where r ->> 'outcome' in ('scheduled', 'valid'));
    v_channels_failed := v_channels_failed + (select count(*) from jsonb_array_elements(v_row_results) r where r ->> 'outcome' = 'failed');
    for v_e in select jsonb_array_elements(v_row_results) loop
      v_results := array_append(v_results, v_e);
    end loop;
    v_n := v_n + 1;
  end loop;
  return jsonb_build_object('dryRun', p_dry_run, 'rows', v_n, 'rowsOk', v_rows_ok, 'rowsFailed', v_n - v_rows_ok,
    'channelsOk', v_channels_ok, 'channelsFailed', v_channels_failed, 'results', to_jsonb(v_results));
end
$$;
comment on function api.schedule_workbench_rows(jsonb, boolean) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/schedule and /schedule/validate (scheduleWorkbenchRows_v2, validateWorkbenchSchedule_v2). For up to 1,000 rows, schedules each edition of the row''s root at the row''s date and time through api.schedule_content, one result per row and channel; a row is scheduled whole or not at all (its own error: 404 NOT_FOUND, 400 ROW_HAS_NO_CONTENT, ROW_TIME_REQUIRED, ROW_HAS_NO_CHANNELS, or each channel''s error from the content rules). The dry run runs the same path in a subtransaction rolled back, so it answers what scheduling would, writing nothing. Requires the editor role.';

------------------------------------------------------------------------------
-- CSV export
------------------------------------------------------------------------------

-- A time as the CSV shows it: in the workspace's zone, with its offset.
create function app.workbench_csv_time(p_at timestamptz, p_tz text) returns text
language sql stable as $$
  select to_char(p_at at time zone p_tz, 'YYYY-MM-DD"T"HH24:MI:SS')
    || case when o = 0 then 'Z'
            else (case when o < 0 then '-' else '+' end) || to_char(make_interval(secs => abs(o)), 'HH24:MI') end
  from (select extract(epoch from (p_at at time zone p_tz) - (p_at at time zone 'UTC'))::int o) x
$$;
comment on function app.workbench_csv_time(timestamptz, text) is 'A time as workbench CSV writes it: local time of the zone with its UTC offset (2026-03-01T09:30:00+01:00).';

create function app.workbench_csv_columns() returns text[]
language sql immutable as $$
  select array['id', 'section', 'title', 'caption', 'channels', 'scheduled_at', 'tags', 'pillar', 'format', 'campaign',
               'media_ids', 'notes', 'status']
$$;
comment on function app.workbench_csv_columns() is 'The columns of a workbench CSV export, in order; an import maps the same headers (id and status are read-only and ignored).';

create function api.export_workbench_page(p_id uuid) returns jsonb
language plpgsql stable as $$
declare
  v app.workbench_pages;
  v_tz text;
begin
  perform app.require_role('viewer');
  select * into v from app.workbench_pages where id = p_id and workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise_not_found('workbench page', p_id);
  end if;
  select timezone into v_tz from app.workspaces where id = v.workspace_id;
  return jsonb_build_object('pageId', v.id, 'pageName', v.name, 'timeZone', v_tz,
    'header', to_jsonb(app.workbench_csv_columns()),
    'records', coalesce((
      select jsonb_agg(jsonb_build_array(
        w.id, s.name, coalesce(w.title, ''), coalesce(r.caption, ''),
        coalesce((select string_agg(g.name, '; ' order by g.created_at, g.id) from app.content_items i
                  join app.integrations g on g.id = i.integration_id
                  where i.root_id = r.id and i.deleted_at is null), ''),
        coalesce(app.workbench_csv_time(w.planned_at, v_tz), w.planned_on::text, ''),
        coalesce((select string_agg(t.name, '; ' order by t.name) from app.content_root_tags rt join app.tags t on t.id = rt.tag_id
                  where rt.root_id = r.id), ''),
        coalesce((select p.name from app.content_root_pillars rp join app.pillars p on p.id = rp.pillar_id
                  where rp.root_id = r.id order by rp.created_at, rp.pillar_id limit 1), ''),
        coalesce((select f.name from app.content_root_formats rf join app.formats f on f.id = rf.format_id
                  where rf.root_id = r.id order by rf.created_at, rf.format_id limit 1), ''),
        coalesce((select c.name from app.campaigns c where c.id = r.campaign_id), ''),
        coalesce((select string_agg(m.media_id::text, '; ' order by m.position) from app.content_root_media m where m.root_id = r.id), ''),
        coalesce(w.notes, ''),
        app.workbench_status_of(r.id is not null, st.n, st.any_failed, st.any_pending, st.any_rejected, st.all_sent,
                                st.all_scheduled_or_sent, st.all_cancelled)) order by s.position, w.position)
      from app.workbench_rows w
      join app.workbench_sections s on s.id = w.section_id
      left join app.content_roots r on r.id = w.content_root_id and r.deleted_at is null
      left join lateral (
        select count(*) n, bool_or(i.status = 'failed') any_failed, bool_or(i.status = 'pending_approval') any_pending,
          bool_or(i.status = 'rejected') any_rejected, bool_and(i.status = 'sent') all_sent,
          bool_and(i.status in ('scheduled', 'sent')) all_scheduled_or_sent, bool_and(i.status = 'cancelled') all_cancelled
        from app.content_items i where i.root_id = r.id and i.deleted_at is null) st on true
      where w.page_id = v.id), '[]'));
end
$$;
comment on function api.export_workbench_page(uuid) is 'Serves GET /v2/workspaces/{workspaceId}/workbench/pages/{pageId}/export (exportWorkbenchPage_v2). A page''s rows in sheet order as CSV records (columns of app.workbench_csv_columns: channels, tags, pillar, format and campaign by name, times in the workspace''s zone with their offset); the route writes them as CSV. Requires the viewer role; 404 NOT_FOUND.';

------------------------------------------------------------------------------
-- CSV import
------------------------------------------------------------------------------

-- Which column a CSV header names (case, spaces, _ and - ignored), or null.
create function app.workbench_csv_column(p_header text) returns text
language sql immutable as $$
  select case lower(regexp_replace(coalesce(p_header, ''), '[\s_-]+', '', 'g'))
    when 'section' then 'section'
    when 'title' then 'title' when 'name' then 'title'
    when 'caption' then 'caption' when 'text' then 'caption' when 'copy' then 'caption'
    when 'channels' then 'channels' when 'channel' then 'channels'
    when 'scheduledat' then 'scheduledAt' when 'date' then 'scheduledAt' when 'publishat' then 'scheduledAt'
    when 'datetime' then 'scheduledAt' when 'when' then 'scheduledAt'
    when 'tags' then 'tags' when 'tag' then 'tags'
    when 'pillar' then 'pillar'
    when 'format' then 'format'
    when 'campaign' then 'campaign'
    when 'notes' then 'notes' when 'note' then 'notes'
    when 'mediaids' then 'mediaIds' when 'media' then 'mediaIds'
    when 'id' then '-' when 'rowid' then '-' when 'status' then '-'
  end
$$;
comment on function app.workbench_csv_column(text) is 'The workbench field a CSV header names (case, spaces, underscores and hyphens ignored; a few synonyms), ''-'' for the read-only export columns id and status, null for an unknown header.';

-- A CSV time: a date; a local date and time in the zone; or with an offset.
create function app.workbench_csv_parse_time(p_value text, p_tz text, out planned_at timestamptz, out planned_on date, out ok boolean)
language plpgsql stable as $$
begin
  ok := true;
  if p_value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' then
    planned_on := p_value::date;
  elsif p_value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?$' then
    planned_at := p_value::timestamp at time zone p_tz;
  elsif p_value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|z|[+-][0-9]{2}(:?[0-9]{2})?)$' then
    planned_at := p_value::timestamptz;
  else
    ok := false;
  end if;
exception when others then
  planned_at := null;
  planned_on := null;
  ok := false;
end
$$;
comment on function app.workbench_csv_parse_time(text, text) is 'A CSV scheduled_at: YYYY-MM-DD (a date only), a local date and time read in the workspace''s zone, or a date and time with Z or an offset; ok is false for anything else or an impossible date.';

-- The ids a CSV cell names (separated by ; | or ,), by id or by name
-- (case-insensitive) among the workspace's rows of one kind.
create function app.workbench_csv_resolve(p_kind text, p_cell text, p_field text, out ids uuid[], out problems jsonb)
language plpgsql stable as $$
declare
  v_token text;
  v_matches uuid[];
  v_sql text := case p_kind
    when 'channels' then 'select id, name from app.integrations where workspace_id = $1 and deleted_at is null'
    when 'tags' then 'select id, name from app.tags where workspace_id = $1'
    when 'pillar' then 'select id, name from app.pillars where workspace_id = $1'
    when 'format' then 'select id, name from app.formats where workspace_id = $1'
    when 'campaign' then 'select id, name from app.campaigns where workspace_id = $1' end;
begin
  ids := '{}';
  problems := '[]';
  for v_token in select btrim(t) from regexp_split_to_table(coalesce(p_cell, ''), '[;|,]') t where btrim(t) <> '' loop
    if p_kind = 'media' then
      if v_token ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
        ids := ids || v_token::uuid;
      else
        problems := problems || app.field_problem(p_field, 'invalid_media_id', format('%s is not a media id', left(v_token, 80)));
      end if;
      continue;
    end if;
    execute format('select array_agg(id) from (%s) x where x.id::text = lower($2) or lower(btrim(x.name)) = lower($2)', v_sql)
      into v_matches using app.current_workspace_id(), v_token;
    if v_matches is null then
      problems := problems || app.field_problem(p_field, 'not_found', format('no %s named %s in this workspace', p_kind, left(v_token, 80)));
    elsif cardinality(v_matches) > 1 then
      problems := problems || app.field_problem(p_field, 'ambiguous', format('%s names more than one %s; use its id', left(v_token, 80), p_kind));
    elsif not v_matches[1] = any (ids) then
      ids := ids || v_matches[1];
    end if;
  end loop;
end
$$;
comment on function app.workbench_csv_resolve(text, text, text) is 'The ids named in a CSV cell (separated by ; | or ,) of channels, tags, a pillar, format or campaign, by id or case-insensitive name, with a field problem per unknown or ambiguous name; media by id only.';

create function api.import_workbench_csv(p_page_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
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
$$;
comment on function api.import_workbench_csv(uuid, jsonb) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/pages/{pageId}/import and /import/validate (importWorkbenchCsv_v2, validateWorkbenchCsvImport_v2). Maps the parsed CSV''s columns by header, reads each line (times in the workspace''s zone or with an offset; channels, tags, pillar, format, campaign by name or id), flags possible duplicates (same caption on a same channel within 24 hours, in the file or the workspace), and creates each line''s row through app.workbench_insert_row (content rules included) in its own subtransaction; one result per line with its line number. A dry run rolls everything back; a commit with invalid lines imports nothing (400 CSV_IMPORT_INVALID) unless allowPartial. Requires the editor role; 404 NOT_FOUND, 400 CSV_HEADER_INVALID, 400 CSV_TOO_LARGE.';

select app.harden_api_functions();

grant execute on function
  app.workbench_error_json(text, text, text, text), app.workbench_planned(text), app.workbench_row_status(uuid),
  app.workbench_status_of(boolean, bigint, boolean, boolean, boolean, boolean, boolean, boolean),
  app.workbench_row_json(app.workbench_rows), app.workbench_rows_json(uuid[]), app.workbench_fill_rows(jsonb[]), app.workbench_section_json(app.workbench_sections),
  app.workbench_page_json(app.workbench_pages), app.workbench_page_for_update(uuid), app.workbench_section_for_update(uuid),
  app.workbench_row_for_update(uuid), app.workbench_rebalance(text, uuid), app.workbench_neighbours(text, uuid, uuid, uuid, uuid),
  app.workbench_slot(text, uuid, uuid, uuid, uuid), app.workbench_append_keys(text, uuid, int),
  app.workbench_channel_problems(jsonb), app.workbench_planning_body(jsonb), app.workbench_apply_content(app.workbench_rows, jsonb), app.workbench_first_content(text, timestamptz, jsonb),
  app.workbench_insert_row(app.workbench_sections, text, jsonb), app.workbench_update_row(uuid, jsonb),
  app.workbench_csv_time(timestamptz, text), app.workbench_csv_columns(), app.workbench_csv_column(text),
  app.workbench_csv_parse_time(text, text), app.workbench_csv_resolve(text, text, text),
  app.tg_workbench_sections_same_workspace(), app.tg_workbench_rows_same_workspace()
  to pressroom_api, pressroom_definer, pressroom_worker;
