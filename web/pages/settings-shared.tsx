// Pieces the three tabs of the settings page share: a confirm dialog, the
// mapping of an API refusal onto the form's fields, a scrollable table box.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { describe, fieldProblems, PressroomError } from '../lib/api.ts';
import { CopyButton, FieldError, sayError } from '../lib/ui.tsx';

export type Problems = Record<string, string>;

/** The body field a problem names: `body.workspaceIds.0` -> `workspaceIds`. */
function fieldOf(name: string | undefined): string {
  return (name ?? '').replace(/^body\.?/, '').split(/[.[]/)[0];
}

/**
 * The refusal's problems by form field (the validation's details.fields, or the
 * single details.field some codes carry, e.g. INVALID_WEBHOOK_URL of
 * server/net/ssrf.ts). Whatever no field of the form can show goes to the
 * page's notice, so no refusal is silent.
 */
export function problemsFor(what: string, e: unknown, fields: readonly string[]): Problems {
  const out: Problems = {};
  let unplaced = !(e instanceof PressroomError);
  for (const p of fieldProblems(e)) {
    const f = fieldOf(p.field ?? p.path);
    if (fields.includes(f)) out[f] ??= p.message ?? p.reason ?? p.code ?? 'not valid';
    else unplaced = true;
  }
  if (e instanceof PressroomError && fieldProblems(e).length === 0) {
    const single = (e.details as { field?: unknown } | null)?.field;
    if (typeof single === 'string' && fields.includes(fieldOf(single))) out[fieldOf(single)] = `${e.message} (${e.code})`;
    else unplaced = true;
  }
  if (unplaced || Object.keys(out).length === 0) sayError(what, e);
  return out;
}

/** A labelled control with its hint and the API's problem under it. */
export function Field({ id, label, error, hint, children }: { id: string; label: string; error?: string; hint?: ComponentChildren; children: ComponentChildren }) {
  return (
    <div class="st-field">
      <label for={id}>{label}</label>
      {children}
      {hint && <p class="hint" id={`${id}-hint`}>{hint}</p>}
      <FieldError id={`${id}-err`} text={error} />
    </div>
  );
}

/** The aria props of a Field's control: its hint and problem as description, aria-invalid while refused. */
export function described(id: string, error: string | undefined, hint = false) {
  const by = [hint ? `${id}-hint` : '', error ? `${id}-err` : ''].filter(Boolean).join(' ');
  return { id, 'aria-describedby': by || undefined, 'aria-invalid': error ? (true as const) : undefined };
}

/**
 * A modal confirm (<dialog> with showModal: focus moves in and stays, Esc
 * cancels). The action's refusal is shown inside the dialog, which stays open.
 */
export function ConfirmDialog(props: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => Promise<void>;
  onClose: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const d = ref.current!;
    if (!d.open) d.showModal();
    return () => d.close();
  }, []);
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await props.onConfirm();
      props.onClose();
    } catch (e) {
      setError(describe(e));
      setBusy(false);
    }
  };
  return (
    <dialog ref={ref} class="st-dialog" aria-labelledby="st-dialog-h" onClose={() => props.onClose()}>
      <h2 id="st-dialog-h">{props.title}</h2>
      <div class="st-dialog-body">{props.children}</div>
      {error && <p class="field-error" role="alert">{error}</p>}
      <div class="row st-dialog-actions">
        <button type="button" autofocus disabled={busy} onClick={() => ref.current?.close()}>Cancel</button>
        <button type="button" class={props.danger ? 'danger' : 'primary'} disabled={busy} onClick={() => void confirm()}>
          {busy ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/** A table that scrolls sideways on a narrow screen (keyboard-scrollable: a focusable region). */
export function TableBox({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div class="st-table" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

/** A secret the API answers once: shown with a copy button and a warning, never stored. */
export function ShownOnce({ id, label, value, onDone, children }: { id: string; label: string; value: string; onDone: () => void; children?: ComponentChildren }) {
  const ref = useRef<HTMLDivElement>(null);
  // Focus moves to the box, so a screen reader reads the warning and the secret right away.
  useEffect(() => ref.current?.focus(), [value]);
  return (
    <div id={id} class="st-once" role="group" aria-labelledby={`${id}-h`} tabIndex={-1} ref={ref}>
      <h3 id={`${id}-h`}>{label}</h3>
      <p class="st-warn"><strong>Copy it now: it will not be shown again.</strong> {children}</p>
      <div class="row">
        <code class="secret" data-testid="secret">{value}</code>
        <CopyButton text={value} label="Copy" />
        <button type="button" onClick={onDone}>Done</button>
      </div>
    </div>
  );
}

