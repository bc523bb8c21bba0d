// Undo steps run last-in first-out, once, whether the bench ends, fails or is interrupted.

export class Cleanup {
  private steps: { label: string; fn: () => Promise<void> | void }[] = [];
  private running: Promise<void> | null = null;

  /** Registers an undo step; returns a function that runs it now (and removes it). */
  add(label: string, fn: () => Promise<void> | void): () => Promise<void> {
    const step = { label, fn };
    this.steps.push(step);
    return async () => {
      const i = this.steps.indexOf(step);
      if (i < 0) return;
      this.steps.splice(i, 1);
      await step.fn();
    };
  }

  run(): Promise<void> {
    this.running ??= (async () => {
      while (this.steps.length) {
        const step = this.steps.pop()!;
        try {
          await step.fn();
        } catch (e) {
          process.stderr.write(`cleanup: ${step.label} failed: ${e instanceof Error ? e.message : String(e)}\n`);
        }
      }
    })();
    return this.running;
  }
}
