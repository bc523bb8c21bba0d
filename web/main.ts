// The calendar page (served at /app by server/calendar-page.ts, bundled by
// esbuild at start). It is a plain client of the public API: a session from
// POST /v1/auth/sessions, then the same routes and permissions as any other
// caller. Dragging a scheduled edition calls PATCH .../content/{id}/schedule,
// so the database's rules and audit apply unchanged; a refusal is shown.
import { Calendar, type EventDropArg, type EventInput, type EventSourceFuncArg } from '@fullcalendar/core';
import dayGridPlugin from '@fullcalendar/daygrid';
import interactionPlugin from '@fullcalendar/interaction';
import timeGridPlugin from '@fullcalendar/timegrid';
import './app.css';

const TOKEN_KEY = 'pressroom.session';
const WS_KEY = 'pressroom.workspace';
/** Editions a status query reads at most (pages of 100), so a huge workspace cannot stall the page. */
const MAX_PAGES = 20;

interface Workspace { id: string; name: string; role: 'viewer' | 'editor' | 'manager'; timezone: string }
interface Integration { id: string; name: string; platform: string; username: string | null }
interface Edition {
  id: string; integrationId: string; platform: string; status: string; scheduledAt: string | null; sentAt: string | null;
  caption: string | null; title: string | null; organizationalTitle: string | null; permalink: string | null; error: string | null;
}
interface ApiErrorBody { error?: { code?: string; message?: string; requestId?: string; details?: unknown } }

class ApiError extends Error {
  status: number;
  code: string;
  requestId: string | null;
  details: unknown;
  constructor(status: number, body: ApiErrorBody, requestId: string | null) {
    super(body.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body.error?.code ?? 'HTTP_ERROR';
    this.requestId = body.error?.requestId ?? requestId;
    this.details = body.error?.details;
  }
}

const $ = <T extends HTMLElement>(sel: string) => document.querySelector(sel) as T;
const token = () => sessionStorage.getItem(TOKEN_KEY);

async function api<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const h: Record<string, string> = { Accept: 'application/json', ...headers };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  const res = await fetch(path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json: { data?: unknown } & ApiErrorBody | null = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    if (res.ok) throw new Error(`The server answered ${path} with something other than JSON.`);
  }
  if (!res.ok) {
    const err = new ApiError(res.status, json ?? {}, res.headers.get('X-Request-Id'));
    if (res.status === 401 && path !== '/v1/auth/sessions') signedOut('Your session has ended; sign in again.');
    throw err;
  }
  return json?.data as T;
}

/** "Message (CODE; field: reason; request id)" for a refusal. */
function describe(e: unknown): string {
  if (!(e instanceof ApiError)) return e instanceof Error ? e.message : String(e);
  const parts = [e.code];
  const d = e.details as { fields?: { field?: string; path?: string; code?: string; reason?: string; message?: string }[] } | undefined;
  for (const f of d?.fields ?? []) parts.push(`${f.field ?? f.path ?? ''}: ${f.message ?? f.reason ?? f.code ?? ''}`.trim());
  if (e.requestId) parts.push(`request ${e.requestId}`);
  return `${e.message} (${parts.join('; ')})`;
}

// ---- sign-in -------------------------------------------------------------------------------

function signedOut(message?: string) {
  sessionStorage.removeItem(TOKEN_KEY);
  calendar?.destroy();
  calendar = null;
  $('#calendar-view').hidden = true;
  $('#who').hidden = true;
  $('#signout').hidden = true;
  const form = $<HTMLFormElement>('#signin');
  form.hidden = false;
  const err = form.querySelector<HTMLElement>('.error')!;
  err.hidden = !message;
  err.textContent = message ?? '';
}

$<HTMLFormElement>('#signin').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const form = ev.currentTarget as HTMLFormElement;
  const data = new FormData(form);
  const err = form.querySelector<HTMLElement>('.error')!;
  err.hidden = true;
  try {
    const s = await api<{ token: string; user: { email: string } }>('POST', '/v1/auth/sessions', {
      email: String(data.get('email')),
      password: String(data.get('password')),
    });
    sessionStorage.setItem(TOKEN_KEY, s.token);
    sessionStorage.setItem('pressroom.email', s.user.email);
    form.reset();
  } catch (e) {
    err.textContent = describe(e);
    err.hidden = false;
    return;
  }
  await start();
});

$('#signout').addEventListener('click', async () => {
  try {
    await api('DELETE', '/v1/auth/sessions/current');
  } catch {
    // the session may already be gone; signing out locally is what matters
  }
  signedOut();
});

// ---- state ---------------------------------------------------------------------------------

let calendar: Calendar | null = null;
let workspaces: Workspace[] = [];
let channels = new Map<string, Integration>();

const currentWs = () => workspaces.find((w) => w.id === $<HTMLSelectElement>('#workspace').value)!;
const statuses = () => [...document.querySelectorAll<HTMLInputElement>('input[name=status]:checked')].map((i) => i.value);

function notice(text: string, kind: 'error' | 'ok') {
  const n = $('#notice');
  n.className = `notice ${kind}`;
  n.querySelector('.notice-text')!.textContent = text;
  n.hidden = false;
}
$('#notice .notice-close').addEventListener('click', () => ($('#notice').hidden = true));

/** Signed in: the workspace picker and the calendar; a failure is shown above the calendar. */
async function start() {
  try {
    await open();
  } catch (e) {
    if (token()) notice(`Could not load: ${describe(e)}`, 'error');
  }
}

async function open() {
  $('#signin').hidden = true;
  $('#who').textContent = sessionStorage.getItem('pressroom.email') ?? '';
  $('#who').hidden = false;
  $('#signout').hidden = false;
  workspaces = await api<Workspace[]>('GET', '/v1/workspaces');
  const sel = $<HTMLSelectElement>('#workspace');
  sel.replaceChildren(...workspaces.map((w) => new Option(`${w.name} (${w.role})`, w.id)));
  const remembered = sessionStorage.getItem(WS_KEY);
  if (remembered && workspaces.some((w) => w.id === remembered)) sel.value = remembered;
  $('#calendar-view').hidden = false;
  if (!workspaces.length) {
    notice('This account has no workspace yet.', 'error');
    return;
  }
  await loadChannels();
  mountCalendar();
}

async function loadChannels() {
  const list = await api<Integration[]>('GET', `/v1/workspaces/${currentWs().id}/integrations`);
  channels = new Map(list.map((i) => [i.id, i]));
  const sel = $<HTMLSelectElement>('#channel');
  sel.replaceChildren(new Option('All channels', ''), ...list.map((i) => new Option(`${i.name} · ${i.platform}`, i.id)));
}

$('#workspace').addEventListener('change', async () => {
  sessionStorage.setItem(WS_KEY, currentWs().id);
  $('#notice').hidden = true;
  try {
    await loadChannels();
    mountCalendar();
  } catch (e) {
    notice(`Could not open the workspace: ${describe(e)}`, 'error');
  }
});
$('#channel').addEventListener('change', () => calendar?.refetchEvents());
for (const box of document.querySelectorAll('input[name=status]')) box.addEventListener('change', () => calendar?.refetchEvents());

// ---- events --------------------------------------------------------------------------------

/** A sent edition shows at its sentAt, which can come after its scheduledAt (retries, a late confirmation). */
const SENT_MARGIN_MS = 7 * 24 * 3600_000;

/**
 * The editions of the given status (and channel) scheduled in [from, to) — only the visible range
 * is asked for (GET content?scheduledFrom=&scheduledTo=) — earliest first, up to MAX_PAGES pages.
 */
async function editions(status: string, channel: string, from: Date, to: Date): Promise<Edition[]> {
  const out: Edition[] = [];
  const margin = status === 'sent' ? SENT_MARGIN_MS : 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const q = new URLSearchParams({
      status,
      scheduledFrom: new Date(from.getTime() - margin).toISOString(),
      scheduledTo: to.toISOString(),
      sortBy: 'scheduledAt',
      sortDirection: 'asc',
      limit: '100',
      offset: String(page * 100),
    });
    if (channel) q.set('integrationId', channel);
    const rows = await api<Edition[]>('GET', `/v1/workspaces/${currentWs().id}/content?${q}`);
    out.push(...rows);
    if (rows.length < 100) break;
  }
  return out;
}

const label = (e: Edition) => e.organizationalTitle || e.title || e.caption || '(no caption)';

async function loadEvents(info: EventSourceFuncArg): Promise<EventInput[]> {
  const channel = $<HTMLSelectElement>('#channel').value;
  const canEdit = currentWs().role !== 'viewer';
  const lists = await Promise.all(statuses().map((s) => editions(s, channel, info.start, info.end)));
  const events: EventInput[] = [];
  for (const e of lists.flat()) {
    const at = e.status === 'sent' ? (e.sentAt ?? e.scheduledAt) : e.scheduledAt;
    if (!at) continue;
    const start = new Date(at);
    if (start < info.start || start >= info.end) continue;
    const ch = channels.get(e.integrationId);
    events.push({
      id: e.id,
      title: `${ch?.name ?? e.platform} · ${label(e)}`,
      start,
      allDay: false,
      editable: canEdit && e.status === 'scheduled',
      classNames: [`st-${e.status}`, `pf-${e.platform}`],
      extendedProps: { edition: e, channel: ch },
    });
  }
  return events;
}

async function onDrop(info: EventDropArg) {
  const e = info.event.extendedProps.edition as Edition;
  const to = info.event.start!;
  try {
    await api('PATCH', `/v1/workspaces/${currentWs().id}/content/${e.id}/schedule`, { scheduledAt: to.toISOString() }, { 'Idempotency-Key': crypto.randomUUID() });
    notice(`Rescheduled to ${to.toLocaleString()}.`, 'ok');
    calendar?.refetchEvents();
  } catch (err) {
    info.revert();
    notice(`Could not reschedule: ${describe(err)}`, 'error');
  }
}

async function openDetail(id: string) {
  const dlg = $<HTMLDialogElement>('#detail');
  try {
    const e = await api<Edition>('GET', `/v1/workspaces/${currentWs().id}/content/${id}`);
    const ch = channels.get(e.integrationId);
    dlg.querySelector('.d-title')!.textContent = label(e);
    const rows: [string, string | null][] = [
      ['Channel', ch ? `${ch.name} (${ch.platform}${ch.username ? `, @${ch.username}` : ''})` : e.platform],
      ['Status', e.status],
      ['Scheduled', e.scheduledAt && new Date(e.scheduledAt).toLocaleString()],
      ['Sent', e.sentAt && new Date(e.sentAt).toLocaleString()],
      ['Error', e.error],
      ['Edition', e.id],
    ];
    const dl = dlg.querySelector('.d-fields')!;
    dl.replaceChildren();
    for (const [k, v] of rows) {
      if (!v) continue;
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v;
      dl.append(dt, dd);
    }
    if (e.permalink && /^https?:\/\//.test(e.permalink)) {
      const dt = document.createElement('dt');
      dt.textContent = 'Permalink';
      const a = document.createElement('a');
      a.href = e.permalink;
      a.textContent = e.permalink;
      a.rel = 'noopener noreferrer';
      a.target = '_blank';
      const dd = document.createElement('dd');
      dd.append(a);
      dl.append(dt, dd);
    }
    dlg.querySelector('.d-caption')!.textContent = e.caption ?? '';
    dlg.showModal();
  } catch (err) {
    notice(`Could not open the edition: ${describe(err)}`, 'error');
  }
}

// ---- calendar ------------------------------------------------------------------------------

/** The view and date live in the location hash (#view=timeGridWeek&date=2030-05-04), so a view can be linked. */
function hashState() {
  const h = new URLSearchParams(location.hash.slice(1));
  const view = h.get('view') === 'timeGridWeek' ? 'timeGridWeek' : 'dayGridMonth';
  const date = /^\d{4}-\d{2}-\d{2}$/.test(h.get('date') ?? '') ? h.get('date')! : undefined;
  return { view, date };
}

function mountCalendar() {
  calendar?.destroy();
  const { view, date } = hashState();
  calendar = new Calendar($('#calendar'), {
    plugins: [dayGridPlugin, timeGridPlugin, interactionPlugin],
    initialView: view,
    initialDate: date,
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
        notice(`Could not load the calendar: ${describe(e)}`, 'error');
        fail(e);
      });
    },
    eventDrop: (info) => void onDrop(info),
    eventClick: (info) => void openDetail(info.event.id),
    datesSet: (info) => {
      const d = info.view.currentStart;
      const iso = `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
      history.replaceState(null, '', `#view=${info.view.type}&date=${iso}`);
    },
  });
  calendar.render();
}

if (token()) void start();
else signedOut();
