// What a scenario is, and what run.ts gives it.
import type { Cleanup } from './cleanup.ts';
import type { Knobs } from './knobs.ts';
import type { Machine, ScenarioReport } from './report.ts';
import type { ClusterHandle } from './stack.ts';

export interface ScenarioContext {
  knobs: Knobs;
  /** Register undo steps here (cloned databases, child processes, pools). */
  cleanup: Cleanup;
  /** The cluster and its migrated template; clone it with cloneForBench(). */
  cluster: ClusterHandle;
  machine: Machine;
  /** Progress lines, on stderr. */
  log(msg: string): void;
}

export interface Scenario {
  name: string;
  description: string;
  run(ctx: ScenarioContext): Promise<ScenarioReport>;
}
