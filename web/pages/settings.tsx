// The settings page (/app/settings?tab=keys|members|webhooks): API keys,
// members and lifecycle webhooks of the current workspace, each a tab (the
// ARIA tabs pattern: arrow keys, Home and End move between them). Only the
// open tab is rendered, so a secret shown once is dropped when its tab is left.
import { useRef } from 'preact/hooks';
import { route, setQuery } from '../lib/router.ts';
import { workspace } from '../lib/api.ts';
import { notice } from '../lib/ui.tsx';
import { KeysTab } from './settings-keys.tsx';
import { MembersTab } from './settings-members.tsx';
import { WebhooksTab } from './settings-webhooks.tsx';
import './settings.css';

const TABS = [
  { id: 'keys', label: 'API keys' },
  { id: 'members', label: 'Members' },
  { id: 'webhooks', label: 'Webhooks' },
] as const;
type Tab = (typeof TABS)[number]['id'];

function currentTab(): Tab {
  const t = route.value.searchParams.get('tab');
  return TABS.find((x) => x.id === t)?.id ?? 'keys';
}

export function SettingsPage() {
  const tab = currentTab();
  const refs = useRef<Record<string, HTMLButtonElement | null>>({});
  const choose = (id: Tab, focus = false) => {
    if (id !== tab) {
      notice.value = null;
      setQuery({ tab: id });
    }
    if (focus) refs.current[id]?.focus();
  };
  const onKey = (ev: KeyboardEvent) => {
    const i = TABS.findIndex((t) => t.id === tab);
    const to = ev.key === 'ArrowRight' ? (i + 1) % TABS.length
      : ev.key === 'ArrowLeft' ? (i + TABS.length - 1) % TABS.length
      : ev.key === 'Home' ? 0
      : ev.key === 'End' ? TABS.length - 1
      : -1;
    if (to < 0) return;
    ev.preventDefault();
    choose(TABS[to].id, true);
  };
  return (
    <div class="settings">
      <h1>Settings <span class="st-ws">· {workspace.value?.name}</span></h1>
      <div role="tablist" aria-label="Settings" class="st-tabs" onKeyDown={onKey}>
        {TABS.map((t) => (
          <button
            key={t.id}
            ref={(el) => { refs.current[t.id] = el; }}
            type="button"
            role="tab"
            id={`tab-${t.id}`}
            aria-selected={tab === t.id}
            aria-controls={tab === t.id ? `panel-${t.id}` : undefined}
            tabIndex={tab === t.id ? 0 : -1}
            onClick={() => choose(t.id)}
          >
            {t.label}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} class="card st-panel" key={tab}>
        {tab === 'keys' ? <KeysTab /> : tab === 'members' ? <MembersTab /> : <WebhooksTab />}
      </div>
    </div>
  );
}
