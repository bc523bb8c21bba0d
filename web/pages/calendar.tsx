// The calendar (/app): the workspace's editions by day or week, filtered by
// channel and status. Dragging a scheduled edition calls PATCH
// .../content/{id}/schedule, so the database's rules and audit apply
// unchanged and a refusal is shown; opening one opens it in the composer.
import { Calendar, type EventDropArg, type EventInput, type EventSourceFuncArg } from '@fullcalendar/core';
import dayGridPlugin from '@fullcalendar/daygrid';
import interactionPlugin from '@fullcalendar/interaction';
import timeGridPlugin from '@fullcalendar/timegrid';
import { useEffect, useRef, useState } from 'preact/hooks';
import { can, client, type Schema, unwrap, workspace, wsId } from '../lib/api.ts';
import { navigate } from '../lib/router.ts';
import { say, sayError } from '../lib/ui.tsx';

type Integration = Schema<'Integration'>;
type Edition = Schema<'ContentListItem'>;

/** Editions a status query reads at most (pages of 100), so a huge workspace cannot stall the page. */
const MAX_PAGES = 20;
/** A sent edition shows at its sentAt, which can come after its scheduledAt (retries, a late confirmation). */
const SENT_MARGIN_MS = 7 * 24 * 3600_000;
const STATUSES = ['scheduled', 'sent', 'failed'] as const;
type Status = (typeof STATUSES)[number];

/**
 * The editions of the given status (and channel) scheduled in [from, to) — only the visible range
 * is asked for (GET content?scheduledFrom=&scheduledTo=) — earliest first, up to MAX_PAGES pages.
 */
async function editions(status: Status, channel: string, from: Date, to: Date): Promise<Edition[]> {
  const out: Edition[] = [];
  const margin = status === 'sent' ? SENT_MARGIN_MS : 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const body = await unwrap(client.value.GET('/v1/workspaces/{workspaceId}/content', {
      params: {
        path: { workspaceId: wsId() },
        query: {
          status,
          scheduledFrom: new Date(from.getTime() - margin).toISOString(),
          scheduledTo: to.toISOString(),
          sortBy: 'scheduledAt',
          sortDirection: 'asc',
          limit: 100,
          offset: page * 100,
          ...(channel ? { integrationId: channel } : {}),
        },
      },
    }));
    const rows = body.data as Edition[];
    out.push(...rows);
    if (rows.length < 100) break;
  }
  return out;
}

const label = (e: Edition) => e.organizationalTitle || e.title || e.caption || '(no caption)';

/** The view and date live in the location hash (#view=timeGridWeek&date=2030-05-04), so a view can be linked. */
function hashState() {
  const h = new URLSearchParams(location.hash.slice(1));
  const view = h.get('view') === 'timeGridWeek' ? 'timeGridWeek' : 'dayGridMonth';
  const date = /^\d{4}-\d{2}-\d{2}$/.test(h.get('date') ?? '') ? h.get('date')! : undefined;
  return { view, date };
}

export function CalendarPage() {
  const el = useRef<HTMLDivElement>(null);
  const cal = useRef<Calendar | null>(null);
  const [channels, setChannels] = useState<Integration[]>([]);
  const [channel, setChannel] = useState('');
  const [statuses, setStatuses] = useState<Set<Status>>(new Set(STATUSES));
  // The event source reads the filters through a ref, so FullCalendar keeps one source.
  const filters = useRef({ channel, statuses, channels: new Map<string, Integration>() });
  filters.current = { channel, statuses, channels: new Map(channels.map((c) => [c.id, c])) };

  useEffect(() => {
    unwrap(client.value.GET('/v1/workspaces/{workspaceId}/integrations', { params: { path: { workspaceId: wsId() } } }))
      .then((b) => setChannels(b.data), (e) => sayError('Could not load the channels', e));
  }, []);

  useEffect(() => {
    const canEdit = can('editor');
    const loadEvents = async (info: EventSourceFuncArg): Promise<EventInput[]> => {
      const f = filters.current;
      const lists = await Promise.all([...f.statuses].map((s) => editions(s, f.channel, info.start, info.end)));
      const events: EventInput[] = [];
      for (const e of lists.flat()) {
        const at = e.status === 'sent' ? (e.sentAt ?? e.scheduledAt) : e.scheduledAt;
        if (!at) continue;
        const start = new Date(at);
        if (start < info.start || start >= info.end) continue;
        const ch = f.channels.get(e.integrationId);
        events.push({
          id: e.id,
          title: `${ch?.name ?? e.platform} · ${label(e)}`,
          start,
          allDay: false,
          editable: canEdit && e.status === 'scheduled',
          classNames: [`st-${e.status}`, `pf-${e.platform}`],
          extendedProps: { edition: e },
        });
      }
      return events;
    };
    const onDrop = async (info: EventDropArg) => {
      const e = info.event.extendedProps.edition as Edition;
      const to = info.event.start!;
      try {
        await unwrap(client.value.PATCH('/v1/workspaces/{workspaceId}/content/{id}/schedule', {
          params: { path: { workspaceId: wsId(), id: e.id } },
          body: { scheduledAt: to.toISOString() },
          headers: { 'Idempotency-Key': crypto.randomUUID() },
        }));
        say('ok', `Rescheduled to ${to.toLocaleString()}.`);
        cal.current?.refetchEvents();
      } catch (err) {
        info.revert();
        sayError('Could not reschedule', err);
      }
    };
    const { view, date } = hashState();
    const calendar = new Calendar(el.current!, {
      plugins: [dayGridPlugin, timeGridPlugin, interactionPlugin],
      initialView: view,
      initialDate: date,
      timeZone: 'local',
      headerToolbar: { left: 'prev,next today', center: 'title', right: 'dayGridMonth,timeGridWeek' },
      buttonText: { today: 'Today', month: 'Month', week: 'Week' },
      height: 'auto',
      firstDay: 1,
      nowIndicator: true,
      eventDisplay: 'block',
      displayEventEnd: false,
      defaultTimedEventDuration: '01:00',
      allDaySlot: false,
      eventDurationEditable: false,
      eventTimeFormat: { hour: '2-digit', minute: '2-digit', hour12: false },
      slotLabelFormat: { hour: '2-digit', minute: '2-digit', hour12: false },
      scrollTime: '08:00',
      events: (info, ok, fail) => {
        loadEvents(info).then(ok, (e) => {
          sayError('Could not load the calendar', e);
          fail(e);
        });
      },
      eventDrop: (info) => void onDrop(info),
      eventClick: (info) => {
        info.jsEvent.preventDefault();
        navigate(`/app/compose/${info.event.id}`);
      },
      // Events are links to the composer for the keyboard too (Enter on a focused event); the
      // status, shown by colour, is said in words to screen readers (the name stays the visible text).
      eventDidMount: (info) => {
        info.el.setAttribute('tabindex', '0');
        info.el.setAttribute('role', 'link');
        const status = document.createElement('span');
        status.className = 'sr-only';
        status.textContent = `, ${(info.event.extendedProps.edition as Edition).status}`;
        info.el.append(status);
        info.el.addEventListener('keydown', (ev) => {
          if (ev.key === 'Enter') navigate(`/app/compose/${info.event.id}`);
        });
      },
      buttonHints: { prev: 'Previous $0', next: 'Next $0', today: 'This $0' },
      // A day cell named after its date alone (FullCalendar labels it by the day number's full date)
      // would hide the events inside it from its name: the cell keeps its content as its name.
      dayCellDidMount: (arg) => arg.el.removeAttribute('aria-labelledby'),
      // FullCalendar's arrow icons are role=img without a name; the buttons carry the name (buttonHints).
      viewDidMount: () => {
        for (const icon of el.current?.querySelectorAll('.fc-icon') ?? []) icon.setAttribute('aria-hidden', 'true');
      },
      datesSet: (info) => {
        const d = info.view.currentStart;
        const iso = `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
        history.replaceState(null, '', `${location.pathname}#view=${info.view.type}&date=${iso}`);
      },
    });
    calendar.render();
    cal.current = calendar;
    return () => {
      calendar.destroy();
      cal.current = null;
    };
  }, []);

  // A filter change reloads the events (the source reads the filters through the ref).
  useEffect(() => {
    cal.current?.refetchEvents();
  }, [channel, statuses, channels]);

  const toggle = (s: Status, on: boolean) => {
    const next = new Set(statuses);
    if (on) next.add(s);
    else next.delete(s);
    setStatuses(next);
  };

  return (
    <section id="calendar-view" aria-labelledby="calendar-h">
      <h1 id="calendar-h" class="sr-only">Calendar of {workspace.value?.name}</h1>
      <div class="filters">
        <label>Channel
          <select id="channel" value={channel} onChange={(e) => setChannel((e.currentTarget as HTMLSelectElement).value)}>
            <option value="">All channels</option>
            {channels.map((i) => <option key={i.id} value={i.id}>{`${i.name} · ${i.platform}`}</option>)}
          </select>
        </label>
        <fieldset class="statuses">
          <legend>Status</legend>
          {STATUSES.map((s) => (
            <label key={s} class={`st-${s}`}>
              <input type="checkbox" name="status" value={s} checked={statuses.has(s)} onChange={(e) => toggle(s, (e.currentTarget as HTMLInputElement).checked)} />
              {` ${s[0].toUpperCase()}${s.slice(1)}`}
            </label>
          ))}
        </fieldset>
        <span class="spacer" />
        {can('editor') && <a class="button primary" href="/app/compose">New post</a>}
      </div>
      <div id="calendar" ref={el} />
    </section>
  );
}
