// Small shared pieces of the pages: the notice line, a field's problem, dates
// in the workspace's time zone, a copy button. Everything else is per page.
import { signal, type Signal } from '@preact/signals';
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { describe } from './api.ts';

export interface NoticeState { kind: 'ok' | 'error'; text: string }

/** One notice per page, shown above its content (role=alert), dismissible. */
export const notice = signal<NoticeState | null>(null);

export function say(kind: NoticeState['kind'], text: string) {
  notice.value = { kind, text };
}
/** Shows a refusal as "what failed: message (CODE; field: reason; request id)". */
export function sayError(what: string, e: unknown) {
  notice.value = { kind: 'error', text: `${what}: ${describe(e)}` };
}

export function Notice({ state = notice }: { state?: Signal<NoticeState | null> }) {
  const n = state.value;
  if (!n) return null;
  return (
    <div id="notice" class={`notice ${n.kind}`} role={n.kind === 'error' ? 'alert' : 'status'}>
      <span class="notice-text">{n.text}</span>
      <button type="button" class="notice-close" aria-label="Dismiss" onClick={() => (state.value = null)}>×</button>
    </div>
  );
}

/** A field's problem under it, tied to the control with aria-describedby by the caller. */
export function FieldError({ id, text }: { id: string; text: string | null | undefined }) {
  if (!text) return null;
  return <p id={id} class="field-error" role="alert">{text}</p>;
}

/** "Thu 4 Jun 2026, 10:00 (Europe/Berlin)": an instant in the workspace's time zone. */
export function formatInZone(iso: string | null | undefined, timeZone: string): string {
  if (!iso) return '';
  const d = new Date(iso);
  const s = new Intl.DateTimeFormat('en-GB', { timeZone, weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(d);
  return `${s} (${timeZone})`;
}

/** The wall-clock parts of an instant in a time zone: {date: 'YYYY-MM-DD', time: 'HH:MM'}. */
export function partsInZone(iso: string, timeZone: string): { date: string; time: string } {
  const p = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
      .formatToParts(new Date(iso)).map((x) => [x.type, x.value]),
  );
  return { date: `${p.year}-${p.month}-${p.day}`, time: `${p.hour}:${p.minute}` };
}

/** The instant (ISO, UTC) of a wall-clock date and time in a time zone, DST-aware. */
export function zonedToIso(date: string, time: string, timeZone: string): string {
  const [y, mo, d] = date.split('-').map(Number);
  const [h, mi] = time.split(':').map(Number);
  const wall = Date.UTC(y, mo - 1, d, h, mi);
  // The zone's offset at a guess, then once more at the corrected instant (DST edges).
  let guess = wall;
  for (let i = 0; i < 2; i++) {
    const p = partsInZone(new Date(guess).toISOString(), timeZone);
    const [py, pmo, pd] = p.date.split('-').map(Number);
    const [ph, pmi] = p.time.split(':').map(Number);
    guess += wall - Date.UTC(py, pmo - 1, pd, ph, pmi);
  }
  return new Date(guess).toISOString();
}

/** A button that copies text to the clipboard and says so. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="copy"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          setDone(true);
          setTimeout(() => setDone(false), 2000);
        } catch {
          // no clipboard permission: the text stays selectable beside the button
        }
      }}
    >
      {done ? 'Copied' : label}
    </button>
  );
}

/** A labelled section of a page. */
export function Section({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section class="card section" aria-labelledby={id ? `${id}-h` : undefined} id={id}>
      <h2 id={id ? `${id}-h` : undefined}>{title}</h2>
      {children}
    </section>
  );
}

/**
 * A list a page reads from the API when it opens (when `enabled`): the items (null while
 * loading), a short error to show in place of the list, and `load()` to read it again after a
 * change. A failure is also said in the page's notice, with the API's code and request id.
 */
export function useList<T>(read: () => Promise<T[]>, what: string, enabled = true) {
  const [items, setItems] = useState<T[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = async () => {
    try {
      setItems(await read());
      setError(null);
    } catch (e) {
      setError(`The ${what} could not be loaded.`);
      sayError(`Could not load the ${what}`, e);
    }
  };
  useEffect(() => {
    if (enabled) void load();
  }, []);
  return { items, error, load };
}
