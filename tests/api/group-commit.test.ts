// The publish worker's group commit (server/jobs/publish.ts): items queued while
// flushes are in flight go together in the next statement, at most `parallel`
// statements run at once, and every item gets its own answer or its group's error.
import { describe, expect, it } from 'vitest';
import { GroupCommit, recordParallelism } from '../../server/jobs/publish.ts';

/** A flush whose calls are released by hand, recording what each carried. */
function gate() {
  const calls: { items: number[]; release: (fail?: boolean) => void }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const flush = (items: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      calls.push({
        items,
        release: (fail) => {
          inFlight--;
          if (fail) reject(new Error(`group ${items.join(',')} failed`));
          else resolve(items.map((i) => `done ${i}`));
        },
      });
    });
  return { flush, calls, maxInFlight: () => maxInFlight };
}
const tick = () => new Promise((r) => setImmediate(r));

describe('GroupCommit', () => {
  it('alone, an item waits only for its own statement; under load, queued items share the next one', async () => {
    const g = gate();
    const gc = new GroupCommit(g.flush, 500, 1);
    const first = gc.add(1);
    await tick();
    expect(g.calls.map((c) => c.items)).toEqual([[1]]);
    const queued = [gc.add(2), gc.add(3), gc.add(4)];
    await tick();
    expect(g.calls).toHaveLength(1); // one statement in flight at most
    g.calls[0].release();
    expect(await first).toBe('done 1');
    await tick();
    expect(g.calls.map((c) => c.items)).toEqual([[1], [2, 3, 4]]);
    g.calls[1].release();
    expect(await Promise.all(queued)).toEqual(['done 2', 'done 3', 'done 4']);
  });

  it('runs up to `parallel` statements side by side, and a failed one rejects only its own items', async () => {
    const g = gate();
    const gc = new GroupCommit(g.flush, 500, 2);
    const a = gc.add(1);
    await tick();
    const b = gc.add(2);
    await tick();
    const c = gc.add(3);
    await tick();
    expect(g.calls.map((x) => x.items)).toEqual([[1], [2]]);
    expect(g.maxInFlight()).toBe(2);
    g.calls[1].release(true);
    await expect(b).rejects.toThrow('group 2 failed');
    await tick();
    expect(g.calls.map((x) => x.items)).toEqual([[1], [2], [3]]);
    g.calls[0].release();
    g.calls[2].release();
    expect(await a).toBe('done 1');
    expect(await c).toBe('done 3');
    expect(g.maxInFlight()).toBe(2);
  });

  it('a statement carries at most `max` items', async () => {
    const g = gate();
    const gc = new GroupCommit(g.flush, 2, 1);
    const all = [1, 2, 3, 4, 5].map((i) => gc.add(i));
    await tick();
    expect(g.calls.map((x) => x.items)).toEqual([[1, 2]]);
    for (let k = 0; k < 3; k++) {
      g.calls[k].release();
      await tick();
      await tick();
    }
    expect(g.calls.map((x) => x.items)).toEqual([[1, 2], [3, 4], [5]]);
    expect(await Promise.all(all)).toEqual(['done 1', 'done 2', 'done 3', 'done 4', 'done 5']);
  });

  it('records in flight per worker: one fetch loop claims while the others record', () => {
    expect(recordParallelism({ PUBLISH_FETCH_LOOPS: 1 })).toBe(1);
    expect(recordParallelism({ PUBLISH_FETCH_LOOPS: 2 })).toBe(1);
    expect(recordParallelism({ PUBLISH_FETCH_LOOPS: 4 })).toBe(3);
  });
});
