// The composer's preview (web/pages/compose.tsx): per selected channel a card
// roughly as the platform shows the post: account, text folded where the
// platform folds it (FOLD in web/lib/compose-model.ts), media grid, thread.
import { channelDraft, countChars, type Draft, effectiveCaption, firstChars, FOLD, type IntegrationDetail, type MediaRef, PLATFORM_NAMES } from '../lib/compose-model.ts';
import { Thumb } from './compose-media.tsx';

export interface PreviewChannel { id: string; platform: string; name: string; username: string | null; detail: IntegrationDetail | null }

function Text({ text, platform, max }: { text: string; platform: string; max: number | null }) {
  const fold = FOLD[platform];
  const n = countChars(text);
  const cut = max !== null && n > max ? max : fold && n > fold.at ? fold.at : null;
  return (
    <>
      <p class="pv-text">
        {cut === null ? text : firstChars(text, cut)}
        {cut !== null && <span class="pv-more">{fold && cut === fold.at ? fold.more : '…'}</span>}
      </p>
      {max !== null && n > max && <p class="pv-over">{`${n - max} characters over the limit of ${max}: the platform would not take it.`}</p>}
    </>
  );
}

function Grid({ media }: { media: MediaRef[] }) {
  if (!media.length) return null;
  const shown = media.slice(0, 4);
  return (
    <div class={`pv-media pv-media-${shown.length}`}>
      {shown.map((m, i) => (
        <span key={m.id} class="pv-cell">
          <Thumb media={m} />
          {i === 3 && media.length > 4 && <span class="pv-extra">{`+${media.length - 4}`}</span>}
        </span>
      ))}
    </div>
  );
}

export function Preview({ draft, channels, mediaOf }: { draft: Draft; channels: PreviewChannel[]; mediaOf: (id: string) => MediaRef[] }) {
  return (
    <section class="card section preview" aria-labelledby="preview-h" id="preview">
      <h2 id="preview-h">Preview</h2>
      {channels.length === 0 && <p class="hint">Choose a channel to see how the post will look.</p>}
      {channels.map((c) => {
        const platformName = c.detail?.platformName ?? PLATFORM_NAMES[c.platform] ?? c.platform;
        const max = c.detail?.rules.caption.maxLength ?? null;
        const thread = c.detail?.capabilities.threads ? channelDraft(draft, c.id).thread : [];
        return (
          <article key={c.id} class={`pv pv-${c.platform}`} aria-labelledby={`pv-${c.id}-h`} data-channel={c.id}>
            <header class="pv-head">
              <span class="pv-avatar" aria-hidden="true">{(c.name.trim()[0] ?? '?').toUpperCase()}</span>
              <span class="pv-who">
                <h3 id={`pv-${c.id}-h`}>{c.name}</h3>
                <span class="pv-handle">{c.username ? `@${c.username.replace(/^@/, '')}` : platformName}</span>
              </span>
              <span class="pv-platform">{platformName}</span>
            </header>
            <Text text={effectiveCaption(draft, c.id)} platform={c.platform} max={max} />
            <Grid media={mediaOf(c.id)} />
            {thread.length > 0 && (
              <ol class="pv-thread" aria-label={`Thread on ${platformName}`}>
                {thread.map((t, i) => <li key={i}><Text text={t} platform={c.platform} max={max} /></li>)}
              </ol>
            )}
          </article>
        );
      })}
    </section>
  );
}
