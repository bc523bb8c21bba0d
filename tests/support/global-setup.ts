import type { TestProject } from 'vitest/node';
import { ensureTemplate, startCluster } from './db.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    clusterUrl: string;
    template: string;
  }
}

// One cluster and one migrated template for the whole run.
export default async function setup(project: TestProject) {
  const cluster = await startCluster();
  const template = await ensureTemplate(cluster);
  project.provide('clusterUrl', cluster.url('postgres'));
  project.provide('template', template);
  return async () => {
    await cluster.stop();
  };
}
